"""DA401 ceiling-mismatch: a timeout value strictly above the ceiling that will clamp it.

Two ways a value reaches a clamp (deadline_audit/wire.py finds clamps, payloads and links):
- over the wire: a payload linked to a receiver's schema sends a value for a field whose
  receiver clamps it (`min(time.Duration(c.TimeoutSeconds)*time.Second, max)`); the value
  is evaluated as the receiver decodes it, with the sender's own resolution (dict entry,
  settings default, env layer, config key);
- in the same program: a configured or default value (env layer, read default, config
  key, literal) that is one of the assignments reaching a clamp.
"Exceeds" is strict. A payload clamped under several ceilings (one per command type) is
compared with the largest. Reported at the origin of the value; related: the clamp.
"""

from __future__ import annotations

from collections.abc import Iterable

from deadline_audit.checks.evidence import describe_seconds
from deadline_audit.findings import Finding, FlowStep, Layer, Location, Related
from deadline_audit.durations import Quantity
from deadline_audit.facts import Expr, same_expr
from deadline_audit.graph import Ctx, TimeoutGraph, _walk
from deadline_audit import wire_eval as w

RULE_ID, RULE_NAME, SEVERITY = "DA401", "ceiling-mismatch", "error"
_EPS = 1e-9


def check(graph: TimeoutGraph, options: dict) -> Iterable[Finding]:
    found = w.analyse(graph)
    reported: set[tuple[str, int]] = set()
    linked_fields = {link.schema.fields[k].sym for link in found.links for k in link.common}
    clamped = {sym for c in found.clamps for sym in c.fed_by}
    linked_fields &= clamped
    for finding in [*_wire_findings(graph, found), *_local_findings(graph, found, linked_fields)]:
        key = (finding.location.path, finding.location.line)
        if key not in reported:
            reported.add(key)
            yield finding


def _local_findings(graph: TimeoutGraph, found: w.Wire, linked: set[str]) -> Iterable[Finding]:
    words = _words(graph)
    for clamp in found.clamps:
        ctx = w.clamp_ctx(graph, clamp)
        unit = w.unit_of(graph, clamp.path)
        ceiling = graph.seconds(clamp.bound, ctx, unit, "effective")
        if ceiling is None or ceiling <= 0 or not _about_time(graph, clamp, ctx, words):
            continue
        alts = w.alternatives(graph, clamp.subject, ctx, clamp.function, clamp.location.line + 1
                              if clamp.form.startswith("min") else clamp.location.line)
        alts += [(v, ctx) for v in w.keyed_config_variants(graph, clamp.subject, clamp.path)]
        # `sent or self.default`: the default arm reaches the clamp whenever nothing is sent
        alts += [(arg, a_ctx) for alt, a_ctx in list(alts) if alt.get("k") == "or" for arg in alt.get("args") or ()]
        # `getattr(tool, "budget_s", policy.default_s)`: the default reaches it for every object without one
        alts += [(alt["args"][2], a_ctx) for alt, a_ctx in list(alts) if alt.get("k") == "call"
                 and (alt.get("fn") or {}).get("name") == "getattr" and len(alt.get("args") or ()) == 3]
        # `d := budgets[profile]`: every value of the looked-up literal may reach it
        alts += [entry for alt, a_ctx in list(alts) for entry in w.lookup_entries(graph, alt, a_ctx)]
        # `suite.get("request_timeout_s")` for each entry of an iterated config list: each
        # entry's value (several values, one unresolved `value` below)
        alts += [entry for alt, a_ctx in list(alts) if graph.seconds(alt, a_ctx, unit, "effective") is None
                 for entry in w.sent_alternatives(graph, alt, a_ctx)
                 if entry[0] is not alt and any(sub.get("k") == "cfg" for sub in _walk(entry[0]))]
        for alt, alt_ctx in alts:
            if same_expr(alt, clamp.bound) or (linked and w.feeders(graph, alt, alt_ctx) & linked):
                continue
            value = graph.seconds(alt, alt_ctx, unit, "effective")
            if value is None or value <= ceiling * (1 + _EPS):
                continue
            origin = w.best_origin(w.origins(graph, alt, alt_ctx, unit), value)
            if origin is None:
                continue
            yield _finding(graph, origin, value, ceiling, clamp, f"flows into the clamp in {_short(clamp.function)}")


def _wire_findings(graph: TimeoutGraph, found: w.Wire) -> Iterable[Finding]:
    for link in found.links:
        p, s = link.payload, link.schema
        for key in sorted(link.common):
            value = p.keys.get(key)
            if value is None:
                continue
            f = s.fields[key]
            clamps = [c for c in found.clamps if f.sym in c.fed_by and w.applies(graph, c, p, s)
                      and (f.duration or _about_time(graph, c, w.clamp_ctx(graph, c), _words(graph)))]
            if not clamps:
                continue
            sender_ctx = Ctx(p.path, fn=p.function)
            # the sender's number is in the unit its name states (`deadline_ms`), seconds else
            sender_unit = w.name_unit(key) or w.name_unit(w.expr_name(graph, value, sender_ctx)) or "s"
            how = f"is sent as `{key}` {w.sent_from(graph, link)} to {w.type_label(graph, s)}, which clamps it"
            known = _received(graph, value, p.path, f, clamps)
            if known and len({round(r, 6) for r, _, _ in known}) != 1:
                continue
            received, top = (known[0][0], max(known, key=lambda item: item[1])) if known else (None, None)
            if top is not None and received > top[1] * (1 + _EPS):
                origin = w.best_origin(w.origins(graph, value, sender_ctx, sender_unit), received)
                if origin is None:
                    at = value.get("at")
                    loc = Location(p.path, at[0], at[1]) if at else p.location
                    origin = w.Origin("lit", loc, f"the `{key}` entry", received, "")
                yield _finding(graph, origin, received, top[1], top[2], how)
                continue
            # several values may be sent (a builder's default and its setter's argument, a
            # helper called with two budgets): each one the receiver cuts, at its origin
            yield from _each_alternative(graph, value, sender_ctx, sender_unit, p.path, f, clamps, how)


def _each_alternative(graph: TimeoutGraph, value: Expr, sender_ctx: Ctx, sender_unit: str, path: str, f,
                      clamps, how: str) -> Iterable[Finding]:
    per = _PER_UNIT.get(sender_unit)
    alternatives = w.sent_alternatives(graph, value, sender_ctx)
    if per is None or len(alternatives) < 2:
        return
    seen: set[tuple[str, int]] = set()
    for alt, alt_ctx in alternatives[:_MAX_ALTERNATIVES]:
        seconds = graph.seconds(alt, alt_ctx, sender_unit)
        if seconds is None or seconds <= 0:
            continue
        known = _received(graph, {"k": "num", "v": seconds * per, "u": None}, path, f, clamps)
        if not known or len({round(r, 6) for r, _, _ in known}) != 1:
            continue
        received = known[0][0]
        top = max(known, key=lambda item: item[1])
        if received <= top[1] * (1 + _EPS):
            continue
        origin = w.best_origin(w.origins(graph, alt, alt_ctx, sender_unit), seconds) or _written_at(alt, alt_ctx, seconds)
        if origin is None:
            continue
        key = (origin.location.path, origin.location.line)
        if key not in seen:
            seen.add(key)
            yield _finding(graph, origin, received, top[1], top[2], how)


def _written_at(expr: Expr, ctx: Ctx, seconds: float) -> w.Origin | None:
    """An expression with no named origin (`3 * 60 * 60` as a dict entry): where it is written."""
    at = next((e.get("at") for e in _walk(expr) if isinstance(e, dict) and e.get("at")), None)
    if not at:
        return None
    return w.Origin("lit", Location(ctx.path, at[0], at[1]), "this value", seconds, "")


_PER_UNIT = {"s": 1.0, "ms": 1000.0}
_MAX_ALTERNATIVES = 6


def _received(graph: TimeoutGraph, value: Expr, path: str, f, clamps) -> list:
    """(the value the receiver's clamp sees, its ceiling, the clamp) for one sent value;
    only those both known and positive."""
    results = []
    sent = w.decoded(graph, value, path, f)
    keyed = f.sym.startswith("key:")  # a Python body read by key: the read becomes the value
    with w.sent_value(graph, f.sym if not keyed else "key:", sent, path):
        for c in clamps:
            ctx = w.clamp_ctx(graph, c)
            unit = _clamp_unit(graph, c, ctx, f)
            ceiling = graph.seconds(c.bound, ctx, unit, "effective")
            alts = [(a, a_ctx) for a, a_ctx in w.alternatives(graph, c.subject, ctx, c.function,
                                                               c.location.line + 1)
                    if f.sym in w.feeders(graph, a, a_ctx)]
            for a, a_ctx in alts:
                if keyed:
                    a = w.replace_reads(graph, a, a_ctx, f.sym, sent)
                results.append((graph.seconds(a, a_ctx, unit, "effective"), ceiling, c))
    return [(r, ceil, c) for r, ceil, c in results if r is not None and ceil is not None and ceil > 0]


def _clamp_unit(graph: TimeoutGraph, clamp: w.Clamp, ctx: Ctx, f) -> str:
    """A Go clamp works in nanoseconds (time.Duration) unless the field it clamps is a plain
    number: then in the unit the field's, its key's or the ceiling's name states
    (`TimeoutSeconds int` clamped at `maxJobTimeoutSeconds`)."""
    unit = w.unit_of(graph, clamp.path)
    if unit != "ns" or f.type not in w._GO_NUMBER_TYPES:
        return unit
    return w.name_unit(f.sym.rsplit(".", 1)[-1]) or w.name_unit(f.key) \
        or w.name_unit(w.expr_name(graph, clamp.bound, ctx)) or unit


def _short(sym: str) -> str:
    body = sym.split(":", 2)[-1]
    return body.rsplit("/", 1)[-1]


def _finding(graph: TimeoutGraph, origin: w.Origin, value: float, ceiling: float, clamp: w.Clamp,
             how: str) -> Finding:
    message = (f"{describe_seconds(value)} ({origin.label}) {how} at {describe_seconds(ceiling)}: "
               f"everything above {describe_seconds(ceiling)} is fiction; lower the value to at most the "
               f"ceiling or raise the ceiling.")
    related = [Related(f"the clamp ({describe_seconds(ceiling)})", clamp.location)]
    if clamp.call is not None:
        related.append(Related("the helper clamp is called here", clamp.at))
    return Finding(RULE_ID, RULE_NAME, SEVERITY, message, origin.location, related,
                   flow=_flow(graph, origin, value, ceiling, clamp))


def _flow(graph: TimeoutGraph, origin: w.Origin, value: float, ceiling: float, clamp: w.Clamp) -> list[FlowStep]:
    """Origin (with every env layer and profile when it is an env variable) -> the clamp."""
    layers: tuple[Layer, ...] = ()
    node = origin.node or f"lit:{origin.location.path}:{origin.location.line}:{origin.location.column}"
    label = origin.label
    if node.startswith("env:") and node[4:] in graph.env:
        var = graph.env[node[4:]]
        layers = tuple(var.layers) + tuple(var.profiles)
        label = node[4:]
    at = clamp.at
    return [FlowStep(node=node, label=label, value_seconds=value, location=origin.location, layers=layers),
            FlowStep(node=f"site:{at.path}:{at.line}:{at.column}", label="clamp", value_seconds=ceiling,
                     location=clamp.location, transform="min")]


def _words(graph: TimeoutGraph) -> tuple[str, ...]:
    return tuple(graph.catalog.file("wire").get("wire", {}).get("duration_words", ()))


def _about_time(graph: TimeoutGraph, clamp: w.Clamp, ctx: Ctx, words: tuple[str, ...]) -> bool:
    """A clamp of a duration: its bound is a Go Duration or a timedelta, or the names of its
    bound or of what feeds it say so (`MAX_RENDER_TIMEOUT_S`, `cfg.FlushTimeout`); a clamp
    of a count (`min(len(batch), MAX_ITEMS)`) is not."""
    value = graph.value(clamp.bound, ctx, "default")
    if isinstance(value, Quantity) and value.unit in ("ns", "s"):
        return True
    names = [sub.get("sym", "").rsplit(".", 1)[-1] or sub.get("name", "") for sub in _walk(clamp.bound)
             if sub.get("k") in ("ref", "field")]
    counts = tuple(graph.catalog.file("wire").get("wire", {}).get("count_words", ()))
    if any(w.is_duration_name(n, counts) for n in names) and not any(w.is_duration_name(n, words) for n in names):
        return False  # the ceiling is a count (`completionMaxSize`)
    names += [sym.rsplit(".", 1)[-1] for sym in clamp.fed_by]
    return any(w.is_duration_name(n, words) for n in names)
