"""DA103 renewal-slower-than-lease: a renewal period not comfortably shorter than the TTL.

A renewal loop is a loop (marker passes go_marks_renewal / py_marks_renewal) that renews a
lease and waits between renewals: a sleep/timer in the loop, or a ticker it receives from
(`<-t.C`, the ticker held in a local or a struct field). What it renews, and so the TTL
it must beat, comes in three kinds, directly in the loop or in a function the loop calls:
- a TTL site of the catalog marked `renews` (Redis EXPIRE/PEXPIRE …): its own value;
- a `renew` marker (catalog leases.toml `[[renewal.*]]`) that restates no TTL: etcd
  `KeepAliveOnce` / etcd3 `refresh()` renew the TTL given at acquisition (an `acquired_by`
  site in the loop's function, a function it is written in, or a direct caller); Temporal
  heartbeats beat the `HeartbeatTimeout` of the ActivityOptions the enclosing activity is
  executed with (Go: linked through the workflow context `WithActivityOptions` built; the
  activity by function value or by registered name; Python: the `heartbeat_timeout=` of
  the same `execute_activity` call);
- a hand-written lease store method (`[renewal.store]` names: Extend, renew, …) resolved in
  the module, whose duration parameter receives the TTL.
Period P and TTL T are compared on effective values: P ≥ T is an error, P > T × warn-ratio
a warning. Unresolved → no finding; two candidate TTLs that disagree → no finding.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from deadline_audit.analysis.instances import Fields, object_fields
from deadline_audit.analysis.leases import row_lease_writers
from deadline_audit.extract.sql_leases import now_plus_amount
from deadline_audit.checks.evidence import describe_seconds, first_source, flow_steps, location_of
from deadline_audit.facts import CallFact, Expr, SiteFact, walk_exprs
from deadline_audit.findings import Finding, Location, Related
from deadline_audit.graph import Ctx, TimeoutGraph, _walk

RULE_ID, RULE_NAME, SEVERITY = "DA103", "renewal-slower-than-lease", "error"


@dataclass(frozen=True)
class Ttl:
    """What a renewal must beat: a site node of the graph, or an argument of a store call."""

    key: str  # the site id, or "arg:<path>:<line>:<col>"
    location: Location
    seconds: float | None
    default_seconds: float | None
    what: str  # related-location message
    # what the TTL is evaluated from, to evaluate it again for one object (per_instance)
    expr: Expr | None = None
    ctx: Ctx | None = None
    unit: str | None = None


@dataclass
class Loop:
    periods: list[str] = field(default_factory=list)  # period site ids
    ttls: list[Ttl] = field(default_factory=list)
    additive: bool = False  # renewed by an extension that adds to the TTL left (redis-py extend)
    temporal: bool = False  # renewed by Temporal heartbeats: the TTL depends on the activity


def check(graph: TimeoutGraph, options: dict) -> Iterable[Finding]:
    ratio = float(options.get("warn-ratio", _default_ratio()))
    loops = sorted(renewal_loops(graph).items())
    loops.extend(sorted(_option_pairs(graph).items()))
    for (fn_sym, _), loop in loops:
        ttls = {t.key: t for t in loop.ttls}
        if not loop.periods or not ttls:
            continue
        values = {t.seconds for t in ttls.values()}
        if len(values) != 1 or None in values or any(_seconds(graph, p) is None for p in loop.periods):
            # a helper whose period is its parameter: compared at each call, with what it renews there
            yield from _per_call_site(graph, fn_sym, loop, ratio)
            # a method whose period or TTL are fields of its object: per object built
            yield from _per_instance(graph, fn_sym, loop, ratio)
            # a period field that objects set differently, defaulted from the TTL field
            yield from _defaults_to_ttl(graph, loop, ratio)
        if len(values) != 1 or None in values:
            continue  # unresolved, or two candidate TTLs that disagree: no link
        ttl = min(ttls.values(), key=lambda t: (t.location.path, t.location.line))
        t = ttl.seconds
        for period in sorted(set(loop.periods)):
            p = _seconds(graph, period)
            if p is None and loop.temporal and _own_heartbeat_timeout(graph, period):
                p = t  # `time.NewTicker(activity.GetInfo(ctx).HeartbeatTimeout)`: the TTL itself
            if p is None or p <= 0 or t <= 0 or p <= t * ratio or (loop.additive and p < t):
                continue
            yield _finding(graph, period, ttl, p, t, ratio)


def renewal_loops(graph: TimeoutGraph) -> dict[tuple[str, str], Loop]:
    """(function, loop) → the loop's periods and the TTLs it renews."""
    key = ("_da103_loops",)
    if key in graph._memo:
        return graph._memo[key]
    spec = graph.catalog.file("leases")
    renewing = _renewing_apis(graph)
    loops: dict[tuple[str, str], Loop] = {}
    tickers: dict[str, list[str]] = {}  # holder symbol → ticker site ids
    for site, path in graph.sites:
        if site.role == "ticker" and site.stored_in:
            holder = graph.resolve_sym(site.stored_in, Ctx(path))
            if holder:
                tickers.setdefault(holder, []).append(site.id)
        loop = site.extra.get("loop")
        if loop is None or site.function is None:
            continue
        entry = loops.setdefault((site.function, loop), Loop())
        if site.role in ("sleep", "timer") or site.role == "ticker" and not site.stored_in:
            entry.periods.append(site.id)  # a ticker made by the loop itself: `for range time.Tick(d)`
        elif site.role == "lease" and site.api in renewing and not site.extra.get("acquires"):
            entry.ttls.append(_site_ttl(graph, site.id, "TTL set here"))
    for fn_sym, (fn, path) in graph.functions.items():
        for m in fn.markers:
            if m.get("m") == "loop" and m.get("ticks"):
                entry = loops.setdefault((fn_sym, f"{m['line']}:{m['col']}"), Loop())
                for tick in m["ticks"]:
                    entry.periods.extend(tickers.get(graph.resolve_sym(tick, Ctx(path)), ()))

    def paced_elsewhere(fn_sym: str, loop: str | None) -> bool:
        """A renewal inside a loop of a callee that waits its own period is paced by that
        loop (a keeper task started by the caller), not by the caller's loop (which may
        only retry taking the lease)."""
        inner = loops.get((fn_sym, loop)) if loop else None
        return inner is not None and bool(inner.periods)

    paced = {f for (f, _), entry in loops.items() if entry.periods}  # functions with a timed loop
    helper_ttls = _ttls_by_function(graph, renewing)
    acquiring = _ttls_by_function(graph, renewing, acquiring=True)
    renews = _renew_markers(graph)
    ttl_of_renew = _RenewTtls(graph, spec)
    for fn_sym, (fn, path) in graph.functions.items():
        for m, _ in renews.get(fn_sym, ()):
            if m.get("loop"):
                entry = loops.setdefault((fn_sym, m["loop"]), Loop())
                found = ttl_of_renew(m, fn_sym)
                entry.ttls.extend(found)
                entry.additive = entry.additive or bool(found and ttl_of_renew.additive(m))
                entry.temporal = entry.temporal or ttl_of_renew.is_temporal(m)
        for call, cpath in graph.calls_in.get(fn_sym, ()):
            loop = call.extra.get("loop")
            if not loop:
                continue
            target = graph.resolve_callee(call.callee, Ctx(cpath))
            if target is None:
                continue
            if call.in_go and target in paced:
                continue  # `go w.keep(ctx, id)`: a keeper with its own timer, started by this loop
            entry = loops.setdefault((fn_sym, loop), Loop())
            stored = _store_ttl(graph, spec, call, cpath, target)
            entry.ttls.extend(stored)
            if target in acquiring and _taken_before(graph, fn_sym, loop, target):
                # `k.extend(ctx, id)` first, then a ticker running it again: the statement
                # also takes a free row, but here it keeps the row already taken
                entry.ttls.extend(acquiring[target])
            for f in graph.reachable([target], limit=40):
                if stored and f == target:
                    continue  # its statement's TTL is the argument just read, at this call
                entry.ttls.extend(t for t, inner in helper_ttls.get(f, ()) if not paced_elsewhere(f, inner))
                for m, _ in renews.get(f, ()):
                    if not paced_elsewhere(f, m.get("loop")):
                        entry.ttls.extend(ttl_of_renew(m, fn_sym))
    # a timer whose callback arms it again (`threading.Timer(every, self._renew)` with
    # `_renew` calling back into the method that armed it): a loop with no loop statement
    for site_id, holder, callback in _rearming_timers(graph):
        entry = loops.setdefault((holder, f"rearm:{site_id}"), Loop())
        entry.periods.append(site_id)
        for f in graph.reachable([callback], limit=40):
            entry.ttls.extend(t for t, inner in helper_ttls.get(f, ()) if not paced_elsewhere(f, inner))
            for m, _ in renews.get(f, ()):
                if not paced_elsewhere(f, m.get("loop")):
                    entry.ttls.extend(ttl_of_renew(m, callback))
            for call, cpath in graph.calls_in.get(f, ()):
                target = graph.resolve_callee(call.callee, Ctx(cpath))
                if target is not None and not call.extra.get("loop"):
                    entry.ttls.extend(_store_ttl(graph, spec, call, cpath, target))
    graph._memo[key] = loops
    return loops


def _rearming_timers(graph: TimeoutGraph) -> list[tuple[str, str, str]]:
    """(timer site, the function arming it, the callback) for one-shot timers given a
    callback (catalog `callback`) that leads back to the function arming the timer."""
    found = []
    for site, path in graph.sites:
        spec = graph.spec(site)
        if site.role != "timer" or site.function is None or site.extra.get("loop") or spec is None \
                or (spec.callback is None and spec.callback_kw is None):
            continue
        for call, _ in graph.calls_in.get(site.function, ()):
            if not (call.span.line, call.span.column) <= (site.span.line, site.span.column) \
                    <= (call.span.end_line, call.span.end_column):
                continue
            name = call.callee.get("name") or ""
            if not (spec.matches_func(name) if call.callee.get("k") == "ext" else spec.matches_method(name)):
                continue
            arg = call.args[spec.callback] if spec.callback is not None and spec.callback < len(call.args) \
                else call.kw.get(spec.callback_kw or "")
            callback = _function_value(graph, arg, Ctx(path)) if arg else None
            if callback and _arms_again(graph, callback, site.function):
                found.append((site.id, site.function, callback))
            break
    return found


def _arms_again(graph: TimeoutGraph, callback: str, holder: str) -> bool:
    """Does the callback lead back to the function that armed its timer, or reset a timer
    itself (catalog `rearms`: `t.Reset(d)` in a `time.AfterFunc` callback)?"""
    reached = graph.reachable([callback], limit=40) | {callback}
    if holder in reached:
        return True
    return any((spec := graph.spec(s)) is not None and spec.rearms for f in reached for s in graph.sites_in.get(f, ()))


def _function_value(graph: TimeoutGraph, expr: Expr, ctx: Ctx) -> str | None:
    """The function a value names: `self._renew`, `r.renew`, `renew`, a closure."""
    if expr.get("k") in ("ref", "fnref") and expr.get("sym") in graph.functions:
        return expr["sym"]
    if expr.get("k") in ("field", "method"):
        return graph.resolve_callee({**expr, "k": "method"}, ctx)
    sym = graph.resolve_sym(expr, ctx)
    if sym in graph.functions:
        return sym
    # a local holding a closure (`var renew func(); renew = func() { …; t.Reset(d) }`)
    values = [b.expr for b, _ in graph.bindings.get(sym or "", ())[:4]]
    found = [v["sym"] for v in values if v.get("k") in ("fnref", "ref") and v.get("sym") in graph.functions]
    return found[0] if len(found) == 1 else None


def _per_call_site(graph: TimeoutGraph, loop_fn: str, loop: Loop, ratio: float) -> Iterable[Finding]:
    """A renewal helper whose period is a parameter (`pulse(period)` with a
    `sleep(period)` loop, here or in a closure): at each call of the helper, the argument
    is the period and — for Temporal heartbeats — the calling activity's HeartbeatTimeout
    is the TTL. Reported at the argument."""
    sites = {s.id: (s, p) for s, p in graph.sites if s.id in set(loop.periods)}
    chain = graph.enclosing_chain(loop_fn)
    static = [t for t in loop.ttls if not loop.temporal]
    renew_ttls = _RenewTtls(graph, graph.catalog.file("leases")) if loop.temporal else None
    for period_id in sorted(sites):
        site, site_path = sites[period_id]
        value = site.value or {}
        found = next(((h, ps) for h in chain for ps in [_params_read(graph, value, h)] if ps), None)
        if found is None:
            continue
        holder, read = found
        fn = graph.functions[holder][0]
        unit = site.unit or (graph.spec(site).unit if graph.spec(site) else None)
        for call, path, caller in _calls_of(graph).get(holder, ()):
            given = [a for i in read for a in [call.args[i] if i < len(call.args) else call.kw.get(fn.param_names[i])]
                     if a is not None]
            if not given:
                continue  # the helper's own default: judged where the helper is
            arg = given[0]
            subst = graph.call_subst(fn, call, Ctx(path))
            # `period = every if every is not None else ttl / 3`: evaluated with this call's arguments
            p = graph.seconds(value, Ctx(site_path, subst, fn=holder), unit)
            ttls = static or (renew_ttls.temporal().get(caller, []) if renew_ttls else [])
            if len(ttls) > 1:  # a helper several classes call: the lease this caller's class took
                ttls = [t for t in ttls if _acquired_by_owner_of(graph, t, caller)] or ttls
            seconds = {t.key: t.seconds for t in ttls}
            if None in seconds.values() and static:
                # `lock(name, timeout=ttl)` in the helper, its TTL a parameter too
                seconds = {t.key: graph.seconds(t.expr, Ctx(t.ctx.path, subst, fn=holder), t.unit)
                           if t.expr is not None and t.ctx is not None and _params_read(graph, t.expr, holder)
                           else t.seconds for t in ttls}
            if None in seconds.values() and static:
                # `m.Hold(ctx, every)` on an object built with its TTL (`mutex.New(…, ttl)`)
                fields = object_fields(graph, call.callee.get("x"), Ctx(path)) \
                    if call.callee.get("k") == "method" else None
                if fields:
                    seconds = {t.key: graph.seconds(t.expr, _with(t.ctx, fields), t.unit) if t.expr is not None
                               else None for t in ttls}
            values = set(seconds.values())
            if p is None and loop.temporal and len(values) == 1 and None not in values \
                    and _is_heartbeat_timeout(graph, arg, path):
                # `keepAlive(ctx, activity.GetInfo(ctx).HeartbeatTimeout, …)`: the TTL itself
                p = next(iter(values))
            if (p is None or None in values) and len(ttls) == 1:
                # neither resolves, both computed from one value (`every := c.ackWait * 2 / 3`
                # against `AckWait: c.ackWait`): their ratio does not depend on it
                share = _share_of_ttl(graph, value, Ctx(site_path, fn=holder), unit, fn, call, Ctx(path, fn=caller),
                                      ttls[0])
                if share is not None and share > ratio and not (loop.additive and share < 1):
                    yield _share_finding(graph, share, ratio, holder, call, arg, path, ttls[0], period_id, value)
                continue
            if p is None or p <= 0 or len(values) != 1 or None in values:
                continue
            ttl = min(ttls, key=lambda t: (t.location.path, t.location.line))
            t = seconds[ttl.key]
            if t <= 0 or p <= t * ratio or (loop.additive and p < t):
                continue
            at = arg.get("at") or [call.span.line, call.span.column]
            name = holder.rsplit(".", 1)[-1]
            severity, head, consequence = _verdict(p, t, ratio, f"the period given to {name} here")
            yield Finding(
                rule_id=RULE_ID, rule=RULE_NAME, severity=severity,
                message=f"{head}: {consequence}.",
                location=Location(path, at[0], at[1]),
                related=[Related(ttl.what if ttl.seconds is not None else
                                 f"TTL set here ({describe_seconds(t)} for this object)", ttl.location),
                         Related(f"{name} renews every {(value.get('sym') or 'period').rsplit('.', 1)[-1]} here",
                                 location_of(graph, period_id))],
                flow=[],
                fix=f"renew at about a third of the TTL (every {describe_seconds(t / 3)}).",
            )


def _acquired_by_owner_of(graph: TimeoutGraph, ttl: Ttl, caller: str) -> bool:
    """Is the TTL's site in `caller`, or in a method of the same type?"""
    site = _site_facts(graph).get(ttl.key, (None, ""))[0]
    where = site.function if site is not None else None
    if where is None or caller is None:
        return False
    if where == caller:
        return True

    def owner(fn_sym: str) -> str | None:
        outermost = graph.enclosing_chain(fn_sym)[-1]
        return graph.functions[outermost][0].receiver_type if outermost in graph.functions else None

    mine = owner(caller)
    return mine is not None and owner(where) == mine


_PER_SECOND = {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0}


def _share_of_ttl(graph: TimeoutGraph, period: Expr, site_ctx: Ctx, unit: str | None, fn, call: CallFact,
                  caller: Ctx, ttl: Ttl) -> float | None:
    """P / T when the TTL is one unresolved value V and the period at this call is computed
    from V alone: both evaluated with V set to two probe values, the same ratio both times
    (a ratio that moves with V — `ttl - 5s` — says nothing)."""
    if ttl.expr is None or ttl.ctx is None or ttl.unit not in _PER_SECOND or unit not in _PER_SECOND:
        return None
    source = graph.resolve_sym(ttl.expr, ttl.ctx)
    if not source or graph.value(ttl.expr, ttl.ctx) is not None:
        return None
    shares = []
    for probe in (60.0, 3600.0):
        held = ({"k": "num", "v": probe * _PER_SECOND[ttl.unit], "u": None}, Ctx(caller.path))
        subst = graph.call_subst(fn, call, Ctx(caller.path, {source: held}, fn=caller.fn))
        p = graph.seconds(period, Ctx(site_ctx.path, {**subst, source: held}, fn=site_ctx.fn), unit)
        t = graph.seconds(ttl.expr, Ctx(ttl.ctx.path, {source: held}, fn=ttl.ctx.fn), ttl.unit)
        if p is None or t is None or p <= 0 or t <= 0:
            return None
        shares.append(p / t)
    return shares[0] if abs(shares[0] - shares[1]) < 1e-9 else None


def _defaults_to_ttl(graph: TimeoutGraph, loop: Loop, ratio: float) -> Iterable[Finding]:
    """`if o.ProgressEvery <= 0 { o.ProgressEvery = o.AckWait }`: a period field, which a
    default computes from the TTL field it renews, where the period or the TTL has no
    single value (objects built differently): every object built without the period
    renews at that share of its TTL, whatever the TTL is. Reported at the default."""
    if loop.temporal or len({t.key for t in loop.ttls}) != 1:
        return
    ttl = loop.ttls[0]
    if ttl.expr is None or ttl.ctx is None or ttl.unit not in _PER_SECOND:
        return
    source = graph.resolve_sym(ttl.expr, ttl.ctx)
    if not source or graph.decls.get(source) is None or graph.decls[source].kind != "field":
        return
    for period_id in sorted(set(loop.periods)):
        if period_id not in _site_facts(graph):
            continue
        site, site_path = _site_facts(graph)[period_id]
        unit = _unit(graph, site)
        period_field = graph.resolve_sym(site.value, Ctx(site_path))
        if unit not in _PER_SECOND or not period_field or period_field == source or graph.decls.get(period_field) is None:
            continue
        for binding, path in graph.bindings.get(period_field, ()):
            if source not in {graph.resolve_sym(e, Ctx(path)) for e in walk_exprs(binding.expr)}:
                continue
            shares = []
            for probe in (60.0, 3600.0):
                held = ({"k": "num", "v": probe * _PER_SECOND[ttl.unit], "u": None}, Ctx(path))
                p = graph.seconds(binding.expr, Ctx(path, {source: held}), unit)
                shares.append(p / probe if p is not None and p > 0 else None)
            share = shares[0]
            if share is None or shares[1] is None or abs(share - shares[1]) > 1e-9:
                continue
            if share <= ratio or (loop.additive and share < 1):
                continue
            name, held = period_field.rsplit(".", 1)[-1], source.rsplit(".", 1)[-1]
            severity, _, consequence = _verdict(share, 1.0, ratio, name)
            told = f"{name} defaults to {share:.2g} × {held}, the TTL it renews"
            told += "" if share >= 1 else f" (more than {ratio:g} of it)"
            yield Finding(
                rule_id=RULE_ID, rule=RULE_NAME, severity=severity,
                message=f"{told}, whatever {held} is set to: every object built without {name} "
                        f"renews that late: {consequence}.",
                location=Location(path, binding.span.line, binding.span.column),
                related=[Related("TTL set here", ttl.location),
                         Related(f"the renewal waits {name} here", location_of(graph, period_id))],
                flow=[],
                fix=f"default {name} to about a third of the TTL ({held} / 3).",
            )


def _share_finding(graph: TimeoutGraph, share: float, ratio: float, holder: str, call: CallFact, arg: Expr,
                   path: str, ttl: Ttl, period_id: str, value: Expr) -> Finding:
    at = arg.get("at") or [call.span.line, call.span.column]
    name = holder.rsplit(".", 1)[-1]
    source = graph.resolve_sym(ttl.expr, ttl.ctx) or ""
    held = source.split(":", 2)[-1].rsplit("/", 1)[-1]
    if share >= 1:
        severity, head = "error", f"the period given to {name} here is {share:.2g} × the TTL it renews ({held})"
        consequence = "the lease lapses before it is renewed, so another holder can take it while this one is alive"
    else:
        severity = "warning"
        head = f"the period given to {name} here is {share:.2g} of the TTL it renews ({held}), more than {ratio:g}"
        consequence = "one slow or failed renewal lets the lease lapse while its holder is alive"
    return Finding(
        rule_id=RULE_ID, rule=RULE_NAME, severity=severity,
        message=f"{head}, whatever {held.rsplit('.', 1)[-1]} is set to: {consequence}.",
        location=Location(path, at[0], at[1]),
        related=[Related("TTL set here", ttl.location),
                 Related(f"{name} renews every {(value.get('sym') or 'period').rsplit('.', 1)[-1]} here",
                         location_of(graph, period_id))],
        flow=[],
        fix=f"renew at about a third of the TTL ({held.rsplit('.', 1)[-1]} / 3).",
    )


def _own_heartbeat_timeout(graph: TimeoutGraph, period: str) -> bool:
    """Is the period the running activity's own heartbeat timeout, read from its info
    (catalog `[temporal.*] activity_info` / `heartbeat_field`)?"""
    site, path = _site_facts(graph).get(period, (None, ""))
    return _is_heartbeat_timeout(graph, site.value if site is not None else None, path)


def _is_heartbeat_timeout(graph: TimeoutGraph, value: Expr | None, path: str) -> bool:
    """`activity.GetInfo(ctx).HeartbeatTimeout` (or a local holding the info)."""
    lang = "go" if graph.lang.get(path) == "go" else "python"
    spec = graph.catalog.file("leases").get("temporal", {}).get(lang, {})
    if not value or value.get("k") != "field" or value.get("name") != spec.get("heartbeat_field"):
        return False
    x = value.get("x") or {}
    made = [b.expr for b, _ in graph.bindings.get(x.get("sym", ""), ())[:4]] if x.get("k") == "ref" else [x]
    infos = set(spec.get("activity_info", ()))
    return bool(made) and all(m.get("k") == "call" and (m.get("fn") or {}).get("name") in infos for m in made)


def _params_read(graph: TimeoutGraph, expr: Expr, fn_sym: str, depth: int = 0) -> list[int]:
    """The indexes of `fn_sym`'s parameters that `expr` reads, directly or through the
    locals of `fn_sym` it names (`period = every if every is not None else ttl / 3`)."""
    if fn_sym not in graph.functions:
        return []  # an option pair's loop key, not a function
    fn = graph.functions[fn_sym][0]
    found: list[int] = []
    for sub in _walk(expr):
        if not isinstance(sub, dict) or sub.get("k") != "ref":
            continue
        sym = sub["sym"]
        if sym in fn.params:
            found.append(fn.params.index(sym))
        elif depth < 3 and sym.startswith(fn_sym + ".") and sym.count(".") == fn_sym.count(".") + 1:
            decl = graph.decls.get(sym)
            if decl is not None and decl.kind == "local":
                for b, _ in graph.bindings.get(sym, ())[:4]:
                    found += _params_read(graph, b.expr, fn_sym, depth + 1)
    return list(dict.fromkeys(found))


def _per_instance(graph: TimeoutGraph, loop_fn: str, loop: Loop, ratio: float) -> Iterable[Finding]:
    """A renewal method whose period or TTL is a field of its object (`c.every`,
    `self.ttl`) that has no single value globally (functional options, two objects built
    differently): at each call of the method on an object whose construction is visible
    (analysis/instances.py), the period and the TTL that object was given. Reported at the
    period, once per period; the object's construction is a related location."""
    if loop.temporal or not loop.ttls or any(t.expr is None for t in loop.ttls):
        return
    global_ttls = {t.seconds for t in loop.ttls}
    global_t = next(iter(global_ttls)) if len(global_ttls) == 1 else None
    periods = [p for p in sorted(set(loop.periods)) if p in _site_facts(graph)
               and (global_t is None or _seconds(graph, p) is None)]
    if not periods:
        return
    reported: set[str] = set()
    for call, path in _calls_on_objects(graph, loop_fn):
        fields = object_fields(graph, call.callee.get("x"), Ctx(path))
        if not fields:
            continue
        ttls = {t.key: (t, graph.seconds(t.expr, _with(t.ctx, fields), t.unit)) for t in loop.ttls}
        values = {v for _, v in ttls.values()}
        if len(values) != 1 or None in values:
            continue
        ttl, t = min(ttls.values(), key=lambda tv: (tv[0].location.path, tv[0].location.line))
        for period in periods:
            site, site_path = _site_facts(graph)[period]
            p = graph.seconds(site.value, _with(Ctx(site_path), fields), _unit(graph, site))
            if period in reported or p is None or p <= 0 or t <= 0 or p <= t * ratio or (loop.additive and p < t):
                continue
            reported.add(period)
            yield _instance_finding(graph, period, ttl, p, t, ratio, Location(path, call.span.line, call.span.column))


def _calls_on_objects(graph: TimeoutGraph, loop_fn: str) -> list[tuple[CallFact, str]]:
    """The calls that run `loop_fn` (or the function it is written in) as a method of an
    object: `obj.run()`, `go obj.run()`. A method that runs it on its own object
    (`go k.loop(ctx)` in `Start`, Python `self.loop()`) passes the question on to its
    own callers, a few levels up."""
    todo = graph.enclosing_chain(loop_fn)
    seen = set(todo)
    found: list[tuple[CallFact, str]] = []
    for _ in range(4):
        up: list[str] = []
        for method in todo:
            owner = method.rsplit(".", 1)[0]
            for call, path, caller in _calls_of(graph).get(method, ()):
                callee = call.callee
                x = callee.get("x") or {}
                if callee.get("k") == "method" and not _own_receiver(graph, x, caller):
                    found.append((call, path))
                elif caller not in seen and caller.rsplit(".", 1)[0] == owner:
                    seen.add(caller)  # the same object, one method up
                    up.append(caller)
        if not up:
            break
        todo = up
    return sorted(found, key=lambda c: (c[1], c[0].span.line, c[0].span.column))


def _own_receiver(graph: TimeoutGraph, x: Expr, caller: str) -> bool:
    """`x` is the receiver of the method `caller` (Go: a parameter with no position)."""
    if x.get("k") != "ref" or x["sym"].rsplit(".", 1)[0] != caller:
        return False
    decl = graph.decls.get(x["sym"])
    return decl is not None and decl.kind == "param" and decl.index is None


def _with(ctx: Ctx, fields: Fields) -> Ctx:
    return Ctx(ctx.path, {**ctx.subst, **fields}, ctx.call_at, ctx.fn)


def _instance_finding(graph: TimeoutGraph, period: str, ttl: Ttl, p: float, t: float, ratio: float,
                      at: Location) -> Finding:
    severity, head, consequence = _verdict(p, t, ratio, graph.g.nodes[period].get("label", "renewal period"))
    return Finding(
        rule_id=RULE_ID, rule=RULE_NAME, severity=severity,
        message=f"{head}, for the object renewed by the call at {at.path}:{at.line}: {consequence}.",
        location=location_of(graph, period),
        related=[Related(f"{ttl.what.split(' (')[0]} ({describe_seconds(t)} for this object)", ttl.location),
                 Related(f"the object is renewed from here, built with a period of {describe_seconds(p)} "
                         f"and a TTL of {describe_seconds(t)}", at)],
        flow=[],
        fix=f"renew at about a third of the TTL (every {describe_seconds(t / 3)}), or derive the period from the TTL (ttl / 3).",
    )


def _calls_of(graph: TimeoutGraph) -> dict[str, list[tuple[CallFact, str, str]]]:
    """Callee → its call sites (call, path, calling function), built once."""
    key = ("_da103_calls_of",)
    if key not in graph._memo:
        index: dict[str, list[tuple[CallFact, str, str]]] = {}
        for caller, calls in graph.calls_in.items():
            if caller is None:
                continue
            for made, path in calls:
                # `tg.start_soon(keep, lease, every)` calls `keep(lease, every)`
                for call in (made, graph.spawned_call(made, path)):
                    target = graph.resolve_callee(call.callee, Ctx(path)) if call is not None else None
                    if target:
                        index.setdefault(target, []).append((call, path, caller))
        graph._memo[key] = index
    return graph._memo[key]


def _option_pairs(graph: TimeoutGraph) -> dict[tuple[str, str], Loop]:
    """A library's own renewal loop configured in one literal (catalog `pair`: the period
    and the TTL fields of client-go's LeaderElectionConfig)."""
    pairs = {e["api"]: e["pair"] for lang in ("go", "python")
             for e in graph.catalog.entries(lang, "sites") if e.get("pair")}
    found: dict[tuple[str, str], Loop] = {}
    for site, _ in graph.sites:
        kind = pairs.get(site.api)
        if kind is None or not site.group:
            continue
        entry = found.setdefault(("pair", site.group), Loop())
        if kind == "period":
            entry.periods.append(site.id)
        else:
            entry.ttls.append(_site_ttl(graph, site.id, "lease duration set here"))
    return found


# -- what a loop renews ----------------------------------------------------------------

def _site_ttl(graph: TimeoutGraph, site: str, what: str) -> Ttl:
    attrs = graph.g.nodes[site]
    fact, path = _site_facts(graph)[site]
    return Ttl(site, location_of(graph, site), attrs.get("effective_seconds"), attrs.get("default_seconds"),
               f"{what} ({describe_seconds(attrs.get('effective_seconds'))})", fact.value, Ctx(path), _unit(graph, fact))


def _site_facts(graph: TimeoutGraph) -> dict[str, tuple[SiteFact, str]]:
    key = ("_da103_site_facts",)
    if key not in graph._memo:
        graph._memo[key] = {s.id: (s, path) for s, path in graph.sites}
    return graph._memo[key]


def _unit(graph: TimeoutGraph, site: SiteFact) -> str | None:
    spec = graph.spec(site)
    return site.unit or (spec.unit if spec else None)


def _ttls_by_function(graph: TimeoutGraph, renewing: set[str],
                      acquiring: bool = False) -> dict[str, list]:
    """Renewing lease sites by function: (TTL, the loop of that function they sit in).
    With `acquiring`, the statements that also take a free row, outside loops: their TTLs."""
    found: dict[str, list] = {}
    for site, _ in graph.sites:
        if site.role != "lease" or site.api not in renewing or not site.function:
            continue
        if acquiring and site.extra.get("acquires") and not site.extra.get("loop"):
            found.setdefault(site.function, []).append(_site_ttl(graph, site.id, "TTL set here"))
        elif not acquiring and not site.extra.get("acquires"):
            found.setdefault(site.function, []).append((_site_ttl(graph, site.id, "TTL set here"),
                                                        site.extra.get("loop")))
    return found


def _taken_before(graph: TimeoutGraph, loop_fn: str, loop: str, target: str) -> bool:
    """The function holding the loop (or, for a keeper closure, the one it is written in)
    called `target` once before the loop starts: the lease was taken, the loop keeps it."""
    fn = graph.functions[loop_fn][0]
    outer = fn.enclosing or loop_fn
    start = fn.span.line if fn.enclosing else int(str(loop).split(":", 1)[0]) if ":" in str(loop) else 0
    return any(not c.extra.get("loop") and not c.in_go and c.span.line < start
               and graph.resolve_callee(c.callee, Ctx(p)) == target
               for c, p in graph.calls_in.get(outer, ()))


def _renewing_apis(graph: TimeoutGraph) -> set[str]:
    entries = graph.catalog.entries("go", "sites") + graph.catalog.entries("python", "sites")
    return {e["api"] for e in entries if e.get("renews")}


def _renew_markers(graph: TimeoutGraph) -> dict[str, list[tuple[dict, str]]]:
    found: dict[str, list[tuple[dict, str]]] = {}
    for sym, (fn, path) in graph.functions.items():
        for m in fn.markers:
            if m.get("m") == "renew":
                found.setdefault(sym, []).append((m, path))
    return found


class _RenewTtls:
    """The TTL a `renew` marker renews, by its catalog entry's kind."""

    def __init__(self, graph: TimeoutGraph, spec: dict) -> None:
        self.graph = graph
        renewal = spec.get("renewal", {})
        self.entries = {e["api"]: e for lang in ("go", "python") for e in renewal.get(lang, ())}
        self.temporal_spec = spec.get("temporal", {})
        self._temporal: dict[str, list[Ttl]] | None = None
        self._callers: dict[str, set[str]] | None = None

    def __call__(self, marker: dict, loop_fn: str) -> list[Ttl]:
        entry = self.entries.get(marker.get("api", ""))
        if entry is None:
            return []
        if entry.get("ttl") == "temporal_heartbeat":
            return self.temporal().get(loop_fn, [])
        if entry.get("ttl") == "acquired":
            return self.acquired(set(entry.get("acquired_by", ())), loop_fn)
        return []

    def is_temporal(self, marker: dict) -> bool:
        return self.entries.get(marker.get("api", ""), {}).get("ttl") == "temporal_heartbeat"

    def additive(self, marker: dict) -> bool:
        return bool(self.entries.get(marker.get("api", ""), {}).get("additive"))

    def acquired(self, apis: set[str], loop_fn: str) -> list[Ttl]:
        graph = self.graph
        scope = set(graph.enclosing_chain(loop_fn))
        for f in list(scope):
            scope |= self.callers().get(f, set())
        found = [_site_ttl(graph, s.id, "lease granted here") for f in sorted(scope)
                 for s in graph.sites_in.get(f, ()) if s.api in apis]
        # else: the lease a method renews (or has a helper renew) is the one its class
        # acquires (`Run` sets the consumer's AckWait, `handle` keeps each message in progress)
        owners = sorted({graph.functions[f][0].receiver_type for f in scope
                         if f in graph.functions and graph.functions[f][0].receiver_type})
        for owner in owners if not found else ():
            siblings = graph.callgraph.own_methods.get(owner, {}).values()
            found += [_site_ttl(graph, s.id, "lease acquired here") for f in sorted(siblings)
                      for s in graph.sites_in.get(f, ()) if s.api in apis]
        if not found and owners:
            # or by the function that builds the object (`ClaimShard` grants the lease and
            # returns the `*ShardClaim` whose `Hold` keeps it alive)
            makers = sorted(f for f, (fn, _) in graph.functions.items() if fn.result_type in owners)
            found += [_site_ttl(graph, s.id, "lease granted here") for f in makers
                      for s in graph.sites_in.get(f, ()) if s.api in apis]
        return found

    def callers(self) -> dict[str, set[str]]:
        if self._callers is None:
            self._callers = {}
            for caller, calls in self.graph.calls_in.items():
                for call, path in calls:
                    target = self.graph.resolve_callee(call.callee, Ctx(path))
                    if target and caller:
                        self._callers.setdefault(target, set()).add(caller)
        return self._callers

    def temporal(self) -> dict[str, list[Ttl]]:
        """Function → HeartbeatTimeout TTLs of every activity execution that reaches it."""
        if self._temporal is None:
            self._temporal = {}
            for activity, ttls in [*self._go_executions(), *self._python_executions()]:
                for f in self.graph.reachable([activity], limit=40):
                    self._temporal.setdefault(f, []).extend(ttls)
        return self._temporal

    def _go_executions(self) -> Iterable[tuple[str, list[Ttl]]]:
        graph = self.graph
        with_options = self.temporal_spec.get("go", {}).get("with_options", ())
        heartbeats = [(s, p) for s, p in graph.sites if s.role == "heartbeat" and s.api.startswith("go:")]
        for sym, (fn, path) in graph.functions.items():
            for m in fn.markers:
                if m.get("m") != "execute_activity":
                    continue
                activity = self._activity(m["activity"], Ctx(path))
                holders = self._option_holders(m["ctx"], Ctx(path), with_options)
                ttls = [_site_ttl(graph, s.id, "HeartbeatTimeout set here") for s, p in heartbeats
                        if s.function == sym and graph.resolve_sym(s.stored_in, Ctx(p)) in holders]
                ttls += self._options_made_by_call(m["ctx"], Ctx(path), heartbeats)
                if activity and ttls:
                    yield activity, ttls

    def _options_made_by_call(self, ctx_expr: Expr, ctx: Ctx, heartbeats) -> list[Ttl]:
        """`ExecuteActivity(packaging.ctx(ctx), …)`: a function of the program returns the
        context with the options; its HeartbeatTimeout, evaluated with this call's
        arguments and receiver (`stage{heartbeat: …}.ctx`)."""
        graph = self.graph
        if ctx_expr.get("k") != "call":
            return []
        maker = graph.resolve_callee(ctx_expr.get("fn"), ctx)
        if maker is None:
            return []
        inner = graph.call_ctx(maker, ctx_expr, ctx)
        receiver = (ctx_expr.get("fn") or {}).get("x")
        if receiver is not None:  # the receiver's fields as that object was built
            inner = _with(inner, object_fields(graph, receiver, ctx) or {})
        found = []
        for site, site_path in heartbeats:
            if site.function != maker:
                continue
            unit = _unit(graph, site)
            seconds = graph.seconds(site.value, Ctx(site_path, inner.subst, inner.call_at, inner.fn), unit)
            found.append(Ttl(site.id, location_of(graph, site.id), seconds, seconds,
                             f"HeartbeatTimeout set here ({describe_seconds(seconds)})", site.value,
                             Ctx(site_path, inner.subst, inner.call_at, inner.fn), unit))
        return found

    def _option_holders(self, ctx_expr: Expr, ctx: Ctx, with_options) -> set[str]:
        """The context variable an activity runs with, and the ActivityOptions variables
        `WithActivityOptions` attached to it (a literal written in the call is stored in
        the context variable itself)."""
        graph = self.graph
        sym = graph.resolve_sym(ctx_expr, ctx)
        if sym is None:
            return set()
        holders = {sym}
        for b, path in graph.bindings.get(sym, ()):
            expr = b.expr
            callee = (expr.get("fn") or {}) if expr.get("k") == "call" else {}
            name = callee.get("name") or ""
            if callee.get("k") == "ext" and any(fnmatchcase(name, p) for p in with_options):
                args = expr.get("args", [])
                opts = graph.resolve_sym(args[1], Ctx(path)) if len(args) > 1 else None
                if opts:
                    holders.add(opts)
        return holders

    def _python_executions(self) -> Iterable[tuple[str, list[Ttl]]]:
        graph = self.graph
        execute = self.temporal_spec.get("python", {}).get("execute", ())
        heartbeats = [(s, p) for s, p in graph.sites if s.role == "heartbeat" and s.api.startswith("py:")]
        for caller, calls in graph.calls_in.items():
            for call, path in calls:
                name = call.callee.get("name") or ""
                if call.callee.get("k") != "ext" or not any(fnmatchcase(name, p) for p in execute) or not call.args:
                    continue
                activity = self._activity(call.args[0], Ctx(path))
                ttls = [_site_ttl(graph, s.id, "heartbeat_timeout set here") for s, p in heartbeats
                        if p == path and s.function == caller and call.span.line <= s.span.line <= call.span.end_line]
                if activity and ttls:
                    yield activity, ttls

    def _activity(self, expr: Expr, ctx: Ctx) -> str | None:
        """The activity function: a function value (`a.Transcode`, `transcode`), or a
        registered name (Temporal's default: the function's or method's own name) when
        exactly one function of that name heartbeats."""
        graph = self.graph
        if expr.get("k") == "str":
            name = expr.get("v", "")
            beating = {f for f, (fn, _) in graph.functions.items()
                       if f.rsplit(".", 1)[-1] == name and graph.reachable([f], limit=40) & set(_renew_markers(graph))}
            return next(iter(beating)) if len(beating) == 1 else None
        if expr.get("k") == "field":
            expr = {**expr, "k": "method"}
        return graph.resolve_callee(expr, ctx)


def _store_ttl(graph: TimeoutGraph, spec: dict, call: CallFact, path: str, target: str) -> list[Ttl]:
    """A hand-written lease store's renew method: the TTL is the argument of its duration
    parameter."""
    store = spec.get("renewal", {}).get("store", {})
    if target.rsplit(".", 1)[-1] not in store.get("methods", ()) and target not in row_lease_writers(graph):
        return []
    fn, fn_path = graph.functions[target]
    go = graph.lang.get(fn_path) == "go"
    words = store.get("ttl_param_words", ())
    for i, (param, name) in enumerate(zip(fn.params, fn.param_names or [p.rsplit(".", 1)[-1] for p in fn.params])):
        decl = graph.decls.get(param)
        if go:
            if decl is None or decl.type not in store.get("go_ttl_types", ()):
                continue
            unit = "ns"
        elif any(w in name.lower() for w in words):
            unit = "ms" if name.lower().endswith("_ms") else "s"
        else:
            continue
        subst = graph.call_subst(fn, call, Ctx(path))
        if param not in subst:
            return []
        expr, ectx = subst[param]
        eff = graph.seconds(expr, ectx, unit, "effective")
        dflt = graph.seconds(expr, ectx, unit, "default")
        loc = Location(path, call.span.line, call.span.column)
        short = target.split(":", 2)[-1].rsplit("/", 1)[-1]
        return [Ttl(f"arg:{path}:{call.span.line}:{call.span.column}", loc, eff, dflt,
                    f"TTL passed to {short} here ({describe_seconds(eff)})", expr, ectx, unit)]
    return [] if go else _reset_ttl(graph, store, call, path, target)


def _reset_ttl(graph: TimeoutGraph, store: dict, call: CallFact, path: str, target: str) -> list[Ttl]:
    """A renew method given no duration that moves an expiry of its own object to a clock
    reading plus an amount (`self.expires_at = time.monotonic() + self.ttl_s`): the amount,
    for the object renewed when its construction is visible from the call."""
    fn, fn_path = graph.functions[target]
    if not fn.receiver_type:
        return []
    own = f"sym:{fn.receiver_type}."
    clocks = frozenset(c.lower() for c in store.get("clocks", ()))
    for sym, b, _ in graph.bindings_by_function().get(target, ()):
        amount = now_plus_amount(b.expr, clocks) if sym.startswith(own) else None
        if amount is None:
            continue
        name = str(amount.get("sym") or "").rsplit(".", 1)[-1].lower()
        unit = "ms" if name.endswith("_ms") else "s"
        fields = object_fields(graph, call.callee.get("x"), Ctx(path))
        ectx = _with(Ctx(fn_path), fields) if fields else Ctx(fn_path)
        eff = graph.seconds(amount, ectx, unit, "effective")
        dflt = graph.seconds(amount, ectx, unit, "default")
        short = target.split(":", 2)[-1].rsplit(".", 2)[-2:]
        return [Ttl(f"reset:{fn_path}:{b.span.line}:{path}:{call.span.line}",
                    Location(fn_path, b.span.line, b.span.column), eff, dflt,
                    f"TTL that {'.'.join(short)} restores ({describe_seconds(eff)})", amount, ectx, unit)]
    return []


# -- the finding -----------------------------------------------------------------------

def _seconds(graph: TimeoutGraph, node: str) -> float | None:
    return graph.g.nodes[node].get("effective_seconds")


def _default_ratio() -> float:
    from deadline_audit.rules_doc import get_rule

    return float(get_rule(RULE_ID).option_defaults().get("warn-ratio") or 0.5)


def _verdict(p: float, t: float, ratio: float, what: str) -> tuple[str, str, str]:
    """(severity, head, consequence) of a period p against a TTL t; `what` names the period."""
    if p >= t:
        return ("error", f"renewal every {describe_seconds(p)} ({what}) is not shorter than the "
                f"{describe_seconds(t)} TTL it renews",
                "the lease lapses before it is renewed, so another holder can take it while this one is alive")
    return ("warning", f"renewal every {describe_seconds(p)} ({what}) is more than {ratio:g} of the "
            f"{describe_seconds(t)} TTL it renews",
            "one slow or failed renewal lets the lease lapse while its holder is alive")


def _finding(graph: TimeoutGraph, period: str, ttl: Ttl, p: float, t: float, ratio: float) -> Finding:
    severity, head, consequence = _verdict(p, t, ratio, graph.g.nodes[period].get("label", "renewal period"))
    defaults = _default_clause(graph, period, ttl)
    source = first_source(graph, period)
    if source is None or not source.startswith("env:"):
        ttl_source = first_source(graph, ttl.key) if ttl.key in graph.g else None
        if ttl_source is not None and ttl_source.startswith("env:"):
            source, period_flow = ttl_source, ttl.key
        else:
            period_flow = period
    else:
        period_flow = period
    return Finding(
        rule_id=RULE_ID, rule=RULE_NAME, severity=severity,
        message=f"{head}{defaults}: {consequence}.",
        location=location_of(graph, period),
        related=[Related(ttl.what, ttl.location)],
        flow=flow_steps(graph, source, period_flow) if source else [],
        fix=f"renew at about a third of the TTL (every {describe_seconds(t / 3)}), or derive the period from the TTL (ttl / 3).",
    )


def _default_clause(graph: TimeoutGraph, period: str, ttl: Ttl) -> str:
    p, t = graph.g.nodes[period].get("default_seconds"), ttl.default_seconds
    if p is None or t is None or (p == _seconds(graph, period) and t == ttl.seconds):
        return ""
    return f" (compiled defaults: every {describe_seconds(p)} for a {describe_seconds(t)} TTL)"

