"""Marker passes over the stdlib `ast` of a Python file (already parsed for positions).

The libcst walk extracts values and flows; rule families that need structure (which
calls sit inside a loop, a `finally`, a deadline scope, a shielded scope; which functions
stream) add it here, each pass in its own module, without paying for another libcst walk.

All passes share ONE walk of the tree (flake8-async style): a pass module has
`register(ctx: MarkContext, walker: Walker) -> Callable[[], None] | None`; it looks at the
file's facts (indexed once in `MarkContext`), decides whether it has anything to do, and
if so registers enter/leave hooks for the node types it handles (keeping its own
save/restore state) and returns a `finish` callback run after the walk, in `PASSES` order.
A pass only adds to `FunctionFact.markers`, `CallFact.scopes` / `CallFact.extra` and
`SiteFact.extra`. The walk visits each node once, in field order (pre-order for enter hooks,
post-order for leave hooks), and never descends into leaf fields (`ctx`, operators, names).
"""

from __future__ import annotations

import ast
from importlib import import_module
from typing import Any, Callable

from deadline_audit.catalog import Catalog
from deadline_audit.extract.py_positions import LEAF_FIELDS
from deadline_audit.facts import CallFact, FileFacts

PASSES: tuple[str, ...] = ("py_marks_scopes", "py_marks_streams", "py_marks_renewal",
                           "py_marks_outcomes", "py_marks_wire")  # module names under deadline_audit.extract


def run_marker_passes(tree: ast.Module, facts: FileFacts, catalog: Catalog,
                      passes: tuple[str, ...] = PASSES) -> None:
    ctx = MarkContext(tree, facts, catalog)
    walker = Walker()
    finishers = []
    for name in passes:
        finish = import_module(f"deadline_audit.extract.{name}").register(ctx, walker)
        if finish is not None:
            finishers.append(finish)
    if walker.hooked:
        walker.walk(tree)
    for finish in finishers:
        finish()


class MarkContext:
    """The file's facts, indexed once for all passes (each index built on first use)."""

    def __init__(self, tree: ast.Module, facts: FileFacts, catalog: Catalog) -> None:
        self.tree = tree
        self.facts = facts
        self.catalog = catalog
        self._imports: dict[str, str] | None = None
        self._calls_at: dict[tuple[int, int], list[CallFact]] | None = None
        self._deadline_sites: list | None = None

    @property
    def imports(self) -> dict[str, str]:
        """Local name → qualified module or name, from the module's imports at any depth;
        a name imported twice keeps the import `ast.walk` (breadth-first) meets last."""
        if self._imports is None:
            found: list[tuple[int, ast.AST]] = []
            _collect_imports(self.tree, 0, found)
            found.sort(key=_depth)  # stable: pre-order within a depth = breadth-first order
            aliases: dict[str, str] = {}
            for _, node in found:
                if node.__class__ is ast.Import:
                    for a in node.names:
                        aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                elif node.module and not node.level:
                    for a in node.names:
                        aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            self._imports = aliases
        return self._imports

    @property
    def calls_at(self) -> dict[tuple[int, int], list[CallFact]]:
        if self._calls_at is None:
            calls: dict[tuple[int, int], list[CallFact]] = {}
            for call in self.facts.calls:
                calls.setdefault((call.span.line, call.span.column), []).append(call)
            self._calls_at = calls
        return self._calls_at

    @property
    def deadline_sites(self) -> list:
        if self._deadline_sites is None:
            self._deadline_sites = [s for s in self.facts.sites if s.role == "context_deadline"]
        return self._deadline_sites


def _depth(item: tuple[int, Any]) -> int:
    return item[0]


_BLOCK_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")  # in `_fields` order
_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


def _collect_imports(node: ast.AST, depth: int, out: list[tuple[int, ast.AST]]) -> None:
    """Imports are statements: only statement blocks are walked, in field (pre-)order."""
    for field in _BLOCK_FIELDS:
        block = getattr(node, field, None)
        if block.__class__ is not list:
            continue
        for child in block:
            cls = child.__class__
            if cls is ast.Import or cls is ast.ImportFrom:
                out.append((depth + 1, child))
            elif cls in _COMPOUND or isinstance(child, (ast.excepthandler, ast.match_case)):
                _collect_imports(child, depth + 1, out)


_COMPOUND = frozenset(cls for cls in vars(ast).values() if isinstance(cls, type) and issubclass(cls, ast.stmt)
                      and any(f in _BLOCK_FIELDS for f in cls._fields))


Hook = Callable[[Any], None]


class Walker:
    """One pre-order walk of an `ast` tree dispatching to the hooks the passes registered.

    `enter(types, hook)`: hook(node) before the node's children (`walker.depth` is the
    node's depth, the module being 0); `leave(types, hook)`: after them;
    `after_field(type, field, hook)`: after the children in that field, before the next.
    """

    def __init__(self) -> None:
        self._enter: dict[type, list[Hook]] = {}
        self._leave: dict[type, list[Hook]] = {}
        self._after: dict[tuple[type, str], list[Hook]] = {}
        self._plans: dict[type, tuple] = {}
        self.depth = 0
        self.hooked = False

    def enter(self, types: type | tuple[type, ...], hook: Hook) -> None:
        for cls in types if isinstance(types, tuple) else (types,):
            self._enter.setdefault(cls, []).append(hook)
        self.hooked = True

    def leave(self, types: type | tuple[type, ...], hook: Hook) -> None:
        for cls in types if isinstance(types, tuple) else (types,):
            self._leave.setdefault(cls, []).append(hook)
        self.hooked = True

    def after_field(self, types: type | tuple[type, ...], field: str, hook: Hook) -> None:
        for cls in types if isinstance(types, tuple) else (types,):
            self._after.setdefault((cls, field), []).append(hook)
        self.hooked = True

    def walk(self, tree: ast.AST) -> None:
        self._plans.clear()
        # leaves no pass hooks are never visited (names, constants, and non-node values)
        self._inert = {cls for cls in (ast.Name, ast.Constant, type(None), str, int)
                       if cls not in self._enter and cls not in self._leave}
        self._visit(tree, 0)

    def _plan(self, cls: type) -> tuple:
        if not (isinstance(cls, type) and issubclass(cls, ast.AST)):
            plan: tuple = ((), (), ())
        else:
            fields = tuple((f, tuple(self._after.get((cls, f), ()))) for f in cls._fields
                           if f not in LEAF_FIELDS and not (f == "value" and cls in (ast.Constant, ast.MatchSingleton)))
            plan = (tuple(self._enter.get(cls, ())), fields, tuple(self._leave.get(cls, ())))
        self._plans[cls] = plan
        return plan

    def _visit(self, node: ast.AST, depth: int) -> None:
        plan = self._plans.get(node.__class__)
        if plan is None:
            plan = self._plan(node.__class__)
        enter, fields, leave = plan
        if enter:
            self.depth = depth
            for hook in enter:
                hook(node)
        depth += 1
        visit = self._visit
        inert = self._inert
        for name, after in fields:
            value = getattr(node, name)
            if value.__class__ is list:
                for child in value:
                    if child.__class__ not in inert:
                        visit(child, depth)
            elif value.__class__ not in inert:
                visit(value, depth)
            for hook in after:
                hook(node)
        for hook in leave:
            hook(node)
