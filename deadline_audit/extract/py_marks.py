"""Marker passes over the stdlib `ast` of a Python file (already parsed for positions).

The libcst walk extracts values and flows; rule families that need structure (which
calls sit inside a loop, a `finally`, a deadline scope, a shielded scope; which functions
stream) add it here, each pass in its own module, without paying for another libcst walk.
A pass is `run(tree: ast.Module, facts: FileFacts, catalog: Catalog) -> None` and only
adds to `FunctionFact.markers`, `CallFact.scopes` / `CallFact.extra` and `SiteFact.extra`.
"""

from __future__ import annotations

import ast
from importlib import import_module

from deadline_audit.catalog import Catalog
from deadline_audit.facts import FileFacts

PASSES: tuple[str, ...] = ("py_marks_scopes", "py_marks_streams", "py_marks_renewal")  # module names under deadline_audit.extract


def run_marker_passes(tree: ast.Module, facts: FileFacts, catalog: Catalog) -> None:
    for name in PASSES:
        import_module(f"deadline_audit.extract.{name}").run(tree, facts, catalog)
