"""Lease forms recognised by structure (SPEC "Lease forms"), beyond the runner helper
(graph.TimeoutGraph.lease_helpers):

- a **holder**: a context manager (a generator: `@contextmanager`/`@asynccontextmanager`)
  that takes a duration parameter and, while its body runs, keeps a background renewer or
  watchdog going (a function it calls or starts that waits on a sleep/timer/ticker), with
  lease or renewal vocabulary. `with holder(key, ttl): work()` is an operation lease of
  `ttl` over what the `with` body calls;
- a **lease decorator**: a decorator factory whose wrapper runs the decorated function
  inside a holder (or a runner) armed with one of the factory's parameters.
  `@leased("push", ttl=...)` over `f` is an operation lease of `ttl` over `f`.

Vocabulary and parameter words are catalog data (vocabulary.toml, leases.toml).
"""

from __future__ import annotations

from deadline_audit.analysis.context import Ctx, GraphView, Lease
from deadline_audit.analysis.decorators import call_at
from deadline_audit.extract.sql_leases import SqlLeaseKnowledge, now_plus_amount
from deadline_audit.analysis.instances import object_fields
from deadline_audit.facts import CallFact, Expr, FunctionFact, walk_exprs
from deadline_audit.findings import Location

_WAITS = ("timer", "ticker", "sleep")
_DURATION_TYPES = ("timedelta", "Duration", "float", "int")


def lease_holders(graph: GraphView) -> dict[str, int]:
    """Context managers that hold a lease: symbol -> index of the duration parameter."""
    key = ("_lease_holders",)
    if key in graph._memo:
        return graph._memo[key]
    words = set(graph.catalog.words("renewal")) | set(graph.catalog.words("lease"))
    found: dict[str, int] = {}
    for sym, (fn, path) in graph.functions.items():
        if any(m.get("m") == "yields" for m in fn.markers) and fn.params:
            duration = _duration_param(graph, fn)
            if duration is not None and _keeps_renewing(graph, sym, words):
                found[sym] = duration
        elif sym.endswith((".__aenter__", ".__enter__")) and graph.lang.get(path) == "python":
            # a context manager class: `async with RequestLease(redis, key, ttl=90):` holds
            # the lease its __aenter__ (or already its constructor) starts renewing, for the
            # TTL its constructor is given; its exit stops the renewal
            init = sym.rsplit(".", 1)[0] + ".__init__"
            duration = _duration_param(graph, graph.functions[init][0]) if init in graph.functions else None
            if duration is not None and (_keeps_renewing(graph, sym, words) or _keeps_renewing(graph, init, words)):
                found[init] = duration
    found.update(_holder_factories(graph, found))
    graph._memo[key] = found
    return found


def object_lease_holders(graph: GraphView) -> dict[str, tuple[int, str]]:
    """Holders given the lease object itself (`async with frontier.held(lease):`, the
    keeper sleeping `lease.ttl / 3` between renewals): symbol -> (index of that
    parameter, the field of it that paces the keeper). The lease duration is that field
    of the argument."""
    key = ("_object_lease_holders",)
    if key in graph._memo:
        return graph._memo[key]
    words = set(graph.catalog.words("renewal")) | set(graph.catalog.words("lease"))
    found: dict[str, tuple[int, str]] = {}
    for sym, (fn, path) in graph.functions.items():
        if graph.lang.get(path) != "python" or not fn.params or not any(m.get("m") == "yields" for m in fn.markers):
            continue
        if _duration_param(graph, fn) is not None:
            continue
        paced = _object_ttl_param(graph, sym, fn)
        if paced is not None and _keeps_renewing(graph, sym, words):
            found[sym] = paced
    graph._memo[key] = found
    return found


def _object_ttl_param(graph: GraphView, sym: str, fn: FunctionFact) -> tuple[int, str] | None:
    """The parameter of a program class whose one field paces a wait of the keeper the
    function starts (`await asyncio.sleep(lease.ttl / 3)`)."""
    reached = graph.reachable([sym], limit=24)
    read = {sub["sym"] for other in reached for site in graph.sites_in.get(other, ())
            if site.role in _WAITS and site.value for sub in walk_exprs(site.value) if sub.get("k") == "ref"}
    for i, param in enumerate(fn.params):
        decl = graph.decls.get(param)
        if decl is None or not decl.type or not decl.type.startswith("py:"):
            continue
        fields = {r[len("sym:" + decl.type) + 1:] for r in read if r.startswith(f"sym:{decl.type}.")}
        if len(fields) == 1:
            return i, fields.pop()
    return None


def _holder_factories(graph: GraphView, holders: dict[str, int]) -> dict[str, int]:
    """Python functions returning a holder class built with one of their parameters as its
    TTL (`def hold(self, key, ttl): return OperationLease(self._client, key, ttl)`):
    `async with leases.hold(key, ttl=…)` holds that lease too."""
    found: dict[str, int] = {}
    for sym, fn, _, arg in _factory_ttls(graph, holders):
        if sym not in found and arg.get("k") == "ref" and arg["sym"] in fn.params:
            found[sym] = fn.params.index(arg["sym"])
    return found


def fixed_ttl_factories(graph: GraphView) -> dict[str, tuple[Expr, str]]:
    """Python functions returning a holder class built with a TTL of their own choosing,
    not a parameter (`def hold(self, job_id): return RowLease(self._db, job_id,
    self._policy.ttl_s)`): symbol -> (that TTL expression, its path)."""
    key = ("_fixed_ttl_factories",)
    if key in graph._memo:
        return graph._memo[key]
    found: dict[str, tuple[Expr, str]] = {}
    for sym, fn, path, arg in _factory_ttls(graph, lease_holders(graph)):
        if sym not in found and not (arg.get("k") == "ref" and arg["sym"] in fn.params):
            found[sym] = (arg, path)
    graph._memo[key] = found
    return found


def _factory_ttls(graph: GraphView, holders: dict[str, int]):
    """(function, its fact, its path, the TTL argument) for each of the first two returns
    of a Python function that builds a holder class (`return Lease(…, ttl)`)."""
    for sym, (fn, path) in graph.functions.items():
        if graph.lang.get(path) != "python" or not fn.returns or sym in holders:
            continue
        for ret in fn.returns[:2]:
            target = graph.resolve_callee(ret.get("fn"), Ctx(path)) if ret.get("k") == "call" else None
            index = holders.get(target or "")
            if index is None or not target.endswith(".__init__"):
                continue
            init = graph.functions[target][0]
            arg = ret["args"][index] if index < len(ret.get("args") or ()) \
                else (ret.get("kw") or {}).get(init.param_names[index] if index < len(init.param_names) else "")
            if arg:
                yield sym, fn, path, arg


def field_lease_holders(graph: GraphView) -> dict[str, tuple[str, int]]:
    """Holder methods whose TTL is the object's own (`claim = Claim(r, key, ttl=120)`;
    `with claim.held(): ...`): symbol -> (the class's `__init__`, index of its TTL
    parameter). The lease duration is the constructor's argument for that parameter."""
    key = ("_field_lease_holders",)
    if key in graph._memo:
        return graph._memo[key]
    words = set(graph.catalog.words("renewal")) | set(graph.catalog.words("lease"))
    found: dict[str, tuple[str, int]] = {}
    for sym, (fn, path) in graph.functions.items():
        if graph.lang.get(path) != "python" or not any(m.get("m") == "yields" for m in fn.markers):
            continue
        if fn.enclosing or _duration_param(graph, fn) is not None:
            continue
        init = sym.rsplit(".", 1)[0] + ".__init__"
        if init == sym or init not in graph.functions:
            continue
        duration = _duration_param(graph, graph.functions[init][0])
        if duration is not None and _keeps_renewing(graph, sym, words):
            found[sym] = (init, duration)
    graph._memo[key] = found
    return found


def _keeps_renewing(graph: GraphView, sym: str, words: set[str]) -> bool:
    """Something the holder calls or starts waits on a sleep/timer/ticker, and lease or
    renewal vocabulary is written in it or in its helpers, or a lease site of the catalog
    is set there (a row lease's `held_until = now() + …`, an EXPIRE)."""
    helpers = graph.reachable([sym], limit=24) - {sym}
    vocabulary = set(graph.functions[sym][0].vocabulary)
    waits = renews = False
    for other in helpers:
        vocabulary.update(graph.functions[other][0].vocabulary)
        sites = graph.sites_in.get(other, ())
        waits = waits or any(s.role in _WAITS for s in sites) or _waits_for_event(graph, other)
        renews = renews or any(s.role == "lease" for s in sites)
    return waits and (renews or bool(words & vocabulary))


def _waits_for_event(graph: GraphView, sym: str) -> bool:
    """`await asyncio.wait_for(stop.wait(), timeout=period)`: a wait on an event bounded by
    a deadline returns when the time is up, as a sleep does (catalog leases.toml
    `[renewal] event_waits`: the wrapper and the event's method)."""
    spec = graph.catalog.file("leases").get("renewal", {}).get("event_waits", {})
    wrappers, methods = set(spec.get("wrappers", ())), set(spec.get("methods", ()))
    for call, _ in graph.calls_in.get(sym, ()):
        if call.callee.get("k") != "ext" or call.callee.get("name") not in wrappers or not call.args:
            continue
        inner = call.args[0]
        if inner.get("k") == "call" and (inner.get("fn") or {}).get("k") == "method" \
                and inner["fn"].get("name") in methods and not inner.get("args"):
            return True
    return False


def _duration_param(graph: GraphView, fn: FunctionFact) -> int | None:
    """The parameter named as a TTL (a timer parameter of a holder is its renewal
    period, not the lease)."""
    words = graph.catalog.file("leases").get("renewal", {}).get("store", {}).get("ttl_param_words", ())
    for i, name in enumerate(fn.param_names):
        decl = graph.decls.get(fn.params[i])
        typed = decl is not None and decl.type and decl.type.rsplit(".", 1)[-1] in _DURATION_TYPES
        if any(w in name.lower() for w in words) and (typed or decl is None or not decl.type):
            return i
    return None


def structural_leases(graph: GraphView, helpers: dict[str, tuple[int, int]]) -> list[Lease]:
    holders = lease_holders(graph)
    found = _holder_leases(graph, holders)
    found.extend(_decorator_leases(graph, holders, helpers))
    found.extend(_bracket_leases(graph))
    return found


# -- a renewal started before the work and stopped after it ------------------------------

def renewers(graph: GraphView) -> dict[str, tuple[dict, str, str, "CallFact"]]:
    """Functions (closures included) whose loop renews a lease: symbol -> (TTL expr, its
    path, unit, the renewing call). The renewal is a lease store's renew method (catalog
    `renewal.store`) called in a loop, the TTL its duration argument."""
    key = ("_renewers",)
    if key in graph._memo:
        return graph._memo[key]

    store = graph.catalog.file("leases").get("renewal", {}).get("store", {})
    methods = set(store.get("methods", ()))
    found: dict[str, tuple[dict, str, str, CallFact]] = {}
    renewing = {e["api"] for lang in ("go", "python") for e in graph.catalog.entries(lang, "sites") if e.get("renews")}
    for sym, calls in graph.calls_in.items():
        if sym is None:
            continue
        for call, path in calls:
            if not call.extra.get("loop") and "loop" not in call.scopes:
                continue
            name = call.callee.get("name") or (call.callee.get("sym") or "").rsplit(".", 1)[-1]
            if name not in methods:
                continue
            target = graph.resolve_callee(call.callee, Ctx(path))
            ttl = _ttl_argument(graph, store, call, target) if target else _ttl_by_shape(graph, store, call, path)
            ttl_path = path
            if ttl is None and target is not None:
                # `lease.renew(redis)` whose body re-extends its own TTL (`pexpire(self.key,
                # int(self.ttl * 1000))`): that call's TTL
                own = _renewing_site(graph, target, renewing)
                if own is not None:
                    ttl, ttl_path = (own[0].value, own[2]), own[1]
            if ttl is not None:
                found[sym] = (ttl[0], ttl_path, ttl[1], call)
                break
    for site, path in graph.sites:  # a catalog call or field that re-extends a TTL, in a loop
        if site.role == "lease" and site.api in renewing and site.extra.get("loop") and site.function \
                and site.value is not None and site.function not in found and not site.extra.get("acquires"):
            spec = graph.spec(site)
            found[site.function] = (site.value, path, site.unit or (spec.unit if spec else None) or "s", None)
    graph._memo[key] = found
    return found


def _renewing_site(graph: GraphView, fn_sym: str, renewing: set[str]):
    """(site, path, unit) of the one catalog call in a function's body that re-extends a
    TTL (a renew method of the program that takes no duration)."""
    sites = [s for s in graph.sites_in.get(fn_sym, ()) if s.role == "lease" and s.api in renewing
             and s.value is not None and not s.extra.get("acquires")]
    if len(sites) != 1:
        return None
    spec = graph.spec(sites[0])
    return sites[0], graph.functions[fn_sym][1], sites[0].unit or (spec.unit if spec else None) or "s"


def _ttl_argument(graph: GraphView, store: dict, call: CallFact, target: str) -> tuple[dict, str] | None:
    fn, fn_path = graph.functions[target]
    go = graph.lang.get(fn_path) == "go"
    words = store.get("ttl_param_words", ())
    for i, param in enumerate(fn.params):
        name = fn.param_names[i] if i < len(fn.param_names) else param.rsplit(".", 1)[-1]
        decl = graph.decls.get(param)
        if go and decl is not None and decl.type in store.get("go_ttl_types", ()):
            unit = "ns"
        elif not go and any(w in name.lower() for w in words):
            unit = "ms" if name.lower().endswith("_ms") else "s"
        else:
            continue
        arg = _arg(call, fn, i)
        return (arg, unit) if arg is not None else None
    return None


def _ttl_by_shape(graph: GraphView, store: dict, call: CallFact, path: str) -> tuple[dict, str] | None:
    """A renew method the program does not define (an interface with no constructed
    implementation, an external client): the one argument typed as a duration (Go) or
    named as a TTL (Python)."""

    if graph.lang.get(path) == "go":
        typed = [a for a in call.args if graph.type_of(a, Ctx(path)) in store.get("go_ttl_types", ())]
        return (typed[0], "ns") if len(typed) == 1 else None
    words = store.get("ttl_param_words", ())
    # a flag is no duration (`lock.extend(ttl_s, replace_ttl=True)`)
    named = [(a, k) for k, a in call.kw.items() if any(w in k.lower() for w in words)
             and not (a.get("k") == "unknown" and a.get("text") in ("True", "False", "None"))]
    named += [(a, a["sym"].rsplit(".", 1)[-1]) for a in call.args
              if a.get("k") == "ref" and any(w in a["sym"].rsplit(".", 1)[-1].lower() for w in words)]
    if len(named) != 1:
        return None
    arg, name = named[0]
    return arg, "ms" if name.lower().endswith("_ms") else "s"


def _starters(graph: GraphView) -> dict[str, str]:
    """Functions that start a renewer in the background and return (a goroutine or task
    runs it): starter -> renewer."""
    key = ("_lease_starters",)
    if key in graph._memo:
        return graph._memo[key]
    active = renewers(graph)
    found: dict[str, str] = {}
    for sym in graph.functions:
        if sym in active:
            continue  # the loop runs here: this function blocks, it starts nothing
        todo = list(graph.closures.get(sym, ()))
        seen: set[str] = set()
        while todo:
            inner = todo.pop()
            if inner in seen:
                continue
            seen.add(inner)
            if inner in active:
                found[sym] = inner
                break
            todo.extend(graph.closures.get(inner, ()))
    graph._memo[key] = found
    return found


def _bracket_leases(graph: GraphView) -> list[Lease]:
    """`hb := beginRenewal(…); work(); hb.stop()` / `defer stop()`, and
    `task = asyncio.create_task(self._renew(…))` … `task.cancel()`: an operation lease over
    the calls between the start and the stop, with the TTL the renewer renews."""

    active = renewers(graph)
    starters = _starters(graph)
    found = []
    for caller, calls in graph.calls_in.items():
        if caller is None:
            continue
        for call, path in calls:
            ctx = Ctx(path)
            starter, renewer = _started(graph, call, ctx, starters, active)
            if renewer is None:
                continue
            end = _stop_line(graph, caller, call, calls)
            if end is None and graph.lang.get(path) == "go" and _stops_with(graph, renewer, caller):
                end = graph.functions[caller][0].span.end_line + 1
            if end is None:
                continue
            inside = [c for c, _ in calls if call.span.end_line < c.span.line < end and not c.in_defer]
            values = _values_bound(graph, caller, call.span.end_line, end)
            if not (inside or values) or any(c.extra.get("loop") and not call.extra.get("loop") for c in inside):
                continue  # nothing bracketed, or one renewal across many operations: ownership
            ops: list[str] = []
            for c in inside:
                ops.extend(graph.resolve_callees(c.callee, ctx))
                for arg in [*c.args, *c.kw.values()]:
                    ops.extend(graph.callgraph.value_targets(arg, ctx))
            ttl, rpath, unit, _ = active[renewer]
            if starter is not None:
                sfn, spath = graph.functions[starter]
                tctx = Ctx(spath, graph.call_subst(sfn, call, ctx), (path, call.span.line, call.span.column), starter)
            else:
                # `to_thread(keep, url, receipt, ttl, done)`: the renewer's parameters are
                # this call's arguments
                spawned = graph.spawned_call(call, path)
                rfn = graph.functions[renewer][0]
                tctx = Ctx(rpath, graph.call_subst(rfn, spawned, ctx), (path, call.span.line, call.span.column),
                           renewer) if spawned is not None and graph.resolve_callee(spawned.callee, ctx) == renewer \
                    else Ctx(rpath)
            body = [s.id for s in graph.sites_in.get(caller, ()) if call.span.end_line < s.span.line < end]
            found.append(Lease(
                id=f"site:{path}:{call.span.line}:{call.span.column}",
                location=Location(path, call.span.line, call.span.column, call.span.end_line, call.span.end_column),
                function=caller, duration=ttl, ctx=tctx, operations=list(dict.fromkeys(ops)), helper=renewer,
                unit=unit, body_sites=body, body_calls=inside,
                body_uses=_symbols_used(graph, inside, ctx, values)))
    return found


def _started(graph: GraphView, call: CallFact, ctx, starters: dict[str, str],
             active: dict) -> tuple[str | None, str | None]:
    """(starter, renewer) when this call starts a renewal in the background."""
    target = graph.resolve_callee(call.callee, ctx)
    if target in starters:
        return target, starters[target]
    if target in active and not call.awaited and graph.lang.get(ctx.path) == "python":
        # `task = asyncio.create_task(ledger.renew(job, 60))`: the renewer's coroutine,
        # made here and handed to whatever runs it in the background
        return target, target
    if call.callee.get("k") == "ext":  # create_task(self._renew(…)), start_soon(renew, …)
        for arg in call.args:
            for t in graph.callgraph.value_targets(arg, ctx):
                if t in active:
                    return None, t
    spawned = graph.spawned_call(call, ctx.path)  # `tg.start_soon(keep_alive, lock, ttl)`
    if spawned is not None and graph.resolve_callee(spawned.callee, ctx) in active:
        return None, graph.resolve_callee(spawned.callee, ctx)
    if graph.lang.get(ctx.path) == "go":  # `go func() { … }()`, `g.Go(func() error { … })`
        if target in active and call.in_go:
            return None, target
        background = graph.catalog.table("go", "executors").get("background", ())
        if call.callee.get("k") == "method" and call.callee.get("name") in background:
            for arg in call.args:
                for t in graph.callgraph.value_targets(arg, ctx):
                    if t in active:
                        return None, t
    return None, None


def _stops_with(graph: GraphView, renewer: str, caller: str) -> bool:
    """A Go renewal closure whose loop also waits on a channel of the function that started
    it (`case <-done: return`, the function closing `done` when its work ends): it lasts as
    long as that function's work."""
    if graph.functions[renewer][0].enclosing != caller:
        return False
    prefix = caller + "."
    return any(m.get("m") == "loop" and any((t.get("sym") or "").startswith(prefix)
                                            and "." not in t["sym"][len(prefix):] for t in m.get("ticks") or ())
               for m in graph.functions[renewer][0].markers)


def _stop_line(graph: GraphView, caller: str, start: CallFact, calls) -> int | None:
    """Where the renewal the start call returned is stopped: a later call on its handle
    (`hb.stop()`, `task.cancel()`, `stop()`), or a signal on an event the renewer was
    given (`to_thread(keep, …, stop)` … `stop.set()`, catalog `renewal.stop_signals`); a
    deferred stop lasts to the function's end."""
    handles: set[str] = set()
    for b_sym, binds in _local_bindings(graph, caller):
        for b, _ in binds:
            if b.span.line <= start.span.line <= b.span.end_line and b.expr.get("k") == "call":
                handles.add(b_sym)
    stop_signals = graph.catalog.file("leases").get("renewal", {}).get("stop_signals", {})
    signals, starts = set(stop_signals.get("methods", ())), set(stop_signals.get("starts", ()))
    given = {a["sym"] for a in _given_to(start) if a.get("k") == "ref" and a["sym"].startswith(caller + ".")}
    # a task group that runs the renewer is stopped by cancelling its scope
    # (`tg.start_soon(keep, …)` … `tg.cancel_scope.cancel()`)
    group = _root_sym(start.callee.get("x")) if start.callee.get("k") == "method" else None
    if not handles and not given and group is None:
        return None
    for c, _ in calls:
        if c.span.line <= start.span.end_line:
            continue
        callee = c.callee
        x = callee.get("x") or {}
        named = callee.get("sym") if callee.get("k") == "ref" else x.get("sym") if x.get("k") == "ref" else None
        if named in handles and callee.get("name") in starts:
            continue  # `keeper.start()`: the thread built on the start line begins here
        if named in handles or named in given and callee.get("name") in signals \
                or group is not None and callee.get("name") == "cancel" and _root_sym(x) == group:
            if c.in_defer:
                return graph.functions[caller][0].span.end_line + 1
            return c.span.line
    return None


def _cleanup(call: CallFact, scope: str) -> bool:
    """A call in an `except` or `finally` inside the lease's block runs after the operation
    failed or ended (`except CancelledError: await jobs.fail(…)`): cleanup, not the work
    the lease supervises."""
    after = call.scopes[call.scopes.index(scope) + 1:]
    return any(s == "finally" or s.startswith("except") for s in after)


def _root_sym(expr) -> str | None:
    """The variable a receiver chain starts from (`tg.cancel_scope` -> `tg`)."""
    while isinstance(expr, dict) and expr.get("k") == "field":
        expr = expr.get("x")
    return expr.get("sym") if isinstance(expr, dict) and expr.get("k") == "ref" else None


def _given_to(call: CallFact) -> list:
    """The arguments of a start call, and of the call it wraps (`create_task(to_thread(keep,
    lease, stop))`)."""
    found = []
    for arg in [*call.args, *call.kw.values()]:
        found.append(arg)
        if arg.get("k") == "call":
            found.extend([*(arg.get("args") or ()), *(arg.get("kw") or {}).values()])
        elif arg.get("k") == "tuple":  # `Thread(target=keep, args=(lease, stop))`
            found.extend(arg.get("items") or ())
        elif arg.get("k") == "dict":  # `Thread(target=keep, kwargs={"stop": stop, …})`
            found.extend(v for _, v in arg.get("items") or ())
    return found


def _local_bindings(graph: GraphView, caller: str):
    key = ("_local_bindings", caller)
    if key not in graph._memo:
        prefix = caller + "."
        graph._memo[key] = [(sym, binds) for sym, binds in graph.bindings.items()
                            if sym.startswith(prefix) and "." not in sym[len(prefix):]]
    return graph._memo[key]


def _holder_leases(graph: GraphView, holders: dict[str, int]) -> list[Lease]:

    found = []
    by_field = field_lease_holders(graph)
    for caller, calls in graph.calls_in.items():
        for call, path in calls:
            if graph.lang.get(path) != "python":
                continue
            ctx = Ctx(path)
            target = graph.resolve_callee(call.callee, ctx)
            built = None
            fixed = fixed_ttl_factories(graph).get(target or "")
            by_object = object_lease_holders(graph).get(target or "")
            if target in by_field and by_object is None:  # (a lease object handed in says more)
                built = _constructor_call(graph, call.callee.get("x"), ctx)
                if built is None:
                    continue
            elif target not in holders and fixed is None and by_object is None:
                continue
            scope = f"holder:{call.span.line}:{call.span.column}"
            ops: list[str] = []
            spans = []
            inside = []
            for inner, inner_path in calls:
                if scope in inner.scopes and not _cleanup(inner, scope):
                    inside.append(inner)
                    spans.append(inner.span)
                    ops.extend(graph.resolve_callees(inner.callee, Ctx(inner_path)))
                    for arg in [*inner.args, *inner.kw.values()]:
                        ops.extend(graph.callgraph.value_targets(arg, Ctx(inner_path)))
            body = [site.id for site in graph.sites_in.get(caller, ())
                    if any(_within(site.span, span) for span in spans)]
            uses = _symbols_used(graph, inside, ctx)
            if not ops and not body and not uses:
                continue
            ops = list(dict.fromkeys(ops))
            if fixed is not None:  # the TTL the factory chose, for the object it is called on
                fields = object_fields(graph, call.callee.get("x"), ctx) if call.callee.get("k") == "method" else {}
                lease = Lease(
                    id=f"site:{path}:{call.span.line}:{call.span.column}",
                    location=Location(path, call.span.line, call.span.column, call.span.end_line, call.span.end_column),
                    function=caller, duration=fixed[0], ctx=Ctx(fixed[1], dict(fields)), operations=ops, helper=target,
                    unit="s")
            elif by_object is not None:  # the field of the lease object handed in
                lease = _lease(graph, call, path, caller, graph.functions[target][0], by_object[0], ops, target)
                lease.duration = {"k": "field", "x": lease.duration, "name": by_object[1]} \
                    if lease.duration is not None else None
            elif built is not None:  # the TTL is the constructor's argument
                init, index = by_field[target]
                lease = _lease(graph, call, path, caller, graph.functions[init][0], index, ops, target,
                               args_from=built)
            else:
                lease = _lease(graph, call, path, caller, graph.functions[target][0], holders[target], ops, target)
            lease.body_sites = body
            lease.body_calls = inside
            lease.body_uses = uses
            found.append(lease)
    return found


def _symbols_used(graph: GraphView, calls: list[CallFact], ctx: Ctx, values: list | None = None) -> list[str]:
    """The symbols the given calls go through (their receivers' chains and arguments), and
    those the given values read."""
    found: dict[str, None] = {}
    exprs = [e for call in calls for e in (call.callee, *call.args, *call.kw.values())] + list(values or ())
    for expr in exprs:
        for sub in walk_exprs(expr):
            sym = graph.resolve_sym(sub, ctx)
            if sym:
                found[sym] = None
    return list(found)


def _values_bound(graph: GraphView, caller: str, after: int, before: int) -> list:
    """The values the caller binds between two lines: a Go request on an external client is
    no call fact of its own (`resp, err := w.http.Do(req)`), only the value of what it is
    bound to."""
    return [b.expr for _, b, _ in graph.bindings_by_function().get(caller, ()) if after < b.span.line < before]


def _decorator_leases(graph: GraphView, holders: dict[str, int],
                      helpers: dict[str, tuple[int, int]]) -> list[Lease]:

    found = []
    factories: dict[str, int | None] = {}
    for sym, (fn, path) in graph.functions.items():
        for mark in fn.markers:
            if mark.get("m") != "decorated":
                continue
            call = call_at(graph, path, mark["line"], mark["col"])
            if call is None:
                continue
            factory = graph.resolve_callee(call.callee, Ctx(path))
            if factory is None:
                continue
            if factory not in factories:
                factories[factory] = _armed_param(graph, factory, holders, helpers)
            index = factories[factory]
            if index is None:
                continue
            outer = graph.functions[factory][0]
            found.append(_lease(graph, call, path, call.function, outer, index, [sym], factory))
    return found


def _armed_param(graph: GraphView, factory: str, holders: dict[str, int],
                 helpers: dict[str, tuple[int, int]]) -> int | None:
    """The factory parameter that arms a holder or runner inside its nested wrapper."""

    outer = graph.functions[factory][0]
    todo, seen = list(graph.closures.get(factory, ())), set()
    while todo:
        closure = todo.pop()
        if closure in seen:
            continue
        seen.add(closure)
        todo.extend(graph.closures.get(closure, ()))
        for call, path in graph.calls_in.get(closure, ()):
            target = graph.resolve_callee(call.callee, Ctx(path))
            index = holders.get(target) if target in holders else (helpers[target][0] if target in helpers else None)
            if index is None:
                continue
            arg = _arg(call, graph.functions[target][0], index)
            if arg and arg.get("k") == "ref" and arg["sym"] in outer.params:
                return outer.params.index(arg["sym"])
    return None


def _within(inner, outer) -> bool:
    return (outer.line, outer.column) <= (inner.line, inner.column) and \
        (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column)


def _arg(call: CallFact, fn: FunctionFact, index: int):
    if index < len(call.args):
        return call.args[index]
    if index < len(fn.param_names):
        return call.kw.get(fn.param_names[index])
    return None


def _lease(graph: GraphView, call: CallFact, path: str, caller: str | None, fn: FunctionFact,
           index: int, ops: list[str], helper: str, args_from: CallFact | None = None) -> Lease:

    duration = _arg(args_from or call, fn, index)
    if duration is None:  # the parameter's default
        defaults = [b for b, _ in graph.bindings.get(fn.params[index], ()) if b.is_default]
        duration = defaults[0].expr if defaults else None
    name = next((a["v"] for a in call.args if a.get("k") == "str" and 0 < len(a.get("v", "")) < 40), None)
    return Lease(
        id=f"site:{path}:{call.span.line}:{call.span.column}",
        location=Location(path, call.span.line, call.span.column, call.span.end_line, call.span.end_column),
        function=caller, duration=duration, ctx=Ctx(path), operations=ops, helper=helper, unit="s", name=name)


# -- DB row leases -----------------------------------------------------------------------

def row_lease_writers(graph: GraphView) -> set[str]:
    """Functions whose SQL moves a timestamp column to now() + an interval (any amount;
    "now" is catalog `[sql] now_functions`): each call renews a row's lease."""
    key = ("_row_lease_writers",)
    if key in graph._memo:
        return graph._memo[key]
    import re

    from deadline_audit.catalog import sql_now_pattern

    spec = graph.catalog.file("leases").get("sql", {})
    functions = spec.get("now_functions", ())
    found: set[str] = set()
    clocks = SqlLeaseKnowledge(graph.catalog, "python").clocks
    if functions:
        sql = re.compile(rf"\bUPDATE\b[\s\S]*?\bSET\b[\s\S]*?\w+\s*=\s*{sql_now_pattern(functions)}\s*\+",
                         re.IGNORECASE)
        for sym, calls in graph.calls_in.items():
            if sym is None:
                continue
            for call, path in calls:
                if any(_sql_text(graph, arg, Ctx(path), sql) for arg in call.args[:3]) \
                        or _builder_sets_now_plus(call, clocks, spec):
                    found.add(sym)
                    break
    graph._memo[key] = found
    return found


def _builder_sets_now_plus(call, clocks: frozenset[str], spec: dict) -> bool:
    """SQLAlchemy's expression language: `update(t)….values(lease_until=func.now() +
    func.make_interval(secs=ttl))`, or a Python clock plus a timedelta (catalog `[sql]
    builder_methods`, `clocks`)."""
    callee = call.callee
    if callee.get("k") != "method" or callee.get("name") not in spec.get("builder_methods", ()) or not call.kw:
        return False
    return any(now_plus_amount(value, clocks) is not None for value in call.kw.values())


def _sql_text(graph: GraphView, arg, ctx, sql) -> bool:
    """A SQL statement written here or held by a constant/local bound to a string literal
    (bindings read directly: no value resolution per argument)."""
    if not isinstance(arg, dict):
        return False
    k = arg.get("k")
    if k == "str":
        text = arg.get("v")
    elif k == "ref":
        memo = graph._memo.setdefault(("_sql_of",), {})
        sym = arg["sym"]
        if sym not in memo:
            texts = [b.expr.get("v") for b, _ in graph.bindings.get(sym, ())[:4] if b.expr.get("k") == "str"]
            memo[sym] = texts[0] if len(texts) == 1 else None
        text = memo[sym]
    else:
        return False
    return isinstance(text, str) and len(text) < 4000 and sql.search(text) is not None


def _constructor_call(graph: GraphView, receiver, ctx) -> CallFact | None:
    """The constructor call that built a holder's receiver: written in place
    (`Claim(...).held()`) or the one value of a local (`claim = Claim(...)`)."""
    expr = receiver
    if expr and expr.get("k") == "ref":
        bound = [b for b, _ in graph.bindings.get(expr["sym"], ()) if not b.is_default]
        expr = bound[0].expr if len(bound) == 1 else None
    if not expr or expr.get("k") != "call" or (expr.get("fn") or {}).get("k") != "fnref":
        return None
    return _ExprCall(list(expr.get("args") or ()), dict(expr.get("kw") or {}))  # type: ignore[return-value]


class _ExprCall:
    """The arguments of a call written as an expression, read like a CallFact's."""

    def __init__(self, args: list, kw: dict) -> None:
        self.args, self.kw = args, kw
