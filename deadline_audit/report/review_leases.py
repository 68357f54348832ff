"""Supervision arithmetic of every operation lease, for the review report.

For a lease the graph recognises (graph.leases()):
- L  its TTL (the lease node's value);
- R  the renewals the helper allows: a counter incremented in the helper and compared
     with a bound (review_renewals.py); ∞ when nothing bounds it;
- C  the hard cap the supervisor enforces: a deadline written in the helper itself, else
     L × (R + 1) when R is finite, else none;
- T  the smallest hard deadline on the supervised path: the candidates DA101 compares
     (checks/da101.analyse), streamed per-read timeouts excluded;
- A  attempts: SDK retries inside the lease (catalog `retries.toml` for a per-attempt T),
     and a loop around the lease call outside it.

One attempt lives at most min(T, C); retries inside the lease are cut by C as well;
retries outside multiply it. Every number that cannot be resolved is "unknown", with the
missing piece named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from deadline_audit.checks import da101
from deadline_audit.findings import Location
from deadline_audit.graph import HARD_ROLES, Ctx, Lease, TimeoutGraph
from deadline_audit.report.review_model import count_text, span_text
from deadline_audit.report.review_renewals import loop_around, renewal_bound

INF = math.inf


@dataclass
class LeaseBudget:
    lease: str  # lease site id
    name: str  # the lease's own name, else the helper's
    location: Location
    helper: str  # helper label (`agents.runWithLease`)
    operation: str  # supervised function label
    ttl: float | None  # L, effective
    ttl_default: float | None  # L with compiled defaults
    renewals: float | None  # R (INF: unbounded, None: unknown)
    renewals_how: str
    cap: float | None  # C (INF: no cap)
    cap_how: str
    deadline: float | None  # T (INF: none on the path)
    deadline_how: str
    deadline_site: str | None = None
    deadline_location: Location | None = None
    attempts_inside: int | None = 1
    attempts_inside_how: str = ""
    outside: str | None = None  # a loop around the lease call, when there is one
    attempts_outside: int | None = 1  # how many times it runs the lease call (None: unknown)
    worst: float | None = None  # the longest one supervised call can live
    sentence: str = ""
    unknowns: list[str] = field(default_factory=list)


def lease_budgets(graph: TimeoutGraph) -> list[LeaseBudget]:
    leases = graph.leases()
    if not leases:
        return sorted(_temporal_budgets(graph), key=lambda b: (b.location.path, b.location.line))
    _, verdicts = da101.analyse(graph)
    candidates: dict[str, list[str]] = {}
    for site_id, items in verdicts.items():
        for v in items:
            if "idle timeout" not in v.reason:
                candidates.setdefault(v.lease, []).append(site_id)
    sites = {s.id: (s, p) for s, p in graph.sites}
    out = [_budget(graph, lease, sorted(set(candidates.get(lease.id, ()))), sites) for lease in leases]
    out += _temporal_budgets(graph)
    out.sort(key=lambda b: (b.location.path, b.location.line, b.location.column))
    return out


def _temporal_budgets(graph: TimeoutGraph) -> list[LeaseBudget]:
    """Temporal activities with a HeartbeatTimeout: the server's lease on the activity.
    Heartbeats renew it without limit; StartToClose caps one attempt, ScheduleToClose
    the whole activity with its retries. Calls inside the activity are not compared with
    the heartbeat (it does not extend StartToClose), so T is not part of this sum."""
    groups: dict[str, dict[str, tuple]] = {}
    for site, path in graph.sites:
        spec = graph.spec(site)
        if spec is not None and spec.temporal and site.group:
            groups.setdefault(site.group, {})[spec.temporal] = (site, path)
    out = []
    for members in groups.values():
        if "heartbeat" not in members:
            continue
        g = graph.g
        heartbeat = members["heartbeat"][0]
        value = {kind: g.nodes[site.id].get("effective_seconds") for kind, (site, _) in members.items()}
        per_attempt, total = value.get("start_to_close"), value.get("schedule_to_close")
        caps = [v for v in (per_attempt, total) if v]
        unknowns = [] if value["heartbeat"] is not None else ["the HeartbeatTimeout L (its value is not resolved)"]
        attempts, attempts_how = _retry_policy_attempts(graph, *members["heartbeat"])
        if total is None and attempts is None:
            unknowns.append("the activity's RetryPolicy attempts (Temporal retries without limit by default) "
                            "or a ScheduleToCloseTimeout")
        b = LeaseBudget(
            lease=heartbeat.id, name="activity heartbeat", location=_location(graph, heartbeat.id),
            helper="Temporal activity options", operation="the activity",
            ttl=value["heartbeat"], ttl_default=g.nodes[heartbeat.id].get("default_seconds"),
            renewals=INF, renewals_how="heartbeats renew the activity without limit",
            cap=min(caps) if caps else None,
            cap_how=("StartToCloseTimeout" if per_attempt and per_attempt == min(caps) else
                     "ScheduleToCloseTimeout" if caps else "unknown: no StartToClose or ScheduleToClose seen here"),
            deadline=INF, deadline_how="not compared: the heartbeat does not extend StartToCloseTimeout",
            attempts_inside=1, attempts_inside_how="one attempt per lease",
            outside=f"Temporal's RetryPolicy: {attempts_how}",
            attempts_outside=int(attempts) if attempts not in (None, INF) else None, unknowns=unknowns,
        )
        if total is None and b.cap is not None and attempts not in (None, INF):
            total = b.worst = b.cap * attempts
            b.sentence = (f"L {span_text(b.ttl)}, R ∞, C {span_text(b.cap)} ({b.cap_how}), A {int(attempts)} "
                          f"({attempts_how}) ⇒ at most {span_text(total)}"
                          + (" plus backoff." if attempts > 1 else "."))
        elif total is not None:
            b.worst = total
            b.sentence = (f"L {span_text(b.ttl)}, R ∞, C {span_text(b.cap)} ({b.cap_how}) ⇒ one attempt at most "
                          f"{span_text(min(caps))}, the activity with its retries at most {span_text(total)}.")
        elif b.cap is not None:
            b.sentence = (f"L {span_text(b.ttl)}, R ∞, C {span_text(b.cap)} ({b.cap_how}) ⇒ one attempt at most "
                          f"{span_text(b.cap)}; the activity with its retries: unknown: missing {'; '.join(unknowns)}.")
        else:
            b.sentence = f"L {span_text(b.ttl)}, R ∞ ⇒ unknown: missing the activity's StartToClose/ScheduleToClose."
        out.append(b)
    return out


def _label(sym: str | None) -> str:
    """`agents.runWithLease`; a closure as `closure in agents.Agent.Step (line 34)`."""
    if not sym:
        return "?"
    body = sym.split(":", 2)[-1].rsplit("/", 1)[-1]
    outer, _, last = body.rpartition(".")
    for kind in ("func@", "lambda@"):
        if last.startswith(kind):
            return f"{'closure' if kind == 'func@' else 'lambda'} in {outer} (line {last[len(kind):].split(':')[0]})"
    return body


def _budget(graph: TimeoutGraph, lease: Lease, candidates: list[str], sites: dict) -> LeaseBudget:
    g = graph.g
    node = g.nodes[lease.id]
    ttl = node.get("effective_seconds")
    unknowns: list[str] = []
    if ttl is None:
        unknowns.append("the lease duration L (its value is not resolved)")
    call = _lease_call(graph, lease)

    renewals, renewals_how = renewal_bound(graph, lease, call)
    if renewals is None:
        unknowns.append(f"the renewal bound R ({renewals_how})")

    cap, cap_how = _cap(ttl, renewals, *_own_cap(graph, lease, call))

    deadline, deadline_site, deadline_how, per_attempt_site = _smallest_deadline(graph, candidates, sites)
    if deadline is None:
        unknowns.append(f"the hard deadline T ({deadline_how})")
    attempts, attempts_how = (1, "no retries seen inside the lease")
    if per_attempt_site is not None:
        attempts, attempts_how = _attempts(graph, *sites[per_attempt_site])
        if attempts is None:
            unknowns.append(f"the attempts A ({attempts_how})")
    outside, attempts_outside = None, 1
    loop = loop_around(graph, lease.function, lease.location.line)
    if loop is not None:
        attempts_outside = loop[1]
        if attempts_outside is None:
            outside = f"a loop around the lease call (line {loop[0]}) repeats it"
            unknowns.append(f"how many times the loop at line {loop[0]} repeats the lease call")
        else:
            outside = f"a loop around the lease call (line {loop[0]}) runs it {int(attempts_outside)} times"

    budget = LeaseBudget(
        lease=lease.id, name=lease.name or _label(lease.helper).rsplit(".", 1)[-1],
        location=lease.location, helper=_label(lease.helper),
        operation=", ".join(_label(op) for op in lease.operations) or "?",
        ttl=ttl, ttl_default=node.get("default_seconds"),
        renewals=renewals, renewals_how=renewals_how, cap=cap, cap_how=cap_how,
        deadline=deadline, deadline_how=deadline_how, deadline_site=deadline_site,
        deadline_location=_location(graph, deadline_site) if deadline_site else None,
        attempts_inside=attempts, attempts_inside_how=attempts_how, outside=outside,
        attempts_outside=max(1, int(attempts_outside)) if attempts_outside is not None else None, unknowns=unknowns,
    )
    budget.worst = _worst(budget)
    budget.sentence = _sentence(budget)
    return budget


def _cap(ttl: float | None, renewals: float | None, own: float | None, own_how: str) -> tuple[float | None, str]:
    """C: the supervisor gives up after R renewals (L × (R + 1)) or at the helper's own
    deadline, whichever comes first."""
    if renewals is not None and renewals != INF and ttl is not None:
        derived = ttl * (renewals + 1)
        if own is None or derived <= own:
            return derived, "L × (R + 1)" + (f", before {own_how} {span_text(own)}" if own is not None else "")
    if own is not None:
        return own, own_how
    if renewals is None:
        return None, "unknown: R is unknown"
    if renewals == INF:
        return INF, "none: nothing bounds the renewals"
    return None, "L × (R + 1), but L is unknown"


def _retry_policy_attempts(graph: TimeoutGraph, site, path: str) -> tuple[float | None, str]:
    """MaximumAttempts of the RetryPolicy given with these activity options (0: no limit).
    Python: the `retry_policy=RetryPolicy(maximum_attempts=…)` keyword of the call that
    holds the options; Go: `RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: …}` in the
    ActivityOptions literal."""
    policy = None
    for call, call_path in graph.calls_in.get(site.function, ()):
        if call_path == path and _contains(call, site) and "retry_policy" in call.kw:
            policy = call.kw["retry_policy"]
    if policy is None:
        for binds in graph.bindings.values():
            for b, b_path in binds:
                fields = b.expr.get("fields") or {} if b.expr.get("k") == "obj" else {}
                if b_path == path and "RetryPolicy" in fields and _contains(b, site):
                    policy = fields["RetryPolicy"]
    if policy is None:
        return None, "no RetryPolicy here (Temporal retries without limit by default)"
    attempts = (policy.get("kw") or {}).get("maximum_attempts") or (policy.get("fields") or {}).get("MaximumAttempts")
    if attempts is None:
        return INF, "a RetryPolicy without maximum attempts: no limit"
    number = getattr(graph.value(attempts, Ctx(path)), "value", None)
    if number is None:
        return None, "the RetryPolicy's maximum attempts are not resolved"
    return (INF, "maximum attempts 0: no limit") if number == 0 else (number, f"maximum attempts {int(number)}")


def _location(graph: TimeoutGraph, node: str) -> Location:
    a = graph.g.nodes[node]
    return Location(a.get("path", ""), int(a.get("line") or 1), int(a.get("column") or 1))


def _lease_call(graph: TimeoutGraph, lease: Lease):
    for call, path in graph.calls_in.get(lease.function, ()):
        if path == lease.location.path and (call.span.line, call.span.column) == (lease.location.line, lease.location.column):
            return call
    return None


def _own_cap(graph: TimeoutGraph, lease: Lease, call) -> tuple[float | None, str]:
    """A hard deadline the helper itself sets around the operation (its own cap), with the
    lease call's arguments standing for the helper's parameters."""
    if lease.helper is None or lease.helper not in graph.functions:
        return None, ""
    fn, path = graph.functions[lease.helper]
    subst = graph.call_subst(fn, call, lease.ctx) if call is not None else {}
    found = []
    # In the helper's own body, outside any loop: a deadline in the renewal goroutine or
    # loop bounds one renewal call, never the operation (SPEC §4).
    for site in graph.sites_in.get(lease.helper, ()):
        if site.role not in HARD_ROLES or site.value is None or site.extra.get("loop"):
            continue
        spec = graph.spec(site)
        unit = site.unit or (spec.unit if spec else None)
        value = graph.seconds(site.value, Ctx(path, subst, None, lease.helper), unit)
        if value:
            found.append((value, site))
    if not found:
        return None, ""
    value, site = min(found, key=lambda item: item[0])
    return value, f"the helper's own cap ({graph.g.nodes[site.id].get('label', site.api)}, line {site.span.line})"


def _smallest_deadline(graph: TimeoutGraph, candidates: list[str], sites: dict):
    """(T, its site, how, the site when T bounds one attempt of a retrying client)."""
    if not candidates:
        return INF, None, "no hard deadline on the supervised path", None
    g = graph.g
    resolved, unresolved = [], []
    for site_id in candidates:
        value = g.nodes[site_id].get("effective_seconds")
        if value is None:
            unresolved.append(site_id)
        elif value > 0:  # 0 disables these deadlines (DA101 says so too)
            resolved.append((value, site_id))
    if not resolved:
        if unresolved:
            a = g.nodes[unresolved[0]]
            return None, unresolved[0], f"{a.get('label')} at {a.get('path')}:{a.get('line')} is not resolved", None
        return INF, None, "the deadlines on the supervised path are disabled (0)", None
    value, site_id = min(resolved)
    a = g.nodes[site_id]
    how = f"{a.get('label')} ({a.get('path')}:{a.get('line')})"
    if unresolved:
        how += f"; {len(unresolved)} more not resolved"
    site = sites.get(site_id)
    spec = graph.spec(site[0]) if site else None
    per_attempt = site_id if spec is not None and spec.per_attempt else None
    if per_attempt:
        how += ", per attempt"
    return value, site_id, how, per_attempt


def _attempts(graph: TimeoutGraph, site, path: str) -> tuple[int | None, str]:
    """Attempts one call makes through the client this per-attempt deadline configures."""
    policy = next((p for p in graph.catalog.file("retries").get("retries", [])
                   if site.api in p.get("sites", ())), None)
    if policy is None:
        return None, f"the retry policy of {site.api} is not in the catalog"
    attempts = int(policy.get("attempts", 1))
    how = f"{attempts - 1} retries by default"
    for call, call_path in graph.calls_in.get(site.function, ()):
        if call_path != path:
            continue
        expr = None
        if policy.get("kw") and _contains(call, site) and policy["kw"] in call.kw:
            expr = call.kw[policy["kw"]]
        elif policy.get("option") and _ext_name(call) and any(
                fnmatchcase(_ext_name(call), pat) for pat in policy["option"]):
            arg = int(policy.get("arg", 0))
            expr = call.args[arg] if arg < len(call.args) else None
        if expr is None:
            continue
        value = graph.value(expr, Ctx(path))
        retries = getattr(value, "value", None)
        if retries is None:
            return None, f"the retries set at line {call.span.line} are not resolved"
        return int(retries) + 1, f"{int(retries)} retries set at line {call.span.line}"
    return attempts, how


def _contains(call, site) -> bool:
    s, c = site.span, call.span
    return (c.line, c.column) <= (s.line, s.column) and (s.end_line, s.end_column) <= (c.end_line, c.end_column)


def _ext_name(call) -> str | None:
    callee = call.callee or {}
    return callee.get("name") if callee.get("k") == "ext" else None


def _worst(b: LeaseBudget) -> float | None:
    """A × min(T, C) when retries wrap the lease; min(A × T, C) when they run inside it."""
    if b.cap is None or b.deadline is None or b.attempts_inside is None or b.attempts_outside is None:
        return None
    return b.attempts_outside * min(b.deadline * b.attempts_inside, b.cap)


def _sentence(b: LeaseBudget) -> str:
    head = (f"L {span_text(b.ttl)}, R {count_text(b.renewals)}, C {span_text(b.cap)}, T {span_text(b.deadline)}, "
            f"A {count_text(b.attempts_inside)} inside"
            + (f", {count_text(b.attempts_outside)} outside" if b.outside else ""))
    if b.worst is None:
        missing = "; ".join(b.unknowns) or "a value"
        return f"{head} ⇒ unknown: missing {missing}."
    if b.worst == INF:
        return (f"{head} ⇒ no bound found: no hard deadline on the supervised path, no cap in the helper, "
                "and nothing limits the renewals.")
    tail = f" ⇒ at most {span_text(b.worst)}"
    retried_inside = b.attempts_inside > 1 and b.deadline * b.attempts_inside <= b.cap
    if retried_inside or b.attempts_outside > 1:
        tail += " plus backoff"
    call = b.worst / b.attempts_outside  # one supervised call
    if b.ttl and call <= b.ttl:
        tail += (f"; the lease never renews: the call dies at {span_text(call)}, "
                 "when or before the lease first expires")
    elif b.ttl and call < b.cap:
        useful = max(0, math.ceil(call / b.ttl) - 1)
        if b.renewals is not None:
            useful = min(useful, int(b.renewals)) if b.renewals != INF else useful
        tail += f"; renewals past {span_text(call)} never happen (at most {useful} of R used)"
    if b.ttl and b.attempts_inside and b.attempts_inside > 1 and b.deadline <= b.ttl:
        tail += f"; each attempt dies at T ({span_text(b.deadline)}), before the lease can give it more time"
    if b.unknowns:
        tail += "; not resolved: " + "; ".join(b.unknowns)
    return head + tail + "."
