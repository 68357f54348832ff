"""DA101 shadowed-lease: a hard deadline T under a renewable lease L with T <= L.

For each operation lease the graph recognises, the hard deadlines that govern its
operation are those written in the supervised function or in what it calls, and those
configured on a client the operation uses. Each is compared with the lease's effective
value; when a value is unresolved, a common source with identity transforms still proves
T == L. Temporal: StartToCloseTimeout <= HeartbeatTimeout in one options literal/call.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from deadline_audit.analysis.instances import object_fields
from deadline_audit.checks.evidence import describe_seconds, first_source, flow_steps, location_of
from deadline_audit.facts import CallFact, receiver_chain, same_expr, truthy
from deadline_audit.findings import Finding, Location, Related
from deadline_audit.graph import HARD_ROLES, Ctx, Lease, TimeoutGraph

RULE_ID, RULE_NAME, SEVERITY = "DA101", "shadowed-lease", "error"


@dataclass
class Verdict:
    """Why one hard deadline was (not) compared with one lease: shown by `why`."""

    lease: str
    fired: bool
    reason: str


@dataclass
class Shadow:
    site: str
    leases: list[Lease] = field(default_factory=list)
    common_source: str | None = None
    how: str = ""


def check(graph: TimeoutGraph, options: dict) -> Iterable[Finding]:
    shadows, _ = analyse(graph)
    for shadow in shadows.values():
        yield _finding(graph, shadow)
    yield from _temporal(graph)


def analyse(graph: TimeoutGraph) -> tuple[dict[str, Shadow], dict[str, list[Verdict]]]:
    """Each lease against the hard deadlines on its supervised path. Sites are indexed by
    the function they sit in and by the symbols that carry their client, so each lease
    looks only at its candidates (no lease × site product)."""
    shadows: dict[str, Shadow] = {}
    verdicts: dict[str, list[Verdict]] = {}
    by_function: dict[str | None, list] = defaultdict(list)
    by_carrier: dict[str, list] = defaultdict(list)
    hard_by_id: dict[str, tuple] = {}
    for site, path in graph.sites:
        if _is_hard(graph, site):
            hard_by_id[site.id] = (site, path)
            by_function[site.function].append((site, path))
            for holder in graph.carriers(site, path):
                by_carrier[holder].append((site, path))
    for lease in graph.leases():
        supervised = graph.reachable(lease.operations)
        candidates: dict[str, tuple] = {}
        for site_id in lease.body_sites:
            if site_id in hard_by_id:
                candidates.setdefault(site_id, (*hard_by_id[site_id], "inside the lease's body"))
        for holder in lease.body_uses:
            for site, path in by_carrier.get(holder, ()):
                candidates.setdefault(site.id, (site, path, "on the client the lease's body uses"))
        makers = _makers_in_use(graph, supervised)
        for fn in supervised:
            for site, path in by_function.get(fn, ()):
                candidates.setdefault(site.id, (site, path, "inside the supervised operation"))
            for holder in graph.used_symbols(fn):
                for site, path in by_carrier.get(holder, ()):
                    if _other_object(graph, site, makers):
                        continue
                    candidates.setdefault(site.id, (site, path, "on the client the supervised operation uses"))
        requests = [(call, call_path) for fn in supervised for call, call_path in graph.calls_in.get(fn, ())]
        requests += [(call, lease.location.path) for call in lease.body_calls]
        for site, path, how in candidates.values():
            if how.startswith("on the client") and _overridden(graph, site, path, requests):
                verdicts.setdefault(site.id, []).append(
                    Verdict(lease.id, False, "every supervised request passes its own timeout"))
                continue
            if site.role == "read_timeout" and _streamed(graph, site, path, requests):
                verdicts.setdefault(site.id, []).append(
                    Verdict(lease.id, False, "a per-read timeout on a streamed call is an idle timeout"))
                continue
            fired, reason, common = _compare(graph, site.id, lease)
            verdicts.setdefault(site.id, []).append(Verdict(lease.id, fired, f"{how}; {reason}"))
            if fired:
                shadow = shadows.setdefault(site.id, Shadow(site.id, how=how))
                shadow.leases.append(lease)
                shadow.common_source = shadow.common_source or common
    return shadows, verdicts


def _makers_in_use(graph: TimeoutGraph, supervised: set[str]) -> dict[str, set[str]]:
    """The constructors of the objects the supervised operation calls methods on, when
    visible (`h.Engine.Generate(…)` with `h.Engine` = `infer.NewEngine(cfg)`): the type
    they return -> those constructors."""
    found: dict[str, set[str]] = defaultdict(set)
    for fn in supervised:
        for call, path in graph.calls_in.get(fn, ()):
            if call.callee.get("k") == "method":
                maker = _maker(graph, call.callee.get("x"), Ctx(path), 0)
                result = graph.functions[maker][0].result_type if maker else None
                if result:
                    found[result].add(maker)
    return found


def _maker(graph: TimeoutGraph, expr, ctx: Ctx, depth: int) -> str | None:
    if not isinstance(expr, dict) or depth > 4:
        return None
    if expr.get("k") == "call":
        target = graph.resolve_callee(expr.get("fn"), ctx)
        return target if target in graph.functions else None
    sym = graph.resolve_sym(expr, ctx) if expr.get("k") in ("ref", "field") else None
    bound = [(b, p) for b, p in graph.bindings.get(sym or "", ()) if not b.is_default]
    if len(bound) != 1:
        return None
    return _maker(graph, bound[0][0].expr, Ctx(bound[0][1]), depth + 1)


def _other_object(graph: TimeoutGraph, site, makers: dict[str, set[str]]) -> bool:
    """A client configured by a constructor of a type whose objects the operation uses,
    but not by the constructor of the object it uses (`NewBatchEngine` beside the
    operation's `NewEngine`): another object's client."""
    entry = graph.functions.get(site.function or "")
    result = entry[0].result_type if entry else None
    return bool(result and result in makers and site.function not in makers[result])


def _is_hard(graph: TimeoutGraph, site) -> bool:
    spec = graph.spec(site)
    if site.role not in HARD_ROLES or spec is None or spec.temporal or spec.absolute:
        return False
    if site.role == "read_timeout":
        # a per-read timeout is a total deadline only on a call that answers when done
        return spec.answers_when_done and not site.extra.get("streaming")
    return True


def _streamed(graph: TimeoutGraph, site, path: str, requests: list[tuple[CallFact, str]]) -> bool:
    """Does the supervised operation stream through the client this site configures?
    `requests`: the calls of the supervised functions and of the lease's own body."""
    lang = "go" if site.api.startswith("go:") else "python"
    streaming = graph.catalog.table(lang, "streaming")
    kws, methods = set(streaming.get("kw", ())), set(streaming.get("methods", ()))
    for call in _through_client(graph, site, path, requests):
        names = {x.get("name") for x in receiver_chain(call.callee)} | {call.callee.get("name")}
        if names & methods or any(k in kws and truthy(v) for k, v in call.kw.items()):
            return True
    return False


def _overridden(graph: TimeoutGraph, site, path: str, requests: list[tuple[CallFact, str]]) -> bool:
    """Does every supervised request made through this client pass its own timeout?"""
    lang = "go" if site.api.startswith("go:") else "python"
    kws = set(graph.catalog.table(lang, "request_timeout").get("kw", ()))
    if not kws:
        return False
    through = _through_client(graph, site, path, requests)
    return bool(through) and all(kws & set(call.kw) for call in through)


def _through_client(graph: TimeoutGraph, site, path: str, requests: list[tuple[CallFact, str]]) -> list[CallFact]:
    """The requests whose receiver chain holds the client this site configures."""
    carriers = graph.carriers(site, path)
    found = []
    for call, call_path in requests:
        chain = receiver_chain(call.callee)
        if chain and carriers & {graph.resolve_sym(x, Ctx(call_path)) for x in chain}:
            found.append(call)
    return found


def _compare(graph: TimeoutGraph, site_id: str, lease: Lease) -> tuple[bool, str, str | None]:
    nodes = graph.g.nodes
    t, lval = nodes[site_id].get("effective_seconds"), nodes[lease.id].get("effective_seconds")
    common = _common_identity_source(graph, site_id, lease.id)
    if t is not None and t == 0:
        return False, "0 disables this deadline", None
    if t is not None and lval is not None:
        if t <= lval:
            return True, f"{describe_seconds(t)} ≤ lease {describe_seconds(lval)}", common
        return False, f"{describe_seconds(t)} > lease {describe_seconds(lval)}: a larger cap leaves room to renew", None
    if common is not None:
        return True, f"both come from {nodes[common].get('label', common)} unchanged", common
    return False, "a value is unresolved and no common source links them", None


def _common_identity_source(graph: TimeoutGraph, a: str, b: str) -> str | None:
    shared = graph.sources(a) & graph.sources(b)
    for source in sorted(shared):
        if _identity_path(graph, source, a) and _identity_path(graph, source, b):
            return source
    return sorted(shared)[0] if shared and _values_equal(graph, a, b) else None


def _identity_path(graph: TimeoutGraph, source: str, target: str) -> bool:
    path = graph.flow_path(source, target)
    identity = {"identity", "env_read", "parse_duration", "go_duration", "number", "unit_count"}
    for u, v in zip(path, path[1:]):
        edges = graph.g.get_edge_data(u, v) or {}
        if not any(e.get("transform", "identity") in identity or e.get("transform", "").startswith("call ")
                   for e in edges.values()):
            return False
    return len(path) > 1


def _values_equal(graph: TimeoutGraph, a: str, b: str) -> bool:
    va, vb = graph.g.nodes[a].get("effective_seconds"), graph.g.nodes[b].get("effective_seconds")
    return va is not None and va == vb


def _finding(graph: TimeoutGraph, shadow: Shadow) -> Finding:
    node = graph.g.nodes[shadow.site]
    t = node.get("effective_seconds")
    lease = shadow.leases[0]
    lval = graph.g.nodes[lease.id].get("effective_seconds")
    kind = _lease_kind(lease)
    what = node.get("label", "deadline")
    if t is not None and lval is not None:
        head = f"{what} {describe_seconds(t)} ≤ the {kind}lease {describe_seconds(lval)}"
    else:
        head = f"{what} and the {kind}lease come from the same value"
    defaults = _default_clause(graph, shadow.site, lease.id)
    consequence = ("the lease expires when this deadline does, so renewal can never extend this call"
                   if t == lval or t is None else
                   "the call dies before the lease first expires, so renewal can never extend it")
    related = [Related(f"{_lease_kind(le)}lease set here ({describe_seconds(graph.g.nodes[le.id].get('effective_seconds'))})",
                       le.location) for le in shadow.leases]
    source = shadow.common_source or first_source(graph, shadow.site)
    return Finding(
        rule_id=RULE_ID, rule=RULE_NAME, severity=SEVERITY,
        message=f"{head}{defaults}: {consequence}.",
        location=location_of(graph, shadow.site),
        related=related,
        flow=flow_steps(graph, source, shadow.site) if source else [],
        fix=_fix(graph, shadow.site),
    )


def _default_clause(graph: TimeoutGraph, site: str, lease: str) -> str:
    t, lval = graph.g.nodes[site].get("default_seconds"), graph.g.nodes[lease].get("default_seconds")
    if t is None or lval is None or (t == graph.g.nodes[site].get("effective_seconds")
                                     and lval == graph.g.nodes[lease].get("effective_seconds")):
        return ""
    holds = "also" if t <= lval else "but not"
    return f" ({holds} with the compiled defaults: {describe_seconds(t)} vs {describe_seconds(lval)})"


def _lease_kind(lease: Lease) -> str:
    """The lease's own name when the call gives one (`runWithLease(ctx, "model_call", …)`)."""
    return f"{lease.name} " if lease.name else ""


def _fix(graph: TimeoutGraph, site: str) -> str:
    role = graph.g.nodes[site].get("role")
    api = graph.g.nodes[site].get("api", "")
    if api.startswith("go:"):
        return ("drop this total deadline; bound the call by the lease's context and keep phase timeouts "
                "(dial, TLS, ResponseHeaderTimeout) on the Transport, or derive a larger cap from the lease "
                "(lease × (maxRenewals + 1)).")
    if role == "read_timeout":
        return ("let the lease bound the call: derive the client timeout from the lease "
                "(lease × (max_renewals + 1)) or keep only connect/pool timeouts.")
    return "derive the hard cap from the lease (lease × (max renewals + 1)) so that renewal can extend the call."


def _temporal(graph: TimeoutGraph) -> Iterable[Finding]:
    groups: dict[str, dict[str, tuple]] = {}
    for site, path in graph.sites:
        spec = graph.spec(site)
        if spec is not None and spec.temporal and site.group:
            groups.setdefault(site.group, {})[spec.temporal] = (site, path)
    for members in groups.values():
        if "start_to_close" not in members or "heartbeat" not in members:
            continue
        stc, hb = members["start_to_close"][0], members["heartbeat"][0]
        t = graph.g.nodes[stc.id].get("effective_seconds")
        h = graph.g.nodes[hb.id].get("effective_seconds")
        built_at = None
        if t is None or h is None:
            per_object = _per_object(graph, stc, hb)
            if per_object is not None:
                # a method building the options from its receiver's fields
                # (`stage{startToClose: …, heartbeat: …}.ctx(ctx)`): one object built so
                t, h, built_at = per_object
        if t is None or h is None:
            # unresolved (`in.StepTimeout` for both): the same value, or a common source unchanged
            common = None if t == 0 or h == 0 else _same_value(graph, stc, hb)
            if common is None:
                continue
            compared, held = f"StartToCloseTimeout = HeartbeatTimeout ({common})", "the same value"
        elif t == 0 or h == 0 or t > h:
            continue
        else:
            compared = f"StartToCloseTimeout {describe_seconds(t)} ≤ HeartbeatTimeout {describe_seconds(h)}"
            held = describe_seconds(h)
        yield Finding(
            rule_id=RULE_ID, rule=RULE_NAME, severity=SEVERITY,
            message=f"{compared}: the activity is killed before a missed heartbeat can ever be detected.",
            location=location_of(graph, stc.id),
            related=[Related(f"heartbeat timeout set here ({held})", location_of(graph, hb.id))] +
                    ([Related("the options are built from this object", built_at)] if built_at else []),
            flow=flow_steps(graph, first_source(graph, stc.id), stc.id) if first_source(graph, stc.id) else [],
            fix="make HeartbeatTimeout a fraction of StartToCloseTimeout (heartbeat well inside the run's budget).",
        )


def _per_object(graph: TimeoutGraph, stc, hb) -> tuple[float, float, Location] | None:
    """The two timeouts as the first object whose options they are gets them, when the
    sites read fields of the receiver of the method that builds the options, and that
    object's construction is visible at a call of the method (analysis/instances.py)."""
    if stc.function is None or stc.function != hb.function:
        return None
    for calls in graph.calls_in.values():
        for call, path in calls:
            if call.callee.get("k") != "method" or graph.resolve_callee(call.callee, Ctx(path)) != stc.function:
                continue
            fields = object_fields(graph, call.callee.get("x"), Ctx(path))
            if not fields:
                continue
            ctx = Ctx(graph.functions[stc.function][1], dict(fields))
            t = graph.seconds(stc.value, ctx, graph.g.nodes[stc.id].get("unit"))
            h = graph.seconds(hb.value, ctx, graph.g.nodes[hb.id].get("unit"))
            if t is not None and h is not None and 0 < t <= h:
                return t, h, Location(path, call.span.line, call.span.column)
    return None


def _same_value(graph: TimeoutGraph, a, b) -> str | None:
    """What two unresolved sites both hold: the same expression, or one source reaching
    both unchanged."""
    if a.value and a.value.get("k") in ("ref", "field") and same_expr(a.value, b.value):
        return f"both read {_name_of(a.value)}"
    common = _common_identity_source(graph, a.id, b.id)
    return f"both come from {graph.g.nodes[common].get('label', common)} unchanged" if common else None


def _name_of(expr: dict) -> str:
    if expr.get("k") == "field":
        return f"{_name_of(expr.get('x') or {})}.{expr.get('name')}"
    return str(expr.get("sym") or expr.get("text") or "?").rsplit(".", 1)[-1]


def explain(graph: TimeoutGraph, site_id: str) -> list[str]:
    """For `why`: each lease considered for this hard deadline, and the verdict."""
    _, verdicts = analyse(graph)
    considered = {v.lease for v in verdicts.get(site_id, [])}
    off_path = [Verdict(lease.id, False, "not on the supervised path of this lease")
                for lease in graph.leases() if lease.id not in considered]
    lines = []
    for v in verdicts.get(site_id, []) + off_path:
        node = graph.g.nodes[v.lease]
        where = f"{node.get('path')}:{node.get('line')}"
        lines.append(f"DA101 {'fires' if v.fired else 'does not fire'}: lease at {where}: {v.reason}")
    return lines


__all__ = ["check", "analyse", "explain", "Ctx"]
