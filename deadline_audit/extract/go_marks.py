"""Marker passes over the tree-sitter tree of a Go file (already parsed by the extractor).

The main walk extracts values and flows; rule families that need structure (handlers,
streaming, loops, goroutines, joins, context derivations) add it here, each pass in its
own module, preferably with tree-sitter Queries (matching runs in C). A pass is
`run(tree: tree_sitter.Tree, source: bytes, facts: FileFacts, catalog: Catalog) -> None`
and only adds to `FunctionFact.markers`, `CallFact.scopes` / `CallFact.extra` and
`SiteFact.extra` (match facts to nodes by their spans; see `facts.py`).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from deadline_audit.catalog import Catalog
from deadline_audit.facts import FileFacts

PASSES: tuple[str, ...] = ("go_marks_http", "go_marks_renewal", "go_marks_ctx", "go_marks_outcomes",
                           "go_marks_wire")  # module names under deadline_audit.extract


def run_marker_passes(tree: Any, source: bytes, facts: FileFacts, catalog: Catalog) -> None:
    for name in PASSES:
        import_module(f"deadline_audit.extract.{name}").run(tree, source, facts, catalog)
