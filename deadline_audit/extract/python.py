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

import ast
import io
import sys
import tokenize
from contextlib import contextmanager
from typing import Iterator

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from deadline_audit.catalog import Catalog
from deadline_audit.collector import collector_paused
from deadline_audit.extract.py_index import PyIndex, index_for
from deadline_audit.extract.py_fastnodes import plain_node_construction
from deadline_audit.extract.py_marks import run_marker_passes
from deadline_audit.extract.py_stubs import strip_stubs
from deadline_audit.extract.py_positions import AstPositions, LibcstPositions, Misaligned
from deadline_audit.extract.py_walker import Extractor
from deadline_audit.facts import FileFacts, InputProblem

RECURSION_LIMIT = 10_000


def may_contribute(source: bytes, catalog: Catalog) -> bool:
    """Byte-level prefilter: can this file hold a timeout, deadline, lease or env read?"""
    return index_for(catalog).may_contribute(source)


def count_lines(source: bytes) -> int:
    if not source:
        return 0
    return source.count(b"\n") + (0 if source.endswith(b"\n") else 1)


def extract_python(path: str, source: bytes, module: str, catalog: Catalog) -> FileFacts:
    facts = FileFacts(path=path, kind="python", lines=count_lines(source), module=module)
    idx = index_for(catalog)
    if not idx.may_contribute(source):
        return facts
    is_package = path.replace("\\", "/").rsplit("/", 1)[-1] == "__init__.py"
    with collector_paused():
        # the trees die with `_parse_and_extract`'s frame, before the collector is back on:
        # re-enabled over a live tree, its first pass would scan every node of it
        return _parse_and_extract(path, source, module, is_package, idx, facts)


def _parse_and_extract(path: str, source: bytes, module: str, is_package: bool, idx: PyIndex,
                       facts: FileFacts) -> FileFacts:
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(source).readline)[0]
        text = source.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        facts.problems.append(InputProblem(f"cannot decode: {exc}"))
        return facts
    # The stdlib parse comes first: it is cheap, gives positions, and refuses
    # pathological nesting that crashes or stalls libcst's native parser.
    positions: AstPositions | None = None
    libcst_input: str | bytes = source
    try:
        stdlib_tree = ast.parse(text)
        stripped = strip_stubs(stdlib_tree, text, idx.stub_decorators)
        if stripped is not None:  # same lines and columns, without the typing-only stubs
            text = libcst_input = stripped
        positions = AstPositions(text, stdlib_tree)
    except SyntaxError as exc:
        if "too many nested" in str(exc.msg) or "too complex" in str(exc.msg):
            facts.problems.append(InputProblem(f"syntax error: {exc.msg}", exc.lineno, exc.offset))
            return facts
    except (RecursionError, MemoryError):
        facts.problems.append(InputProblem("file too deeply nested to parse"))
        return facts
    # (at the default recursion limit, so that nesting which would crash libcst's
    # native parser is refused here first)
    with _recursion_limit(RECURSION_LIMIT):
        try:
            with plain_node_construction():
                tree = cst.parse_module(libcst_input)
        except cst.ParserSyntaxError as exc:
            facts.problems.append(InputProblem(f"syntax error: {exc.message}", exc.raw_line, exc.raw_column + 1))
            return facts
        except RecursionError:
            facts.problems.append(InputProblem("file too deeply nested to parse"))
            return facts
        try:
            return _extract(path, module, is_package, idx, tree, positions, facts)
        except RecursionError:
            fresh = FileFacts(path=path, kind="python", lines=facts.lines, module=module)
            fresh.problems.append(InputProblem("file too deeply nested to analyse"))
            return fresh


def _extract(path: str, module: str, is_package: bool, idx: PyIndex, tree: cst.Module,
             positions: AstPositions | None, facts: FileFacts) -> FileFacts:
    if positions is not None:
        try:
            extractor = Extractor(path, module, is_package, idx, positions, facts)
            extractor.run(tree)
            positions.finish()
            run_marker_passes(positions.tree, facts, idx.catalog)
            return facts
        except Misaligned:
            pass
    # the two parsers disagree (syntax newer than this interpreter's ast, or an ordering
    # case we missed): libcst positions are slow but always right
    facts = FileFacts(path=facts.path, kind="python", lines=facts.lines, module=module)
    wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
    extractor = Extractor(path, module, is_package, idx, LibcstPositions(wrapper.resolve(PositionProvider)), facts)
    extractor.run(tree)
    if positions is not None:  # the stdlib tree exists, only the pairing failed
        run_marker_passes(positions.tree, facts, idx.catalog)
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
