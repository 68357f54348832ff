"""The call graph with dispatch (SPEC "Calls, dispatch and summaries"), built once.

A call reaches every function it may run:
- a direct call, a method of a known receiver type, a function value held in a variable
  or a struct field (`s.onDone(x)` where a literal or assignment stored `h.handle`);
- Go interface methods: each program type whose method set has every method of the
  interface (own methods, pointer receivers, methods promoted from embedded fields) and
  that non-test code constructs (rapid type analysis: test doubles are not targets);
- Python: a method of a class no non-test code constructs (a Protocol, an ABC, a base
  class) dispatches to the constructed classes whose methods cover the class's methods;
- function values passed as arguments (closures, method values, `functools.partial(f)`,
  `asyncio.create_task(f())`, `start_soon(f)`, `run_in_executor(None, f)`, `go f()`) are
  callees of the function that passes them.
Unresolvable stays unresolved: no target, no link.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any

from deadline_audit.analysis.context import Ctx, GraphView
from deadline_audit.facts import Expr

_MAX_TARGETS = 8  # a dispatch wider than this says nothing about which code runs
_PROMOTION_DEPTH = 3


class CallGraph:
    def __init__(self, graph: GraphView) -> None:
        self.graph = graph
        self._callees: dict[str, frozenset[str]] = {}
        self._dispatch: dict[tuple[str, str], tuple[str, ...]] = {}
        self._method_sets: dict[str, dict[str, str]] = {}
        self._index()

    # -- indexes ----------------------------------------------------------------------
    def _index(self) -> None:
        g = self.graph
        self.test_paths = {p for p in g.files if g.tests.holds(p)}
        self.own_methods: dict[str, dict[str, str]] = defaultdict(dict)  # type -> name -> fn sym
        for sym, (fn, path) in g.functions.items():
            if fn.receiver_type and not fn.enclosing:
                self.own_methods[fn.receiver_type][sym.rsplit(".", 1)[-1]] = sym
        self.interfaces: dict[str, set[str]] = defaultdict(set)  # Go interface type -> method names
        iembeds: dict[str, list[str]] = defaultdict(list)  # Go interface type -> interfaces it embeds
        self.embeds: dict[str, list[str]] = defaultdict(list)  # Go struct type -> embedded types
        for sym, decl in g.decls.items():
            if decl.kind == "imethod":
                owner, name = sym[len("sym:go:"):].rsplit(".", 1)
                self.interfaces[owner].add(name)
            elif decl.kind == "field" and decl.embedded and decl.type and sym.startswith("sym:go:"):
                self.embeds[sym[len("sym:go:"):].rsplit(".", 1)[0]].append(decl.type)
            elif decl.kind == "iembed" and decl.type:
                iembeds[sym[len("sym:go:"):].rsplit(".", 1)[0]].append(decl.type)
        for iface in iembeds:  # an interface embedding interfaces has their methods too
            self.interfaces[iface] |= _embedded_methods(self.interfaces, iembeds, iface, 0)
        self.constructed = self._constructed_types()

    def _constructed_types(self) -> set[str]:
        """Types that non-test code builds: Go composite literals, Python constructor calls."""
        g = self.graph
        found: set[str] = set()
        classes = {sym for sym, d in g.decls.items() if d.kind == "class"}
        for path, facts in g.files.items():
            if path in self.test_paths:
                continue
            for c in facts.calls:
                if c.callee.get("k") == "fnref" and c.callee.get("sym") in classes:
                    found.add(_class_type(c.callee["sym"]))
            if facts.kind != "go":
                continue
            roots: list[Any] = [b.expr for b in facts.bindings]
            roots.extend(fn.returns for fn in facts.functions)
            roots.extend(c.args for c in facts.calls)
            roots.extend(s.stored_in for s in facts.sites if s.stored_in)
            _literal_types(roots, found)
        return found

    def method_set(self, type_name: str, depth: int = 0) -> dict[str, str]:
        """name -> function symbol: own methods, then those promoted from embedded fields."""
        if type_name in self._method_sets:
            return self._method_sets[type_name]
        methods = dict(self.own_methods.get(type_name, {}))
        if depth < _PROMOTION_DEPTH:
            for inner in self.embeds.get(type_name, ()):
                for name, sym in self.method_set(inner, depth + 1).items():
                    methods.setdefault(name, sym)
        if depth == 0:
            self._method_sets[type_name] = methods
        return methods

    # -- dispatch ---------------------------------------------------------------------
    def dispatch(self, type_name: str, name: str) -> tuple[str, ...]:
        """The functions a call of method `name` on a value of static type `type_name` runs."""
        key = (type_name, name)
        if key not in self._dispatch:
            self._dispatch[key] = self._compute_dispatch(type_name, name)
        return self._dispatch[key]

    def _compute_dispatch(self, type_name: str, name: str) -> tuple[str, ...]:
        own = self.method_set(type_name).get(name)
        if type_name in self.interfaces:  # Go interface: RTA over the program's types
            needed = self.interfaces[type_name]
            if name not in needed:
                return ()
            found = sorted({ms[name] for t in self.constructed if not t.startswith("py:")
                            for ms in [self.method_set(t)] if needed <= ms.keys()})
            return tuple(found) if len(found) <= _MAX_TARGETS else ()
        if type_name.startswith("py:") and type_name not in self.constructed:
            # never built: a Protocol, an ABC or a base class; its implementations run
            needed = {n for n in self.own_methods.get(type_name, {}) if not n.startswith("__")} | {name}
            found = {ms[name] for t in self.constructed if t.startswith("py:") and t != type_name
                     for ms in [self.own_methods.get(t, {})] if needed <= ms.keys()}
            if own and not found:
                return (own,)
            return tuple(sorted(found))[:_MAX_TARGETS] if len(found) <= _MAX_TARGETS else ((own,) if own else ())
        return (own,) if own else ()

    def targets(self, callee: Expr | None, ctx: Ctx, depth: int = 0) -> tuple[str, ...]:
        """Every module function a call of `callee` may run."""
        g = self.graph
        if not callee or depth > 8:
            return ()
        k = callee.get("k")
        if k == "fnref":
            sym = callee["sym"]
            if sym in g.functions:
                return (sym,)
            init = f"{sym}.__init__"  # a Python class called as a constructor
            if init in g.functions:
                return (init,)
            owner, _, name = sym.rpartition(".")  # `pkg.INSTANCE.method`: a method of a module-level object
            if owner in g.bindings and owner not in g.functions:
                return self.targets({"k": "method", "x": {"k": "ref", "sym": owner}, "name": name}, ctx, depth + 1)
            return ()
        if k == "method":
            owner = g.type_of(callee.get("x"), ctx, depth + 1)
            if not owner:
                return ()
            found = self.dispatch(_plain_type(owner), callee["name"])
            if found:
                return found
            held = g.member(owner, callee["name"], ctx.path)  # a func stored in a field
            return self._held_functions(held, depth) if held else ()
        if k == "ref":  # a method value (`m.fetch`) or a function held in a variable/field
            if callee["sym"] in g.functions:
                return (callee["sym"],)
            if callee["sym"] in ctx.subst:
                arg, arg_ctx = ctx.subst[callee["sym"]]
                return self.targets(arg, arg_ctx, depth + 1)
            return self._held_functions(callee["sym"], depth, callee)
        if k == "field":
            held = g.resolve_field(callee, ctx)
            return self._held_functions(held, depth) if held else ()
        if k == "item":  # a function looked up in a map / slice literal
            return self.targets(callee.get("x"), ctx, depth + 1)
        return ()

    def _held_functions(self, sym: str, depth: int, skip: Expr | None = None) -> tuple[str, ...]:

        g = self.graph
        found: list[str] = []
        for b, path in g.bindings.get(sym, ())[:8]:
            expr = b.expr
            values = [expr]
            if expr.get("k") == "obj":  # a map or slice literal of functions
                values = list((expr.get("fields") or {}).values())
            for value in values:
                if value is skip or not isinstance(value, dict):
                    continue
                if value.get("k") in ("fnref", "method", "ref", "field"):
                    found.extend(self.targets(value, Ctx(path), depth + 1))
        return tuple(dict.fromkeys(found))[:_MAX_TARGETS]

    # -- edges ------------------------------------------------------------------------
    def callees(self, fn_sym: str) -> frozenset[str]:
        if fn_sym in self._callees:
            return self._callees[fn_sym]

        g = self.graph
        found: set[str] = set()
        fn_path = g.functions[fn_sym][1] if fn_sym in g.functions else ""
        for call, path in g.calls_in.get(fn_sym, ()):
            ctx = Ctx(path or fn_path)
            targets = self.targets(call.callee, ctx) or self._self_method(call.callee, fn_sym)
            found.update(targets)
            for arg in self._run_arguments(call, targets, path or fn_path):  # function values it runs
                found.update(self.value_targets(arg, ctx))
        found.update(g.closures.get(fn_sym, ()))
        self._callees[fn_sym] = frozenset(found)
        return self._callees[fn_sym]

    def _run_arguments(self, call, targets: tuple[str, ...], path: str) -> list:
        """The arguments a call will run: those bound to a parameter its callee calls
        (a runner: `lease.With(ctx, …, fn)`), or any argument of an executor API (catalog
        `executors`: create_task, start_soon, run_in_executor, partial, errgroup.Go …).
        A function value registered for later (a callback) is not run here."""
        g = self.graph
        callee = call.callee
        name = callee.get("name") or ""
        if callee.get("k") == "ext" or (callee.get("k") == "method" and not targets):
            lang = "go" if g.lang.get(path) == "go" else "python"
            if name.rsplit(".", 1)[-1] in self._executors(lang):
                return [*call.args, *call.kw.values()]
            return []
        picked = []
        for target in targets:
            fn = g.functions[target][0]
            for i in fn.called_params:
                if i < len(call.args):
                    picked.append(call.args[i])
                elif i < len(fn.param_names) and fn.param_names[i] in call.kw:
                    picked.append(call.kw[fn.param_names[i]])
        return picked

    def _executors(self, lang: str) -> frozenset[str]:
        key = f"_executors_{lang}"
        if not hasattr(self, key):
            setattr(self, key, frozenset(self.graph.catalog.table(lang, "executors").get("names", ())))
        return getattr(self, key)

    def _self_method(self, callee: Expr, fn_sym: str) -> tuple[str, ...]:
        """`self.m(...)` where the extractor met `m` before its definition: the method of
        the enclosing class."""
        x = callee.get("x") or {}
        if callee.get("k") != "method" or x.get("k") != "unknown" or x.get("text") not in ("self", "cls"):
            return ()
        g = self.graph
        sym: str | None = fn_sym
        while sym in g.functions and g.functions[sym][0].receiver_type is None:
            sym = g.functions[sym][0].enclosing
        if sym not in g.functions:
            return ()
        return self.dispatch(g.functions[sym][0].receiver_type, callee["name"])

    def value_targets(self, expr: Any, ctx: Ctx) -> tuple[str, ...]:
        """Functions an argument hands on as a value: a function or method named without
        calling it, a closure, or the call inside `create_task(f())`/`partial(f, …)`."""
        if not isinstance(expr, dict):
            return ()
        k = expr.get("k")
        if k in ("fnref", "method"):
            return self.targets(expr, ctx)
        if k == "ref" and expr.get("sym") in self.graph.functions:
            return (expr["sym"],)
        if k == "call":
            return self.targets(expr.get("fn"), ctx)
        return ()

    def reachable(self, roots: list[str], limit: int = 400) -> set[str]:
        """The functions reachable from `roots`, nearest first up to `limit`, in a fixed
        order (callees sorted): with a limit, which functions make it in must not depend on
        the order a set happens to iterate in (string hashes change from run to run)."""
        g = self.graph
        seen: set[str] = set()
        todo = deque(roots)
        while todo and len(seen) < limit:
            sym = todo.popleft()
            if sym in seen or sym not in g.functions:
                continue
            seen.add(sym)
            todo.extend(sorted(self.callees(sym) - seen))
        return seen


def _plain_type(type_name: str) -> str:
    return type_name[4:] if type_name.startswith("sym:") else type_name


def _class_type(sym: str) -> str:
    body = sym.split(":", 2)
    return f"py:{body[2]}" if body[1] == "py" else body[2]




def _literal_types(roots: list[Any], found: set[str]) -> None:
    """Every `obj` (composite literal) type in these exprs, iteratively. A long list (a
    data table of literals of one type) is sampled: its first elements name its types."""
    stack = [(r, 0) for r in roots]
    while stack:
        item, depth = stack.pop()
        if depth > 8:
            continue
        cls = item.__class__
        if cls is dict:
            if item.get("k") == "obj" and item.get("type"):
                found.add(item["type"])
            depth += 1
            for value in item.values():
                if value.__class__ is dict or value.__class__ is list:
                    stack.append((value, depth))
        elif cls is list:
            depth += 1
            for x in item[:16]:
                if x.__class__ is dict or x.__class__ is list:
                    stack.append((x, depth))


def _embedded_methods(interfaces: dict[str, set[str]], iembeds: dict[str, list[str]], iface: str,
                      depth: int) -> set[str]:
    found: set[str] = set()
    if depth < _PROMOTION_DEPTH:
        for inner in iembeds.get(iface, ()):
            found |= interfaces.get(inner, set()) | _embedded_methods(interfaces, iembeds, inner, depth + 1)
    return found
