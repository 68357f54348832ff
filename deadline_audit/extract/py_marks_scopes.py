"""Marker pass: the cancellation scopes around each Python call (DA201).

One visitor over the stdlib `ast`, flake8-async style: the stack of enclosing scopes is
saved when entering a function and restored when leaving it, so nesting is handled by
construction. It writes:

- `CallFact.scopes`, outermost first: `with:<site id>` (a deadline scope: `async with
  asyncio.timeout(...)`, `anyio.fail_after`, trio scopes — the id of the scope call's
  context_deadline site), `shield` (`CancelScope(shield=True)`, the argument of
  `asyncio.shield(...)`), `finally`, `except:<types>` (the caught types as written,
  qualified through the module's imports; `*` for a bare `except:`);
- `FunctionFact.markers`: `{"m": "level_triggered", "why": "imports anyio"}` for every
  function of a module importing trio/anyio, and `{"m": "level_triggered", "why":
  "StreamingResponse body"}` for a generator handed to a streaming response.

Knowledge (which calls are scopes, shields, streaming responses) is catalog data
(`rules/catalog/terminal_writes.toml`, `[python]`).
"""

from __future__ import annotations

import ast
from fnmatch import fnmatchcase

from deadline_audit.catalog import Catalog
from deadline_audit.facts import CallFact, FileFacts


def run(tree: ast.Module, facts: FileFacts, catalog: Catalog) -> None:
    if not facts.calls and not facts.functions:
        return
    _ScopeVisitor(facts, catalog.file("terminal_writes").get("python", {})).visit(tree)


class _ScopeVisitor(ast.NodeVisitor):
    def __init__(self, facts: FileFacts, knowledge: dict) -> None:
        self.facts = facts
        self.k = knowledge
        self.aliases: dict[str, str] = {}
        self.scopes: list[str] = []
        self.function: str | None = None  # symbol of the enclosing FunctionFact
        self.calls: dict[tuple[int, int], list[CallFact]] = {}
        for call in facts.calls:
            self.calls.setdefault((call.span.line, call.span.column), []).append(call)
        self.functions = {fn.span.line: fn for fn in facts.functions}
        self.deadline_sites = [s for s in facts.sites if s.role == "context_deadline"]
        self.level_why: str | None = None

    # -- module ---------------------------------------------------------------------
    def visit_Module(self, node: ast.Module) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Import):
                for a in sub.names:
                    self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(sub, ast.ImportFrom) and sub.module and not sub.level:
                for a in sub.names:
                    self.aliases[a.asname or a.name] = f"{sub.module}.{a.name}"
        roots = {v.split(".")[0] for v in self.aliases.values()}
        level = [m for m in self.k.get("level_triggered_modules", ()) if m in roots]
        if level:
            self.level_why = f"imports {level[0]}"
            for fn in self.facts.functions:
                fn.markers.append({"m": "level_triggered", "why": self.level_why})
        self.generic_visit(node)

    # -- functions: scopes do not cross a function boundary -------------------------------
    def _function(self, node: ast.AST) -> None:
        saved, saved_fn = self.scopes, self.function
        fact = self.functions.get(getattr(node, "lineno", 0))
        self.scopes, self.function = [], fact.sym if fact else self.function
        self.generic_visit(node)
        self.scopes, self.function = saved, saved_fn

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    # -- with / async with ------------------------------------------------------------------
    def _with(self, node: ast.With | ast.AsyncWith) -> None:
        pushed = 0
        for item in node.items:
            self.visit(item)  # the scope's own call runs outside it
            expr = item.context_expr
            if not isinstance(expr, ast.Call):
                continue
            name = self.qualified(expr.func)
            if name and self._shielded(expr, name):
                self.scopes.append("shield")
                pushed += 1
            if name and self._matches(name, "deadline_scopes"):
                self.scopes.append(f"with:{self._site_of(expr)}")
                pushed += 1
        for stmt in node.body:
            self.visit(stmt)
        del self.scopes[len(self.scopes) - pushed:]

    visit_With = visit_AsyncWith = _with

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
    def _try(self, node: ast.Try) -> None:
        for stmt in node.body + node.orelse:
            self.visit(stmt)
        for handler in node.handlers:
            self.scopes.append("except:" + ",".join(self._caught(handler.type)))
            self.visit(handler)
            self.scopes.pop()
        if node.finalbody:
            self.scopes.append("finally")
            for stmt in node.finalbody:
                self.visit(stmt)
            self.scopes.pop()

    visit_Try = _try
    visit_TryStar = _try

    def _caught(self, expr: ast.expr | None) -> list[str]:
        if expr is None:
            return ["*"]
        if isinstance(expr, ast.Tuple):
            return [t for e in expr.elts for t in self._caught(e)]
        if isinstance(expr, ast.Call):
            expr = expr.func
        return [self.qualified(expr) or "?"]

    # -- calls ------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        fact = self._fact(node)
        if fact is not None:
            fact.scopes = list(self.scopes)
        name = self.qualified(node.func)
        self.visit(node.func)
        if name and self._matches(name, "shield_calls"):
            self.scopes.append("shield")
            for arg in node.args + [k.value for k in node.keywords]:
                self.visit(arg)
            self.scopes.pop()
            return
        if name and self._matches(name.rsplit(".", 1)[-1], "streaming_responses"):
            self._mark_streaming_body(node)
        for arg in node.args:
            self.visit(arg)
        for kw in node.keywords:
            self.visit(kw)

    def _fact(self, node: ast.Call) -> CallFact | None:
        hits = self.calls.get((node.lineno, node.col_offset + 1))
        if hits:
            return hits[0] if len(hits) == 1 else next(
                (c for c in hits if c.span.end_line == node.end_lineno), hits[0])
        return None

    def _mark_streaming_body(self, node: ast.Call) -> None:
        body = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "content"), None)
        if not isinstance(body, ast.Call):
            return
        name = body.func.id if isinstance(body.func, ast.Name) else getattr(body.func, "attr", None)
        if not name:
            return
        candidates = [fn for fn in self.facts.functions if fn.sym.rsplit(".", 1)[-1] == name]
        local = [fn for fn in candidates if fn.enclosing == self.function]
        for fn in (local or candidates)[:1]:
            if not any(m.get("m") == "level_triggered" for m in fn.markers):
                fn.markers.append({"m": "level_triggered", "why": "StreamingResponse body"})

    # -- names ------------------------------------------------------------------------------
    def qualified(self, expr: ast.expr) -> str | None:
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        parts.append(self.aliases.get(expr.id, expr.id))
        return ".".join(reversed(parts))

    def _matches(self, name: str, key: str) -> bool:
        return any(name == p or fnmatchcase(name, p) for p in self.k.get(key, ()))
