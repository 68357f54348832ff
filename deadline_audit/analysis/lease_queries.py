"""Finding the leases of the code: the helpers that run an operation under a renewable
timer (structural, SPEC §4), the parameters that arm timers (through helpers and
constructor fields), methods run under a timer on their receiver's field, and each call
of such a helper as a `Lease` (with the structural leases of analysis/leases.py).

A mixin of `TimeoutGraph` (graph.py): it reads the graph's indexes (`functions`,
`calls_in`, `sites_in`, `closures`, `bindings`) and memoises in its `_memo`.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from deadline_audit.analysis.context import Ctx, Lease
from deadline_audit.analysis.instances import object_fields
from deadline_audit.facts import CallFact, Expr, FunctionFact, walk_exprs as _walk
from deadline_audit.findings import Location


class LeaseQueries:
    def lease_helpers(self, declared: tuple[str, ...] = ()) -> dict[str, tuple[int, int]]:
        """Functions that run an operation under a renewable timer: (duration param,
        operation param). Structural (SPEC §4): a timer armed with a parameter, another
        parameter called, renewal vocabulary; plus user-declared lease functions."""
        words = set(self.catalog.words("renewal")) | set(self.catalog.words("lease"))
        helpers = {}
        for sym, (fn, _) in self.functions.items():
            called = set(fn.called_params)
            for closure in self.closures.get(sym, ()):
                called |= _closure_called_params(self, closure, fn)
            if not called:
                continue
            timer = self.timer_params(sym)
            if timer and called - timer and (words & set(fn.vocabulary) or _names_word(sym, words)
                                             or self._delegates_to_lease(sym, words)):
                # the operation is given arguments (`op(ctx)`); a parameter called bare
                # (`alive()`, `progress()`: a probe the renewal asks) or typed as a
                # predicate (`alive func(ctx) bool`) is not it
                ops = called - timer
                ops = ops - {m["param"] for m in fn.markers if m.get("m") == "predicate_param"} or ops
                helpers[sym] = (min(timer), min((ops & set(fn.called_with_args)) or ops))
        for entry in self.catalog.entries("go", "leases") + self.catalog.entries("python", "leases"):
            for sym in self.functions:
                if _matches_any(sym, entry.get("func")):
                    helpers[sym] = (int(entry.get("duration_arg", 0)), int(entry.get("operation_arg", 1)))
        for sym, (fn, _) in self.functions.items():
            if sym not in helpers and _matches_any(sym, declared):
                guess = self._declared_lease_params(fn)
                if guess is not None:
                    helpers[sym] = guess
        return helpers

    def timer_params(self, sym: str, depth: int = 0) -> set[int]:
        """The parameters that arm a timer, ticker or sleep, or a lease's TTL: in the body
        or its closures, or handed on to a helper's parameter that does
        (`h.heartbeat(ctx, key, ttl)` ticking at `ttl / 3`, `h.acquire(ctx, key, ttl)`
        writing a row lease). Memoised; a cycle counts nothing."""
        key = ("_timer_params", sym)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = set()
        fn = self.functions[sym][0]
        timer = set(fn.timer_params)
        owners = (sym, *self.closures.get(sym, ()))
        for closure in owners[1:]:
            timer |= _closure_timer_params(self, closure, fn)
        timer |= self._object_timer_params(sym, owners, fn)
        if depth < 4:
            params = {p: i for i, p in enumerate(fn.params)}
            for owner in owners:
                for call, path in self.calls_in.get(owner, ()):
                    passed = [(j, params[a["sym"]]) for j, a in enumerate(call.args)
                              if a.get("k") == "ref" and a.get("sym") in params]
                    if not passed:
                        continue
                    target = self.resolve_callee(call.callee, Ctx(path))
                    if target is None or target == sym or target not in self.functions:
                        continue
                    inner = self.timer_params(target, depth + 1)
                    handed = {i for j, i in passed if j in inner}
                    if handed:
                        timer |= handed
                        targets = self._memo.setdefault(("_timer_targets", sym), set())
                        targets.add(target)
                        targets |= self._memo.get(("_timer_targets", target), set())
        if sym.endswith(".__init__"):
            timer |= self._fields_arming(sym, fn)
        self._memo[key] = timer
        return timer

    def _object_timer_params(self, sym: str, owners: tuple[str, ...], fn: FunctionFact) -> set[int]:
        """A timer paced by a field of an object the function builds from its parameter
        (`lease = OperationLease(label, lease_s)`, then `anyio.sleep(lease.ttl_s / 3)` in
        its heartbeat): that parameter arms the timer."""
        read = {sub["sym"] for owner in owners for site in self.sites_in.get(owner, ())
                if site.role in ("timer", "ticker", "sleep") and site.value
                for sub in _walk(site.value) if sub.get("k") == "ref"}
        if not read:
            return set()
        params = {p: i for i, p in enumerate(fn.params)}
        found: set[int] = set()
        for local, b, path in self.bindings_by_function().get(sym, ()):
            if b.expr.get("k") != "call" or not local.startswith(sym + "."):
                continue
            for field_sym, (value, value_ctx) in object_fields(self, {"k": "ref", "sym": local}, Ctx(path)).items():
                if field_sym not in read:
                    continue
                for _ in range(3):  # the constructor's parameter: what this function passed it
                    if value.get("k") != "ref" or value.get("sym") not in value_ctx.subst:
                        break
                    value, value_ctx = value_ctx.subst[value["sym"]]
                if value.get("k") == "ref" and value.get("sym") in params:
                    found.add(params[value["sym"]])
        return found

    def _fields_arming(self, init: str, fn: FunctionFact) -> set[int]:
        """Python: constructor parameters stored in a field (`self._ttl = ttl`) that a method
        of the class arms a timer or a lease with (`set(key, tok, px=int(self._ttl * 1000))`)."""
        params = {p: i for i, p in enumerate(fn.params)}
        stored: dict[str, int] = {}
        for field_sym, b, _ in self.bindings_by_function().get(init, ()):
            for sub in _walk(b.expr):
                if sub.get("k") == "ref" and sub.get("sym") in params:
                    stored[field_sym] = params[sub["sym"]]
        if not stored or not fn.receiver_type:
            return set()
        methods = [m for m in self.callgraph.own_methods.get(fn.receiver_type, {}).values() if m != init]
        found = set()
        for method in methods:
            for site in self.sites_in.get(method, ()):
                if site.role in ("timer", "ticker", "sleep", "lease") and site.value:
                    found.update(stored[sub["sym"]] for sub in _walk(site.value)
                                 if sub.get("k") == "ref" and sub.get("sym") in stored)
        if found:
            self._memo.setdefault(("_timer_targets", init), set()).update(methods)
        return found

    def _delegates_to_lease(self, sym: str, words: set[str]) -> bool:
        """The timer parameter is handed to a helper that takes or renews a lease with it
        (a lease-role site, or lease/renewal vocabulary in the helper)."""
        for target in self._memo.get(("_timer_targets", sym), ()):
            fn = self.functions[target][0]
            if words & set(fn.vocabulary) or _names_word(target, words) \
                    or any(site.role == "lease" for site in self.sites_in.get(target, ())):
                return True
        return False

    def receiver_runners(self) -> dict[str, tuple[str, int]]:
        """Methods that run an operation parameter under a timer armed with a field of
        their own receiver (`time.AfterFunc(w.ttl, …)` in `(w *Watchdog) Supervise(ctx,
        op)`), with lease vocabulary in the body or in the method's or type's name:
        symbol -> (the field's symbol, the operation parameter). The lease duration at a
        call is that field's value (over every instance: unresolved when they differ)."""
        key = ("_receiver_runners",)
        if key in self._memo:
            return self._memo[key]
        words = set(self.catalog.words("renewal")) | set(self.catalog.words("lease"))
        found: dict[str, tuple[str, int]] = {}
        for sym, (fn, _) in self.functions.items():
            if not fn.receiver_type or fn.enclosing:
                continue
            called = set(fn.called_params)
            scopes = [sym, *self.closures.get(sym, ())]
            for closure in scopes[1:]:
                called |= _closure_called_params(self, closure, fn)
            if not called or not (words & set(fn.vocabulary) or _names_word(sym, words)
                                  or _names_word(fn.receiver_type, words)):
                continue
            fields = set()
            for scope in scopes:
                for site in self.sites_in.get(scope, ()):
                    value = site.value or {}
                    own = f"{_sym_prefix(sym)}{fn.receiver_type.removeprefix('py:')}."
                    if site.role == "timer" and value.get("k") == "ref" and value["sym"].startswith(own) \
                            and self.decls.get(value["sym"]) is not None \
                            and self.decls[value["sym"]].kind in ("field", "attr"):
                        fields.add(value["sym"])
            if len(fields) == 1:
                found[sym] = (fields.pop(), min(called))
        self._memo[key] = found
        return found

    def _declared_lease_params(self, fn: FunctionFact) -> tuple[int, int] | None:
        """A user-declared lease function: its duration is the timer/duration-typed
        parameter, its operation the called/function-typed one."""
        types = [(self.decls.get(p).type or "") if self.decls.get(p) else "" for p in fn.params]
        duration = next(iter(sorted(fn.timer_params)), None)
        if duration is None:
            duration = next((i for i, t in enumerate(types)
                             if t.endswith("Duration") or t in ("float", "int", "timedelta")), None)
        operation = next((i for i in sorted(fn.called_params) if i != duration), None)
        if operation is None:
            operation = next((i for i, t in enumerate(types) if i != duration and
                              (t.startswith("func") or "Callable" in t or "Awaitable" in t)), None)
        return (duration, operation) if duration is not None and operation is not None else None

    def leases(self) -> list[Lease]:
        memo_key = ("_leases",)
        if memo_key in self._memo:
            return self._memo[memo_key]
        helpers = self.lease_helpers(self.declared_leases)
        by_receiver = self.receiver_runners()
        by_object = self.object_runners(helpers)
        found: list[Lease] = []
        for caller, calls in self.calls_in.items():
            for call, path in calls:
                ctx = Ctx(path)
                target = self.resolve_callee(call.callee, ctx)
                if target in helpers:
                    fn = self.functions[target][0]
                    d_idx, op_idx = helpers[target]
                    duration = _arg(call, fn, d_idx)
                elif target in by_object:
                    fn = self.functions[target][0]
                    d_idx, field_name, op_idx = by_object[target]
                    held = _arg(call, fn, d_idx)  # the lease object given: its field paces the keeper
                    duration = {"k": "field", "x": held, "name": field_name} if held is not None else None
                elif target in by_receiver and call.callee.get("k") == "method":
                    fn = self.functions[target][0]
                    field_sym, op_idx = by_receiver[target]  # the receiver type's lease field
                    duration = {"k": "ref", "sym": field_sym}
                else:
                    continue
                operation = _arg(call, fn, op_idx)
                ops = self.operation_functions(operation, ctx)
                unit = "ns" if self.lang.get(path) == "go" else "s"
                name = next((a["v"] for a in call.args if a.get("k") == "str" and 0 < len(a.get("v", "")) < 40), None)
                found.append(Lease(
                    id=f"site:{path}:{call.span.line}:{call.span.column}",
                    location=Location(path, call.span.line, call.span.column, call.span.end_line, call.span.end_column),
                    function=caller, duration=duration, ctx=ctx, operations=ops, helper=target, unit=unit,
                    name=name))
        from deadline_audit.analysis.leases import structural_leases

        known = {lease.id for lease in found}
        found.extend(lease for lease in structural_leases(self, helpers) if lease.id not in known)
        self._memo[memo_key] = found
        return found

    def object_runners(self, helpers: dict[str, tuple[int, int]]) -> dict[str, tuple[int, str, int]]:
        """Go helpers handed the lease object itself (`lease.Run(ctx, store, l, fn)`) that
        start a method of it whose ticker reads one of its fields (`go l.keepAlive(ctx, st)`,
        ticking at `l.TTL / 3`) and call another parameter: symbol -> (the lease
        parameter, that field, the operation parameter). The lease is that field of the
        argument at each call."""
        key = ("_object_runners",)
        if key in self._memo:
            return self._memo[key]
        words = set(self.catalog.words("renewal")) | set(self.catalog.words("lease"))
        found: dict[str, tuple[int, str, int]] = {}
        for sym, (fn, path) in self.functions.items():
            if sym in helpers or self.lang.get(path) != "go" or not fn.called_params:
                continue
            params = {p: i for i, p in enumerate(fn.params)}
            for call, cpath in self.calls_in.get(sym, ()):
                x = call.callee.get("x") or {}
                if call.callee.get("k") != "method" or x.get("k") != "ref" or x.get("sym") not in params:
                    continue
                decl = self.decls.get(x["sym"])
                method = self.resolve_callee(call.callee, Ctx(cpath))
                if decl is None or not decl.type or method is None:
                    continue
                owners = (method, *self.closures.get(method, ()))
                prefix = f"sym:go:{decl.type.lstrip('*')}."
                fields = {sub["sym"][len(prefix):] for owner in owners for site in self.sites_in.get(owner, ())
                          if site.role in ("timer", "ticker", "sleep") and site.value
                          for sub in _walk(site.value) if sub.get("k") == "ref" and sub["sym"].startswith(prefix)}
                vocabulary = set(fn.vocabulary) | {w for o in owners for w in self.functions[o][0].vocabulary}
                ops = set(fn.called_params) - {params[x["sym"]]}
                # lease words, or a catalog lease site the keeper reaches (a row renewal)
                renews = any(site.role == "lease" for o in self.reachable(list(owners), limit=24)
                             for site in self.sites_in.get(o, ()))
                if len(fields) == 1 and ops and (words & vocabulary or _names_word(sym, words) or renews):
                    found[sym] = (params[x["sym"]], fields.pop(), min((ops & set(fn.called_with_args)) or ops))
                    break
        self._memo[key] = found
        return found

    def operation_functions(self, expr: Expr | None, ctx: Ctx) -> list[str]:
        if not expr:
            return []
        if expr.get("k") == "ref":  # an operation held by a local: `op = partial(f, …)`
            bound = self.bindings.get(expr["sym"], ())
            if len(bound) == 1:
                target = self.partial_target(bound[0][0].expr, Ctx(bound[0][1]))
                if target is not None:
                    return [target]
        if expr.get("k") in ("fnref", "method", "ref", "field"):
            return list(self.resolve_callees(expr, ctx))
        if expr.get("k") == "call":  # a coroutine object passed as the operation
            target = self.partial_target(expr, ctx)
            return [target] if target is not None else list(self.resolve_callees(expr.get("fn"), ctx))
        return []


def _arg(call: CallFact, fn: FunctionFact, index: int) -> Expr | None:
    if index < len(call.args):
        return call.args[index]
    if index < len(fn.param_names):
        return call.kw.get(fn.param_names[index])
    return None


def _closure_called_params(graph: "LeaseQueries", closure: str, outer: FunctionFact) -> set[int]:
    """A closure calling the enclosing function's parameter (`go func() { done <- fn(ctx) }()`)."""
    found = set()
    for call, _ in graph.calls_in.get(closure, ()):
        callee = call.callee
        if callee.get("k") == "ref" and callee["sym"] in outer.params:
            found.add(outer.params.index(callee["sym"]))
    return found


def _closure_timer_params(graph: "LeaseQueries", closure: str, outer: FunctionFact) -> set[int]:
    found = set()
    for site in graph.sites_in.get(closure, ()):
        if site.role in ("timer", "ticker", "sleep") and site.value:
            if site.value.get("k") == "ref" and site.value["sym"] in outer.params:
                found.add(outer.params.index(site.value["sym"]))
    return found


def _matches_any(sym: str, patterns: Any) -> bool:
    if isinstance(patterns, str):
        patterns = [patterns]
    name = sym.split(":", 2)[-1]
    return any(fnmatchcase(name, p) for p in patterns or ())


def _names_word(sym: str, words: set[str]) -> bool:
    """The function's own name carries the vocabulary (`leased`, `withLease`,
    `runRenewing`): the body need not repeat it."""
    name = sym.rsplit(".", 1)[-1].lower()
    return any(w.lower() in name for w in words)


def _sym_prefix(sym: str) -> str:
    return "sym:" + sym.split(":", 2)[1] + ":"
