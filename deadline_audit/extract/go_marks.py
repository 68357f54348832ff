"""Marker passes over the tree-sitter tree of a Go file (already parsed by the extractor).

The main walk extracts values and flows; rule families that need structure (handlers,
streaming, loops, goroutines, joins, context derivations) add it here, each pass in its
own module, preferably with tree-sitter Queries (matching runs in C). A pass is
`run(tree: MarkTree, source: bytes, facts: FileFacts, catalog: Catalog) -> None`
and only adds to `FunctionFact.markers`, `CallFact.scopes` / `CallFact.extra` and
`SiteFact.extra` (match facts to nodes by their spans; see `facts.py`).

A pass that queries declares its patterns as groups, `queries(catalog) -> {group: text}`
(group names start with the module's own name), and reads `tree.matches(group)`: all
groups run in one QueryCursor pass per file (go_query.py). `tree.context()` is the
file's GoMarkContext, built once for all passes.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from deadline_audit.catalog import Catalog
from deadline_audit.extract.go_marks_common import GoMarkContext
from deadline_audit.extract.go_query import FileMatches, SharedQuery
from deadline_audit.extract.go_text import Positions
from deadline_audit.facts import FileFacts

PASSES: tuple[str, ...] = ("go_marks_http", "go_marks_renewal", "go_marks_ctx", "go_marks_outcomes",
                           "go_marks_wire")  # module names under deadline_audit.extract


_LOADED: list[Any] = []


def _modules() -> list[Any]:
    if not _LOADED:
        _LOADED.extend(import_module(f"deadline_audit.extract.{name}") for name in PASSES)
    return _LOADED


_SHARED: dict[int, tuple[Catalog, dict[str, str], SharedQuery]] = {}


def shared_query(catalog: Catalog, extra: dict[str, str]) -> SharedQuery:
    """The union of every pass's query groups and the extractor's own (`extra`), compiled
    once per catalog (pass patterns may name catalog methods)."""
    hit = _SHARED.get(id(catalog))
    if hit is not None and hit[0] is catalog and hit[1] == extra:
        return hit[2]
    shared = SharedQuery(query_groups(catalog, extra))
    if len(_SHARED) > 8:
        _SHARED.clear()
    _SHARED[id(catalog)] = (catalog, dict(extra), shared)
    return shared


def query_groups(catalog: Catalog, extra: dict[str, str]) -> dict[str, str]:
    """Every pass's query groups, after the extractor's own (`extra`)."""
    groups: dict[str, str] = dict(extra)
    for module in _modules():
        queries = getattr(module, "queries", None)
        if queries is not None:
            groups.update(queries(catalog))
    return groups


class MarkTree:
    """What every pass gets of the parsed file: `root_node` as on a tree-sitter Tree, the
    shared query matches, and the shared GoMarkContext."""

    __slots__ = ("root_node", "_matches", "_source", "_facts", "_pos", "_ctx")

    def __init__(self, root: Any, matches: FileMatches, source: bytes, facts: FileFacts, pos: Positions) -> None:
        self.root_node = root
        self._pos = pos
        self._matches = matches
        self._source = source
        self._facts = facts
        self._ctx: GoMarkContext | None = None

    def matches(self, group: str) -> list[dict[str, list[Any]]]:
        return self._matches.get(group)

    def context(self) -> GoMarkContext:
        """Built on the first pass that needs it; passes add markers only, never the
        functions, calls or declarations it indexes."""
        if self._ctx is None:
            self._ctx = GoMarkContext(self.root_node, self._source, self._facts, self._pos)
        return self._ctx


def run_marker_passes(tree: MarkTree, source: bytes, facts: FileFacts, catalog: Catalog) -> None:
    for module in _modules():
        module.run(tree, source, facts, catalog)
