"""Marker pass: the cancellation scopes around each Python call (DA201).

Hooks in the shared walk of py_marks.py, flake8-async style: the stack of enclosing
scopes is saved when entering a function and restored when leaving it, so nesting is
handled by construction. It writes:

- `CallFact.scopes`, outermost first: `with:<site id>` (a deadline scope: `async with
  asyncio.timeout(...)`, `anyio.fail_after`, trio scopes — the id of the scope call's
  context_deadline site), `shield` (`CancelScope(shield=True)`, the argument of
  `asyncio.shield(...)`), `finally`, `except:<types>` (the caught types as written,
  qualified through the module's imports; `*` for a bare `except:`);
- `CallFact.scopes` also holds `holder:<line>:<col>` for every other `with` item that is a
  call (the call that opens it, at that position): the body runs while that context
  manager holds whatever it holds (a lease: see analysis/leases.py);
- `FunctionFact.markers`: `{"m": "yields"}` for a generator (a `@contextmanager` body),
  `{"m": "decorated", "line", "col"}` for each decorator that is a call (its position);
- `FunctionFact.markers`: `{"m": "level_triggered", "why": "imports anyio"}` for every
  function of a module importing trio/anyio, and `{"m": "level_triggered", "why":
  "StreamingResponse body"}` for a generator handed to a streaming response; when that
  generator comes from another module, `{"m": "streams_body_of", "sym"}` on the function
  that hands it over (the check marks the generator).

Knowledge (which calls are scopes, shields, streaming responses) is catalog data
(`rules/catalog/terminal_writes.toml`, `[python]`).
"""

from __future__ import annotations

import ast
from fnmatch import fnmatchcase

from deadline_audit.catalog import Catalog
from deadline_audit.extract.py_marks import MarkContext, Walker, run_marker_passes
from deadline_audit.facts import FileFacts


def run(tree: ast.Module, facts: FileFacts, catalog: Catalog) -> None:
    run_marker_passes(tree, facts, catalog, ("py_marks_scopes",))


def register(ctx: MarkContext, walker: Walker):
    facts = ctx.facts
    if not facts.calls and not facts.functions:
        return None
    data = ctx.catalog.file("terminal_writes")
    _Scopes(ctx, data.get("python", {}), data.get("sql", {}).get("columns", ())).register(walker)
    return None


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_WITHS = (ast.With, ast.AsyncWith)
_TRIES = (ast.Try, ast.TryStar)


class _Scopes:
    def __init__(self, ctx: MarkContext, knowledge: dict, columns=()) -> None:
        self.facts = ctx.facts
        self.k = knowledge
        self.aliases = ctx.imports
        self.scopes: list[str] = []
        self.function: str | None = None  # symbol of the enclosing FunctionFact
        self.calls = ctx.calls_at
        self.functions = {fn.span.line: fn for fn in ctx.facts.functions}
        self.deadline_sites = ctx.deadline_sites
        self.level_why: str | None = None
        self.saved: list[tuple[list[str], str | None]] = []
        self.current: list = []  # the FunctionFact of each open function (None: unknown)
        self.pushed: list[int] = []  # per open `with`: scopes its items pushed
        self.shields: list[bool] = []  # per open call: is it `asyncio.shield(...)`
        self.patterns = {key: tuple(knowledge.get(key, ())) for key in (
            "deadline_scopes", "shield_scopes", "shield_calls", "streaming_responses")}
        self.matched: dict[tuple[str, str], bool] = {}
        self.columns = set(columns)

    def register(self, walker: Walker) -> None:
        roots = {v.split(".")[0] for v in self.aliases.values()}
        level = [m for m in self.k.get("level_triggered_modules", ()) if m in roots]
        if level:
            self.level_why = f"imports {level[0]}"
            for fn in self.facts.functions:
                fn.markers.append({"m": "level_triggered", "why": self.level_why})
        walker.enter(_FUNCTIONS, self.enter_function)
        walker.leave(_FUNCTIONS, self.leave_function)
        walker.enter(_WITHS, self.enter_with)
        walker.leave(ast.withitem, self.leave_withitem)
        walker.leave(_WITHS, self.leave_with)
        walker.after_field(_TRIES, "orelse", self.enter_finally)
        walker.leave(_TRIES, self.leave_try)
        walker.enter(ast.ExceptHandler, self.enter_handler)
        walker.leave(ast.ExceptHandler, self.leave_handler)
        walker.enter((ast.Yield, ast.YieldFrom), self.enter_yield)
        walker.enter((ast.Assign, ast.AnnAssign), self.enter_assign)
        walker.enter(ast.Call, self.enter_call)
        walker.after_field(ast.Call, "func", self.after_callee)
        walker.leave(ast.Call, self.leave_call)

    # -- functions: scopes do not cross a function boundary -------------------------------
    def enter_function(self, node: ast.AST) -> None:
        self.saved.append((self.scopes, self.function))
        fact = self.functions.get(getattr(node, "lineno", 0))
        self.scopes, self.function = [], fact.sym if fact else self.function
        self.current.append(fact)
        if fact is not None:
            for deco in getattr(node, "decorator_list", ()):
                if deco.__class__ is ast.Call:
                    fact.markers.append({"m": "decorated", "line": deco.lineno, "col": deco.col_offset + 1})

    def enter_yield(self, node: ast.AST) -> None:
        fact = self.current[-1] if self.current else None
        if fact is not None and not any(m.get("m") == "yields" for m in fact.markers):
            fact.markers.append({"m": "yields"})

    def leave_function(self, node: ast.AST) -> None:
        self.scopes, self.function = self.saved.pop()
        self.current.pop()

    # -- with / async with: the scope's own call runs outside it ----------------------------
    def enter_with(self, node: ast.AST) -> None:
        self.pushed.append(0)

    def leave_withitem(self, item: ast.withitem) -> None:
        expr = item.context_expr
        if expr.__class__ is not ast.Call:
            return
        name = self.qualified(expr.func)
        if not name or not (self._matches(name, "deadline_scopes") or self._shielded(expr, name)):
            self.scopes.append(f"holder:{expr.lineno}:{expr.col_offset + 1}")
            self.pushed[-1] += 1
        if not name:
            return
        if self._shielded(expr, name):
            self.scopes.append("shield")
            self.pushed[-1] += 1
        if self._matches(name, "deadline_scopes"):
            self.scopes.append(f"with:{self._site_of(expr)}")
            self.pushed[-1] += 1

    def leave_with(self, node: ast.AST) -> None:
        pushed = self.pushed.pop()
        if pushed:
            del self.scopes[len(self.scopes) - pushed:]

    def _shielded(self, call: ast.Call, name: str) -> bool:
        if not self._matches(name, "shield_scopes"):
            return False
        return any(k.arg == "shield" and isinstance(k.value, ast.Constant) and k.value.value is True
                   for k in call.keywords)

    def _site_of(self, call: ast.Call) -> str:
        end = call.end_lineno or call.lineno
        for site in self.deadline_sites:
            line, col = site.span.line, site.span.column
            if call.lineno <= line <= end and (line > call.lineno or col >= call.col_offset + 1):
                return site.id
        return f"deadline@{call.lineno}:{call.col_offset + 1}"

    # -- try / except / finally ------------------------------------------------------------
    def enter_handler(self, handler: ast.ExceptHandler) -> None:
        self.scopes.append("except:" + ",".join(self._caught(handler.type)))

    def leave_handler(self, handler: ast.ExceptHandler) -> None:
        self.scopes.pop()

    def enter_finally(self, node: ast.Try) -> None:
        if node.finalbody:
            self.scopes.append("finally")

    def leave_try(self, node: ast.Try) -> None:
        if node.finalbody:
            self.scopes.pop()

    def _caught(self, expr: ast.expr | None) -> list[str]:
        if expr is None:
            return ["*"]
        if isinstance(expr, ast.Tuple):
            return [t for e in expr.elts for t in self._caught(e)]
        if isinstance(expr, ast.Call):
            expr = expr.func
        return [self.qualified(expr) or "?"]

    # -- state written by attribute, persisted by a later call (TerminalWrites) ------------
    def enter_assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        fact = self.current[-1] if self.current else None
        if fact is None:
            return
        targets = node.targets if node.__class__ is ast.Assign else [node.target]
        for target in targets:
            if target.__class__ is ast.Attribute and target.attr.lower() in self.columns:
                value = node.value
                literal = value.value if value.__class__ is ast.Constant and isinstance(value.value, str) else None
                fact.markers.append({"m": "state_set", "attr": target.attr, "value": literal,
                                     "line": node.lineno, "col": node.col_offset + 1})

    # -- calls ------------------------------------------------------------------------------
    def enter_call(self, node: ast.Call) -> None:
        hits = self.calls.get((node.lineno, node.col_offset + 1))
        if hits:
            # calls of one chain start at the same place (`Job.objects.filter(…).aupdate(…)`):
            # the one that also ends where this node ends
            fact = hits[0] if len(hits) == 1 else next(
                (c for c in hits if (c.span.end_line, c.span.end_column) == (node.end_lineno, node.end_col_offset + 1)),
                next((c for c in hits if c.span.end_line == node.end_lineno), hits[0]))
            fact.scopes = list(self.scopes)
        name = self.qualified(node.func)
        shield = False
        if name:
            if self._matches(name, "shield_calls"):
                shield = True
            elif self._matches(name.rsplit(".", 1)[-1], "streaming_responses"):
                self._mark_streaming_body(node)
        self.shields.append(shield)

    def after_callee(self, node: ast.Call) -> None:
        if self.shields[-1]:
            self.scopes.append("shield")

    def leave_call(self, node: ast.Call) -> None:
        if self.shields.pop():
            self.scopes.pop()

    def _mark_streaming_body(self, node: ast.Call) -> None:
        body = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "content"), None)
        if not isinstance(body, ast.Call):
            return
        name = body.func.id if isinstance(body.func, ast.Name) else getattr(body.func, "attr", None)
        if not name:
            return
        candidates = [fn for fn in self.facts.functions if fn.sym.rsplit(".", 1)[-1] == name]
        local = [fn for fn in candidates if fn.enclosing == self.function]
        imported = self.qualified(body.func) if not candidates else None
        if imported and "." in imported:  # a generator of another module: the graph finds it
            endpoint = next((fn for fn in self.facts.functions if fn.sym == self.function), None)
            if endpoint is not None:
                endpoint.markers.append({"m": "streams_body_of", "sym": "sym:py:" + imported})
        for fn in (local or candidates)[:1]:
            if not any(m.get("m") == "level_triggered" for m in fn.markers):
                fn.markers.append({"m": "level_triggered", "why": "StreamingResponse body"})

    # -- names ------------------------------------------------------------------------------
    def qualified(self, expr: ast.expr) -> str | None:
        parts: list[str] = []
        while expr.__class__ is ast.Attribute:
            parts.append(expr.attr)
            expr = expr.value
        if expr.__class__ is not ast.Name:
            return None
        parts.append(self.aliases.get(expr.id, expr.id))
        return ".".join(reversed(parts))

    def _matches(self, name: str, key: str) -> bool:
        hit = self.matched.get((name, key))
        if hit is None:
            hit = any(name == p or fnmatchcase(name, p) for p in self.patterns[key])
            self.matched[(name, key)] = hit
        return hit
