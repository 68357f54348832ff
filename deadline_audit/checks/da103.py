"""DA103 renewal-slower-than-lease: a renewal period not comfortably shorter than the TTL.

A renewal loop is a loop (marker passes go_marks_renewal / py_marks_renewal) that renews a
lease — a TTL site of the catalog marked `renews` (Redis EXPIRE/PEXPIRE …), directly or in
a function the loop calls — and waits between renewals: a sleep/timer in the loop, or a
ticker it receives from (`<-t.C`). Period P and TTL T are compared on effective values:
P ≥ T is an error, P > T × warn-ratio a warning. Unresolved → no finding.
"""

from __future__ import annotations

from collections.abc import Iterable

from deadline_audit.checks.evidence import describe_seconds, flow_steps, location_of
from deadline_audit.findings import Finding, Related
from deadline_audit.graph import Ctx, TimeoutGraph

RULE_ID, RULE_NAME, SEVERITY = "DA103", "renewal-slower-than-lease", "error"
_PERIOD_ROLES = ("sleep", "timer", "ticker")


def check(graph: TimeoutGraph, options: dict) -> Iterable[Finding]:
    ratio = float(options.get("warn-ratio", _default_ratio()))
    for (fn, loop), (periods, ttls) in sorted(renewal_loops(graph).items()):
        if not periods or not ttls:
            continue
        ttl = min(ttls, key=lambda s: _seconds(graph, s) if _seconds(graph, s) is not None else float("inf"))
        t = _seconds(graph, ttl)
        for period in sorted(set(periods)):
            p = _seconds(graph, period)
            if p is None or t is None or p <= 0 or t <= 0 or p <= t * ratio:
                continue
            yield _finding(graph, period, ttl, p, t, ratio)


def renewal_loops(graph: TimeoutGraph) -> dict[tuple[str, str], tuple[list[str], list[str]]]:
    """(function, loop) → (period site ids, renewed TTL site ids)."""
    renewing = _renewing_apis(graph)
    loops: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    tickers: dict[str, list[str]] = {}  # holder symbol → ticker site ids
    for site, path in graph.sites:
        if site.role == "ticker" and site.stored_in:
            holder = graph.resolve_sym(site.stored_in, Ctx(path))
            if holder:
                tickers.setdefault(holder, []).append(site.id)
        loop = site.extra.get("loop")
        if loop is None or site.function is None:
            continue
        periods, ttls = loops.setdefault((site.function, loop), ([], []))
        if site.role in ("sleep", "timer"):
            periods.append(site.id)
        elif site.role == "lease" and site.api in renewing:
            ttls.append(site.id)
    helper_ttls = _ttls_by_function(graph, renewing)
    for fn_sym, (fn, path) in graph.functions.items():
        for m in fn.markers:
            if m.get("m") == "loop" and m.get("ticks"):
                key = (fn_sym, f"{m['line']}:{m['col']}")
                for tick in m["ticks"]:
                    holder = graph.resolve_sym(tick, Ctx(path))
                    loops.setdefault(key, ([], []))[0].extend(tickers.get(holder, ()))
        for call, path in graph.calls_in.get(fn_sym, ()):
            loop = call.extra.get("loop")
            target = graph.resolve_callee(call.callee, Ctx(path)) if loop else None
            if target is not None:
                found = [s for f in graph.reachable([target], limit=40) for s in helper_ttls.get(f, ())]
                if found:
                    loops.setdefault((fn_sym, loop), ([], []))[1].extend(found)
    return loops


def _ttls_by_function(graph: TimeoutGraph, renewing: set[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for site, _ in graph.sites:
        if site.role == "lease" and site.api in renewing and site.function:
            found.setdefault(site.function, []).append(site.id)
    return found


def _renewing_apis(graph: TimeoutGraph) -> set[str]:
    entries = graph.catalog.entries("go", "sites") + graph.catalog.entries("python", "sites")
    return {e["api"] for e in entries if e.get("renews")}


def _seconds(graph: TimeoutGraph, node: str) -> float | None:
    return graph.g.nodes[node].get("effective_seconds")


def _default_ratio() -> float:
    from deadline_audit.rules_doc import get_rule

    return float(get_rule(RULE_ID).option_defaults().get("warn-ratio") or 0.5)


def _finding(graph: TimeoutGraph, period: str, ttl: str, p: float, t: float, ratio: float) -> Finding:
    error = p >= t
    what = graph.g.nodes[period].get("label", "renewal period")
    if error:
        head = f"renewal every {describe_seconds(p)} ({what}) is not shorter than the {describe_seconds(t)} TTL it renews"
        consequence = "the lease lapses before it is renewed, so another holder can take it while this one is alive"
    else:
        head = (f"renewal every {describe_seconds(p)} ({what}) is more than {ratio:g} of the "
                f"{describe_seconds(t)} TTL it renews")
        consequence = "one slow or failed renewal lets the lease lapse while its holder is alive"
    defaults = _default_clause(graph, period, ttl)
    source = _first_source(graph, period)
    return Finding(
        rule_id=RULE_ID, rule=RULE_NAME, severity="error" if error else "warning",
        message=f"{head}{defaults}: {consequence}.",
        location=location_of(graph, period),
        related=[Related(f"TTL set here ({describe_seconds(t)})", location_of(graph, ttl))],
        flow=flow_steps(graph, source, period) if source else [],
        fix=f"renew at about a third of the TTL (every {describe_seconds(t / 3)}), or derive the period from the TTL (ttl / 3).",
    )


def _default_clause(graph: TimeoutGraph, period: str, ttl: str) -> str:
    p, t = graph.g.nodes[period].get("default_seconds"), graph.g.nodes[ttl].get("default_seconds")
    if p is None or t is None or (p == _seconds(graph, period) and t == _seconds(graph, ttl)):
        return ""
    return f" (compiled defaults: every {describe_seconds(p)} for a {describe_seconds(t)} TTL)"


def _first_source(graph: TimeoutGraph, node: str) -> str | None:
    sources = sorted(graph.sources(node))
    env = [s for s in sources if s.startswith("env:")]
    return (env or sources or [None])[0]
