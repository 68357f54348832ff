"""Python extractor: one `.py` file -> `FileFacts` (kind "python").

Pure: no filesystem, no environment, never imports or runs the analysed code.

Cost model (SPEC §8, LIBRARIES.md): a byte regex built from the catalog decides whether a
file can contribute at all (`may_contribute`); a file that passes is parsed once by libcst
and walked once, in source order, by `Extractor` (py_walker.py + py_exprs.py), which
resolves names through its own import/scope tables (no `QualifiedNameProvider`). Positions
come from the stdlib `ast` of the same text (py_positions.py), matched to libcst nodes by
their order; libcst's `PositionProvider` is the fallback when the two trees disagree.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from deadline_audit.catalog import Catalog
from deadline_audit.extract.py_index import PyIndex, index_for
from deadline_audit.extract.py_positions import AstPositions, LibcstPositions, Misaligned
from deadline_audit.extract.py_walker import Extractor
from deadline_audit.facts import FileFacts, InputProblem

RECURSION_LIMIT = 10_000


def may_contribute(source: bytes, catalog: Catalog) -> bool:
    """Byte-level prefilter: can this file hold a timeout, deadline, lease or env read?"""
    return index_for(catalog).prefilter.search(source) is not None


def count_lines(source: bytes) -> int:
    if not source:
        return 0
    return source.count(b"\n") + (0 if source.endswith(b"\n") else 1)


def extract_python(path: str, source: bytes, module: str, catalog: Catalog) -> FileFacts:
    facts = FileFacts(path=path, kind="python", lines=count_lines(source), module=module)
    idx = index_for(catalog)
    if not idx.prefilter.search(source):
        return facts
    is_package = path.replace("\\", "/").rsplit("/", 1)[-1] == "__init__.py"
    with _recursion_limit(RECURSION_LIMIT):
        try:
            tree = cst.parse_module(source)
        except cst.ParserSyntaxError as exc:
            facts.problems.append(InputProblem(f"syntax error: {exc.message}", exc.raw_line, exc.raw_column + 1))
            return facts
        except RecursionError:
            facts.problems.append(InputProblem("file too deeply nested to parse"))
            return facts
        except (UnicodeDecodeError, LookupError, ValueError) as exc:
            facts.problems.append(InputProblem(f"cannot decode: {exc}"))
            return facts
        try:
            return _extract(path, module, is_package, idx, tree, source, facts)
        except RecursionError:
            fresh = FileFacts(path=path, kind="python", lines=facts.lines, module=module)
            fresh.problems.append(InputProblem("file too deeply nested to analyse"))
            return fresh


def _extract(path: str, module: str, is_package: bool, idx: PyIndex, tree: cst.Module, source: bytes,
             facts: FileFacts) -> FileFacts:
    try:
        text = source.decode(tree.encoding, "replace")
        positions = AstPositions(text)
        extractor = Extractor(path, module, is_package, idx, positions, facts)
        extractor.run(tree)
        positions.finish()
        return facts
    except (SyntaxError, ValueError, Misaligned, MemoryError):
        pass
    # the two parsers disagree (new syntax ast cannot read, or an ordering case we missed):
    # libcst positions are slow but always right
    facts = FileFacts(path=facts.path, kind="python", lines=facts.lines, module=module)
    wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
    extractor = Extractor(path, module, is_package, idx, LibcstPositions(wrapper.resolve(PositionProvider)), facts)
    extractor.run(tree)
    return facts


@contextmanager
def _recursion_limit(limit: int) -> Iterator[None]:
    old = sys.getrecursionlimit()
    if old < limit:
        sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        if old < limit:
            sys.setrecursionlimit(old)
