"""Marker pass: classifiers of outcomes and what each branch records (DA301, DA302).

Writes on `FunctionFact.markers` (positions 1-based; the Go pass go_marks_outcomes.py
writes the same shapes, checks/outcomes.py reads them):
- `{"m": "classifier", "form", "line", "col", "branches", "scope", ["owner"], ["permit_wait"]}`
  for a `match` (`case _:` or the `return` after it is the fallback), an `if`/`elif`
  chain or a run of `if …: return` ending in a `return` (form `if`), an `except` ladder
  (`except Exception:` / bare `except:` is the fallback; `permit_wait` when the `try` only
  awaits a semaphore's `acquire()`), a lookup in a dict literal held by a module, class or
  local name (form `get`: `.get(code, default)`, `.get(code) or default`,
  `T[code] if code in T else default`, `if code in T: return T[code]`, `try: return
  T[code] except KeyError:`), a loop over a table of `(type, state)` pairs ending in
  `return` (form `table`), and an `Enum` whose `_missing_` returns a member (form `enum`).
  Each branch: `inputs` (test texts), `names` (qualified names and literals in the test;
  `!name` under a `not`), `fallback`, `line`/`col` (the case, the test, the handler or the
  table entry) and `outcomes`: `{"how": "return" | "assign" | "call" | "raise", "expr",
  "target", "line", "col"}` in order. `scope`: work nouns of the docstrings.
- `{"m": "records", "outcomes"}`: the function's top-level writes that may record a state
  (outcome_records.py), so that a helper called from a branch is understood by its body.
- `{"m": "timeout_test", "names"}`: a `bool` function (or one named for timeouts) that
  returns an `isinstance` test.

Names are qualified through the module's imports (relative ones included); a name
defined in the module is prefixed with the module (`sym:py:<module>.<Name>`).
"""

from __future__ import annotations

import ast
import builtins
import re

from deadline_audit.extract.outcome_records import WorkNouns, work_nouns, worth_recording
from deadline_audit.extract.py_marks import MarkContext, Walker
from deadline_audit.extract.py_positions import LEAF_FIELDS
from deadline_audit.facts import Expr, FunctionFact

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_WORD = re.compile(r"[A-Za-z]+")
_MAX_OUTCOMES = 6
# Calls of a try body that only waits for a permit before the work starts.


def register(ctx: MarkContext, walker: Walker):
    if not ctx.facts.functions:
        return None
    cat = ctx.catalog.file("outcomes")
    nouns = work_nouns(tuple(cat.get("work_nouns", ())))
    module = ctx.facts.module or ""
    state = _State(ctx, module, nouns)

    def enter_module(node: ast.Module) -> None:
        state.module_doc = _doc_words(node, nouns)
        for stmt in node.body:
            state.collect_toplevel(stmt)

    def enter_fn(node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        fn = state.fact_for(node)
        if fn is None:
            return
        try:
            _Function(state, fn, node).run()
        except (RecursionError, ValueError, TypeError, AttributeError):
            pass  # an odd function is not classified; the other passes and functions go on

    def enter_class(node: ast.ClassDef) -> None:
        state.class_at[node.lineno] = node.name
        try:
            _enum_missing(state, node)
        except (RecursionError, ValueError, TypeError, AttributeError):
            pass
        for stmt in node.body:
            if isinstance(stmt, _FUNCS):
                state.owner[id(stmt)] = node.name
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _as_table(stmt.value) is not None:
                for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                    if isinstance(t, ast.Name):
                        state.class_tables[(node.name, t.id)] = _as_table(stmt.value)

    walker.enter(ast.Module, enter_module)
    walker.enter(ast.ClassDef, enter_class)
    walker.enter(_FUNCS, enter_fn)
    return None


class _State:
    def __init__(self, ctx: MarkContext, module: str, nouns: WorkNouns) -> None:
        self.ctx = ctx
        self.module = module
        self.nouns = nouns
        self.module_doc: list[str] = []
        self.defined: set[str] = set()  # module-level names (classes, functions, constants)
        self.tables: dict[str, ast.expr] = {}  # module-level dict/list/tuple tables
        self.class_at: dict[int, str] = {}
        self.relative: dict[str, str] = {}  # `from .states import RunState`
        self.self_class: str | None = None  # the class of the function being walked
        self.class_tables: dict[tuple[str, str], ast.expr] = {}  # (class, name) -> table literal
        self.owner: dict[int, str] = {}
        self._fns: dict[tuple[int, str], FunctionFact] = {}
        for fn in ctx.facts.functions:
            self._fns.setdefault((fn.span.line, fn.sym.rsplit(".", 1)[-1]), fn)

    def fact_for(self, node: ast.AST) -> FunctionFact | None:
        fn = self._fns.get((node.lineno, node.name))
        if fn is None and node.decorator_list:
            fn = self._fns.get((node.decorator_list[0].lineno, node.name))
        return fn

    def collect_toplevel(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.ClassDef, *_FUNCS)):
            self.defined.add(stmt.name)
            return
        targets: list[ast.expr] = []
        value = None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        for t in targets:
            if isinstance(t, ast.Name):
                self.defined.add(t.id)
                if _as_table(value) is not None:
                    self.tables[t.id] = _as_table(value)
        if isinstance(stmt, ast.ImportFrom) and stmt.level:
            base = self.module.split(".") if self.module else []
            keep = len(base) - stmt.level + (1 if self.ctx.facts.path.endswith("__init__.py") else 0)
            if keep >= 0:
                pkg = ".".join(base[:keep] + ([stmt.module] if stmt.module else []))
                for a in stmt.names:
                    self.relative[a.asname or a.name] = f"{pkg}.{a.name}" if pkg else a.name

    # -- expressions -----------------------------------------------------------------
    def dotted(self, node: ast.AST) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(node.id)
        return ".".join(reversed(parts))

    def qualify(self, dotted: str) -> str | None:
        """`httpx.ReadTimeout` / `RunState.FAILED` → qualified; None for a local name."""
        head, _, rest = dotted.partition(".")
        imports = self.ctx.imports
        if head in imports:
            return imports[head] + ("." + rest if rest else "")
        if head in self.relative:
            return self.relative[head] + ("." + rest if rest else "")
        if head in self.defined:
            return f"{self.module}.{dotted}" if self.module else dotted
        if head in _BUILTINS:
            return dotted
        return None

    def enc(self, node: ast.AST | None, depth: int = 0) -> Expr:
        if node is None:
            return {"k": "none"}
        if isinstance(node, ast.Await):
            return self.enc(node.value, depth)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return {"k": "str", "v": node.value[:80]}
            if node.value is None:
                return {"k": "none"}
            if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                return {"k": "num", "v": node.value, "u": None}
            return {"k": "unknown", "text": repr(node.value)[:80]}
        if isinstance(node, ast.Attribute) and node.attr in ("value", "name") and depth < 6:
            inner = self.enc(node.value, depth + 1)
            if inner.get("k") in ("ref", "local"):
                return inner
        if isinstance(node, (ast.Name, ast.Attribute)):
            dotted = self.dotted(node)
            if dotted is None:
                return {"k": "unknown", "text": _text(node)}
            head, _, rest = dotted.partition(".")
            if self.self_class and rest and (head == "cls" or head == "self" and rest.isupper()):
                # `cls.FAILED` in a classmethod of the enum (`self.FAILED` in its methods)
                dotted = f"{self.self_class}.{rest}"
            q = self.qualify(dotted)
            return {"k": "ref", "sym": "sym:py:" + q} if q else {"k": "local", "text": dotted}
        if isinstance(node, ast.Call) and depth < 4:
            if isinstance(node.func, ast.Name) and node.func.id == "str" and len(node.args) == 1:
                return self.enc(node.args[0], depth + 1)
            func = self.enc(node.func, depth + 1)
            f = node.func
            if self.self_class and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                    f.value.id in ("self", "cls"):  # a method of the class being walked
                func = {"k": "ref", "sym": f"sym:py:{self.module}.{self.self_class}.{f.attr}"}
            return {"k": "call", "fn": func, "name": _callee_name(node.func),
                    "args": [self.enc(a, depth + 1) for a in node.args[:6]],
                    "kw": {k.arg: self.enc(k.value, depth + 1) for k in node.keywords[:6] if k.arg}}
        return {"k": "unknown", "text": _text(node)}

    def names_in(self, node: ast.AST | None) -> list[str]:
        """Qualified names (types, members, sentinels) and literals a test mentions."""
        out: list[str] = []
        if node is None:
            return out
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
                # `not isinstance(exc, TimeoutError)`: the branch is for the others
                out.extend("!" + name for name in self.names_in(n.operand) if not name.startswith("!"))
                continue
            if isinstance(n, (ast.Name, ast.Attribute)):
                dotted = self.dotted(n)
                if dotted is not None:
                    q = self.qualify(dotted)
                    if q:
                        out.append(q)
                    continue
            if isinstance(n, ast.Constant) and isinstance(n.value, (int, str)):
                out.append(repr(n.value))
                continue
            stack.extend(ast.iter_child_nodes(n))
        return out[:12]


# Names every module sees without an import: the builtin exception types (and asyncio's
# CancelledError, named bare after `from asyncio import CancelledError` is resolved by imports).
_BUILTINS = frozenset(name for name, value in vars(builtins).items()
                      if isinstance(value, type) and issubclass(value, BaseException)) | {"CancelledError"}


class _Function:
    def __init__(self, state: _State, fn: FunctionFact, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.s = state
        self.fn = fn
        self.node = node
        words = set(state.module_doc) | set(_doc_words(node, state.nouns))
        owner = state.owner.get(id(node))
        self.scope = sorted(words)
        self.owner = owner
        self.found: list[dict] = []
        self.tables = dict(state.tables)  # module tables, then the function's own literals
        for st in node.body:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and \
                    _as_table(st.value) is not None:
                self.tables[st.targets[0].id] = _as_table(st.value)

    def table(self, node: ast.AST) -> ast.expr | None:
        """The literal a name stands for: a local, module or class table."""
        if isinstance(node, (ast.Dict, ast.List, ast.Tuple, ast.DictComp, ast.Call)):
            return _as_table(node)
        if isinstance(node, ast.Name):
            return self.tables.get(node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = self.owner if node.value.id in ("self", "cls") else node.value.id
            if owner:
                return self.s.class_tables.get((owner, node.attr))
        return None

    def run(self) -> None:
        self.s.self_class = self.owner
        self.block(self.node.body)
        self.summaries()
        for marker in self.found:
            marker["scope"] = self.scope
            if self.owner:
                marker["owner"] = self.owner
            self.fn.markers.append(marker)

    # -- walking --------------------------------------------------------------------
    def block(self, stmts: list[ast.stmt]) -> None:
        i = 0
        while i < len(stmts):
            st = stmts[i]
            if isinstance(st, ast.If):
                if not st.orelse and i + 1 < len(stmts) and isinstance(stmts[i + 1], ast.Return) and \
                        self.membership(st, stmts[i + 1]):
                    i += 1
                    continue
                if not st.orelse and _ends_in_return(st.body):
                    run_end = self.if_run(stmts, i)
                    if run_end > i:
                        for j in range(i, run_end):
                            self.block(stmts[j].body)
                        i = run_end
                        continue
                self.if_chain(st)
            elif isinstance(st, ast.Match):
                self.match(st, stmts[i + 1] if i + 1 < len(stmts) else None)
            elif isinstance(st, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                if not self.key_lookup(st):
                    self.try_(st)
            elif isinstance(st, (ast.For, ast.AsyncFor)) and _return_after(stmts, i + 1) is not None:
                end = _return_after(stmts, i + 1)
                self.loop_table(st, stmts[end], stmts[i + 1:end])
                self.block(st.body)
            elif isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
                self.block(st.body)
                self.block(st.orelse)
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                self.block(st.body)
            self.gets(st)
            i += 1

    def if_chain(self, node: ast.If) -> None:
        branches = []
        cur: ast.stmt | None = node
        while isinstance(cur, ast.If):
            branches.append(self.branch([_text(cur.test)], self.s.names_in(cur.test), cur.body, cur.test))
            self.block(cur.body)
            if len(cur.orelse) == 1 and isinstance(cur.orelse[0], ast.If):
                cur = cur.orelse[0]
            else:
                if cur.orelse:
                    fb = self.branch([], [], cur.orelse, cur.orelse[0], fallback=True)
                    branches.append(fb)
                    self.block(cur.orelse)
                cur = None
        self.add("if", node, branches)

    def if_run(self, stmts: list[ast.stmt], start: int) -> int:
        """`if a: return X` / `if b: return Y` / `return Z`: a ladder with a fallback."""
        j = start
        while j < len(stmts) and isinstance(stmts[j], ast.If) and not stmts[j].orelse and \
                _ends_in_return(stmts[j].body):
            j += 1
        if j - start < 2 or j >= len(stmts) or not isinstance(stmts[j], ast.Return):
            return start
        branches = [self.branch([_text(s.test)], self.s.names_in(s.test), s.body, s.test) for s in stmts[start:j]]
        branches.append(self.branch([], [], [stmts[j]], stmts[j], fallback=True))
        self.add("if", stmts[start], branches)
        return j

    def key_lookup(self, node: ast.Try) -> bool:
        """`try: return TABLE[code]` / `except KeyError: return default`."""
        if len(node.body) != 1 or len(node.handlers) != 1 or node.orelse or node.finalbody:
            return False
        ret, h = node.body[0], node.handlers[0]
        if not (isinstance(ret, ast.Return) and isinstance(ret.value, ast.Subscript)) or \
                not (isinstance(h.type, ast.Name) and h.type.id in ("KeyError", "LookupError")):
            return False
        table = self.table(ret.value.value)
        if not isinstance(table, ast.Dict):
            return False
        branches = self.dict_branches(table)
        branches.append(self.branch([], [], h.body, h, fallback=True))
        self.add("get", node, branches)
        return True

    def match(self, node: ast.Match, after: ast.stmt | None = None) -> None:
        branches = []
        for case in node.cases:
            pat = case.pattern
            wildcard = isinstance(pat, ast.MatchAs) and pat.pattern is None and case.guard is None
            inputs = [] if wildcard else [_text(p) for p in _alternatives(pat)]
            names = [] if wildcard else self.s.names_in(pat)
            branches.append(self.branch(inputs, names, case.body, pat, fallback=wildcard))
            self.block(case.body)
        if isinstance(after, ast.Return) and branches and not any(b["fallback"] for b in branches) and \
                all(_ends_in_return(c.body) for c in node.cases):  # no `case _:`: what follows is the fallback
            branches.append(self.branch([], [], [after], after, fallback=True))
        self.add("match", node, branches)

    def try_(self, node: ast.Try) -> None:
        cat = self.s.ctx.catalog.file("outcomes")
        fallbacks = set(cat.get("catch_all_python", ()))
        called = {_callee_name(n.func).rsplit(".", 1)[-1] for st in node.body for n in ast.walk(st)
                  if isinstance(n, ast.Call)}
        acquires = set(cat.get("permit_methods_python", ()))
        # `await sem.acquire()`, alone or under a timeout scope: a wait before the work starts
        permit = bool(called & acquires) and called <= acquires | set(cat.get("permit_scopes_python", ()))
        branches = []
        for h in node.handlers:
            types = [] if h.type is None else (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])
            names = [q for t in types for q in [self.s.qualify(self.s.dotted(t) or "")] if q]
            fallback = h.type is None or any(n in fallbacks for n in names)
            branches.append(self.branch([_text(t) for t in types], names, h.body, h, fallback=fallback))
        if any(b["fallback"] for b in branches) and not all(b["fallback"] for b in branches):
            # the way through without an exception is a case too: `state = SUCCEEDED` in the body
            # (or `else:`), one listed error, and `except Exception:` make a classifier
            branches.insert(0, self.branch(["(no exception)"], [], node.orelse or node.body, node))
        if branches:
            self.add("except", node, branches)
            if permit and self.found and self.found[-1].get("form") == "except":
                self.found[-1]["permit_wait"] = True
        self.block(node.body)
        for h in node.handlers:
            self.block(h.body)
        self.block(node.orelse)
        self.block(node.finalbody)

    def loop_table(self, loop: ast.For, after: ast.Return, checks: list[ast.stmt] = ()) -> None:
        """`for exc_type, state in TABLE: if isinstance(exc, exc_type): return state`, then
        the `return` after it (with the `if …: return` checks between them as branches)."""
        table = self.table(loop.iter)
        if table is None or isinstance(loop.iter, (ast.Dict, ast.List, ast.Tuple)):
            return
        if not (isinstance(loop.target, ast.Tuple) and len(loop.target.elts) == 2 and
                all(isinstance(e, ast.Name) for e in loop.target.elts)):
            return
        key_var, val_var = (e.id for e in loop.target.elts)
        returns_val = any(isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id == val_var
                          for n in ast.walk(loop))
        if not returns_val:
            return
        if isinstance(table, ast.Dict):  # `for exc_type, state in TABLE.items()` is not this shape
            return
        branches = []
        for item in table.elts:
            if isinstance(item, ast.Tuple) and len(item.elts) == 2:
                key, val = item.elts
                branches.append({"inputs": [_text(key)], "names": self.s.names_in(key), "line": item.lineno,
                                 "col": item.col_offset + 1, "fallback": False,
                                 "outcomes": [self.outcome("return", self.s.enc(val), val)]})
        for check in checks:
            branches.append(self.branch([_text(check.test)], self.s.names_in(check.test), check.body, check.test))
        branches.append(self.branch([], [], [after], after, fallback=True))
        self.add("table", loop, branches)

    def membership(self, st: ast.If, after: ast.Return) -> bool:
        """`if code in TABLE: return TABLE[code]` then `return default`."""
        test = st.test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.In)):
            return False
        table = self.table(test.comparators[0])
        if not isinstance(table, ast.Dict) or not _ends_in_return(st.body):
            return False
        branches = self.dict_branches(table)
        branches.append(self.branch([], [], [after], after, fallback=True))
        self.add("get", st, branches)
        return True

    def dict_branches(self, table: ast.Dict) -> list[dict]:
        branches = []
        for k, v in zip(table.keys, table.values):
            if k is None:
                continue
            branches.append({"inputs": [_text(k)], "names": self.s.names_in(k), "line": v.lineno,
                             "col": v.col_offset + 1, "fallback": False,
                             "outcomes": [self.outcome("return", self.s.enc(v), v)]})
        return branches

    def gets(self, st: ast.stmt) -> None:
        """`TABLE.get(code, default)` on a module-level dict (or a dict literal), also written
        `TABLE.get(code) or default` and `TABLE[code] if code in TABLE else default`."""
        for n, default in _lookups(st):
            f = n.func if isinstance(n, ast.Call) else None
            if f is not None and not (isinstance(f, ast.Attribute) and f.attr == "get"):
                continue
            table = self.table(f.value if f is not None else n.value)
            if not isinstance(table, ast.Dict):
                continue
            branches = self.dict_branches(table)
            branches.append({"inputs": [], "names": [], "line": default.lineno, "col": default.col_offset + 1,
                             "fallback": True, "outcomes": [self.outcome("return", self.s.enc(default), default)]})
            marker = {"m": "classifier", "form": "get", "line": n.lineno, "col": n.col_offset + 1,
                      "branches": branches}
            self.found.append(marker)

    # -- branches and outcomes -------------------------------------------------------
    def branch(self, inputs: list[str], names: list[str], body: list[ast.stmt], at: ast.AST,
               fallback: bool = False) -> dict:
        return {"inputs": inputs, "names": names, "line": at.lineno, "col": at.col_offset + 1,
                "fallback": fallback, "outcomes": self.outcomes(body)}

    def outcomes(self, body: list[ast.stmt], depth: int = 0) -> list[dict]:
        out: list[dict] = []
        for st in body:
            if len(out) >= _MAX_OUTCOMES:
                break
            if isinstance(st, ast.Return):
                values = st.value.elts[:3] if isinstance(st.value, ast.Tuple) and st.value.elts else [st.value]
                out.extend(self.outcome("return", self.s.enc(v), st) for v in values)  # `return State.X, why`
                break
            if isinstance(st, ast.Raise):
                out.append({"how": "raise", "line": st.lineno, "col": st.col_offset + 1})
                break
            if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                for t in targets:
                    pairs = zip(t.elts, st.value.elts) if isinstance(t, ast.Tuple) and \
                        isinstance(st.value, ast.Tuple) and len(t.elts) == len(st.value.elts) else [(t, st.value)]
                    for tt, vv in pairs:
                        o = self.outcome("assign", self.s.enc(vv), st)
                        o["target"] = _text(tt)
                        out.append(o)
            elif isinstance(st, ast.Expr) and isinstance(_unawait(st.value), ast.Call):
                out.append(self.outcome("call", self.s.enc(st.value), st))
            elif isinstance(st, (ast.With, ast.AsyncWith)) and depth < 2:
                out.extend(self.outcomes(st.body, depth + 1))
        return out[:_MAX_OUTCOMES]

    @staticmethod
    def outcome(how: str, expr: Expr, at: ast.AST) -> dict:
        return {"how": how, "expr": expr, "line": at.lineno, "col": at.col_offset + 1}

    def add(self, form: str, at: ast.AST, branches: list[dict]) -> None:
        if not branches or not any(b["outcomes"] for b in branches):
            return
        if len(branches) < 2 and not branches[0]["names"]:  # `if err: …` alone classifies nothing
            return
        listed = sum(1 for b in branches if not b["fallback"])
        if not any(b["names"] for b in branches) and not (listed >= 2 and listed < len(branches)):
            return  # names no error (DA302) and has no fallback after two cases (DA301)
        self.found.append({"m": "classifier", "form": form, "line": at.lineno, "col": at.col_offset + 1,
                           "branches": branches})

    def summaries(self) -> None:
        body = self.node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        a = self.node.args
        holders = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}  # fields of params, self
        records = [o for o in self.outcomes(body) if worth_recording(o) and (
            o["how"] in ("call", "return") or
            (o["how"] == "assign" and "." in o.get("target", "") and o["target"].split(".", 1)[0] in holders))]
        if records:
            self.fn.markers.append({"m": "records", "outcomes": records})
        returns = self.node.returns
        if not (isinstance(returns, ast.Name) and returns.id == "bool") and "timeout" not in self.node.name.lower():
            return
        for st in ast.walk(self.node):
            if isinstance(st, ast.Return) and isinstance(st.value, ast.Call) and \
                    isinstance(st.value.func, ast.Name) and st.value.func.id == "isinstance" and \
                    len(st.value.args) == 2:
                names = self.s.names_in(st.value.args[1])
                if names:
                    self.fn.markers.append({"m": "timeout_test", "names": names})
                break


def _enum_missing(state: _State, node: ast.ClassDef) -> None:
    """`class RunState(Enum): … def _missing_(cls, value): return cls.FAILED`: every value
    nobody declared becomes that member — a classifier whose fallback is `_missing_`."""
    if not any((_callee_name(b).rsplit(".", 1)[-1]).endswith("Enum") for b in node.bases):
        return
    members = [st for st in node.body if isinstance(st, ast.Assign) and len(st.targets) == 1
               and isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.Constant)]
    missing = next((st for st in node.body if isinstance(st, _FUNCS) and st.name == "_missing_"), None)
    if missing is None or len(members) < 2:
        return
    fn = state.fact_for(missing)
    ret = next((st for st in missing.body if isinstance(st, ast.Return)), None)
    if fn is None or ret is None or not isinstance(ret.value, ast.Attribute) or \
            not isinstance(ret.value.value, ast.Name) or ret.value.value.id not in ("cls", node.name):
        return
    base = f"sym:py:{state.module}.{node.name}" if state.module else f"sym:py:{node.name}"
    branches = [{"inputs": [repr(m.value.value)], "names": [], "line": m.lineno, "col": m.col_offset + 1,
                 "fallback": False,
                 "outcomes": [{"how": "return", "expr": {"k": "ref", "sym": f"{base}.{m.targets[0].id}"},
                               "line": m.lineno, "col": m.col_offset + 1}]}
                for m in members]
    branches.append({"inputs": [], "names": [], "line": ret.lineno, "col": ret.col_offset + 1, "fallback": True,
                     "outcomes": [{"how": "return", "expr": {"k": "ref", "sym": f"{base}.{ret.value.attr}"},
                                   "line": ret.lineno, "col": ret.col_offset + 1}]})
    fn.markers.append({"m": "classifier", "form": "enum", "line": missing.lineno, "col": missing.col_offset + 1,
                       "branches": branches, "scope": sorted(set(state.module_doc)), "owner": node.name})


def _as_table(value: ast.AST | None) -> ast.expr | None:
    """A literal table, or a dict built from a literal list of pairs written another way:
    `{code: state for code, state in ((…, …), …)}` (either way round), `dict([(…, …), …])`
    and `dict(CODE=state, …)`. Another value is not a table."""
    if isinstance(value, (ast.Dict, ast.List, ast.Tuple)):
        return value
    pairs: ast.AST | None = None
    swap = False
    if isinstance(value, ast.DictComp) and len(value.generators) == 1:
        gen = value.generators[0]
        names = [e.id for e in gen.target.elts if isinstance(e, ast.Name)] \
            if isinstance(gen.target, ast.Tuple) and len(gen.target.elts) == 2 else []
        if len(names) != 2 or gen.ifs or gen.is_async or \
                not (isinstance(value.key, ast.Name) and isinstance(value.value, ast.Name)):
            return None
        if [value.key.id, value.value.id] == names:
            pairs = gen.iter
        elif [value.value.id, value.key.id] == names:
            pairs, swap = gen.iter, True
    elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
        if not value.args and value.keywords and all(k.arg for k in value.keywords):
            keys = [ast.copy_location(ast.Constant(k.arg), k.value) for k in value.keywords]
            return ast.copy_location(ast.Dict(keys=keys, values=[k.value for k in value.keywords]), value)
        if len(value.args) == 1 and not value.keywords:
            pairs = value.args[0]
    if not isinstance(pairs, (ast.List, ast.Tuple, ast.Set)) or not pairs.elts:
        return None
    keys, values = [], []
    for e in pairs.elts:
        if not (isinstance(e, (ast.Tuple, ast.List)) and len(e.elts) == 2):
            return None
        k, v = (e.elts[1], e.elts[0]) if swap else (e.elts[0], e.elts[1])
        keys.append(k)
        values.append(v)
    return ast.copy_location(ast.Dict(keys=keys, values=values), value)


def _lookups(st: ast.stmt):
    """(lookup, default) pairs in a statement's own expressions."""
    for n in _shallow_calls(st, (ast.Call, ast.BoolOp, ast.IfExp)):
        if isinstance(n, ast.Call) and len(n.args) == 2:
            yield n, n.args[1]
        elif isinstance(n, ast.BoolOp) and isinstance(n.op, ast.Or) and len(n.values) == 2 and \
                isinstance(n.values[0], ast.Call) and len(n.values[0].args) == 1:
            yield n.values[0], n.values[1]
        elif isinstance(n, ast.IfExp) and isinstance(n.body, ast.Subscript) and \
                isinstance(n.test, ast.Compare) and len(n.test.ops) == 1 and isinstance(n.test.ops[0], ast.In):
            yield n.body, n.orelse


def _shallow_calls(st: ast.stmt, kinds: tuple = (ast.Call,)):
    """Calls in a statement's own expressions (not in nested blocks or functions)."""
    roots: list[ast.AST] = []
    if isinstance(st, (ast.Return, ast.Expr)) and st.value is not None:
        roots.append(st.value)
    elif isinstance(st, ast.Assign):
        roots.append(st.value)
    elif isinstance(st, ast.AnnAssign) and st.value is not None:
        roots.append(st.value)
    stack = roots
    push, extend = stack.append, stack.extend
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            yield n
        if n.__class__ is ast.Lambda:
            continue
        # ast.iter_child_nodes, inlined (hot: every statement of every function), minus
        # the fields that never hold a node
        for name in n._fields:
            if name in LEAF_FIELDS:
                continue
            value = getattr(n, name, None)
            if value.__class__ is list:
                extend([v for v in value if isinstance(v, ast.AST)])
            elif isinstance(value, ast.AST):
                push(value)


def _alternatives(pat: ast.pattern) -> list[ast.AST]:
    if isinstance(pat, ast.MatchOr):
        return list(pat.patterns)
    return [pat]


def _return_after(stmts: list[ast.stmt], start: int) -> int | None:
    """The index of the `return` that follows `start`, past `if …: return` checks only."""
    j = start
    while j < len(stmts) and isinstance(stmts[j], ast.If) and not stmts[j].orelse and _ends_in_return(stmts[j].body):
        j += 1
    return j if j < len(stmts) and isinstance(stmts[j], ast.Return) else None


def _ends_in_return(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def _unawait(node: ast.AST) -> ast.AST:
    return node.value if isinstance(node, ast.Await) else node


def _callee_name(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)[:80]
    except Exception:  # noqa: BLE001 - never lose the run over a display string
        return node.__class__.__name__


def _doc_words(node: ast.AST, is_noun: WorkNouns) -> list[str]:
    doc = ast.get_docstring(node, clean=False) if isinstance(node, (ast.Module, *_FUNCS, ast.ClassDef)) else None
    if not doc:
        return []
    words = {w.lower() for w in _WORD.findall(doc[:600])}
    return sorted(w for w in words if is_noun(w))
