"""DA402 silent-fallback-timeout: a payload without its timeout field (or with 0) sent to
a receiver that falls back to a default when the field is missing or zero.

The payload is linked to the receiver's schema (deadline_audit/wire.py); the receiver's
fallback is one whose subject is fed by the schema field. What the payload sends for the
field is matched against the fallback's trigger:
- left out: a dict without the key, a Go literal without the field (`omitempty`: not sent;
  otherwise its zero value is sent), a model call whose field defaults to None / 0;
- zero: a literal 0 (or a Go field left out without `omitempty`);
and a Go receiver falls back on the zero value (a missing key decodes as zero), `x or D` /
`if not x` on any falsy value, `getattr(o, "k", D)` only on absence.
Reported at the payload, with the fallback value.
"""

from __future__ import annotations

from collections.abc import Iterable

from deadline_audit.checks.evidence import describe_seconds
from deadline_audit.durations import Quantity
from deadline_audit.findings import Finding, Related
from deadline_audit.graph import Ctx, TimeoutGraph
from deadline_audit import wire_eval as w

RULE_ID, RULE_NAME, SEVERITY = "DA402", "silent-fallback-timeout", "warning"
_FIRES = {  # trigger -> what the sender does that fires it
    "zero": {"omitted", "zero", "null"},
    "falsy": {"omitted", "zero", "null"},
    "none": {"omitted", "null"},
    "absent": {"omitted"},
}


def check(graph: TimeoutGraph, options: dict) -> Iterable[Finding]:
    found = w.analyse(graph)
    reported: set[tuple[str, int, str]] = set()
    fed = {sym for fb in found.fallbacks for sym in fb.fed_by}
    spec = graph.catalog.file("wire").get("wire", {})
    cadence = tuple(spec.get("cadence_words", ())) + tuple(spec.get("measure_words", ()))  # no budgets
    structs = {schema.type for schema in found.schemas}
    for link in found.links:
        p, s = link.payload, link.schema
        if p.lang == "go" and all(v is None for v in p.keys.values()):
            continue  # `&Job{}`, `return Spec{}, err`: a zero value to fill or a sentinel, not a send
        for key in sorted(s.fields):
            f = s.fields[key]
            if f.sym not in fed or _no_budget(key, cadence) or f.type in structs and not f.duration:
                continue  # a nested struct left out: its own timeout field is judged where it is built
            sent = _what_is_sent(graph, p, key)
            if sent is None:
                continue
            for fb in found.fallbacks:
                if _names_no_budget(fb.subject, cadence):
                    continue  # `cfg.Sampling.Interval = 1 s`: a cadence inside the field sent
                ctx = Ctx(fb.path, fn=fb.function)
                trigger = "zero" if graph.lang.get(fb.path) == "go" else fb.trigger
                if sent not in _FIRES.get(trigger, ()) or f.sym not in fb.fed_by or not w.applies(graph, fb, p, s):
                    continue
                default = graph.seconds(fb.default, ctx, w.unit_of(graph, fb.path), "effective")
                if default is None or default <= 0 or not (f.duration or _is_duration(graph, fb, ctx)):
                    continue
                where = (p.location.path, p.location.line, key)
                if where in reported:
                    break
                reported.add(where)
                how = {"omitted": f"without `{key}`", "zero": f"with `{key}` = 0",
                       "null": f"with `{key}` = null"}[sent]
                message = (f"this payload is sent {how} {w.sent_from(graph, link)} to {w.type_label(graph, s)}, "
                           f"which then falls back to "
                           f"{_minutes(default)}: the operation runs under {_minutes(default)}; "
                           f"send the timeout it needs explicitly.")
                yield Finding(RULE_ID, RULE_NAME, SEVERITY, message, p.location,
                              [Related(f"fallback to {_minutes(default)}", fb.location),
                               Related(f"the receiving field `{key}`", f.location)])
                break


def _names_no_budget(subject: Expr | None, words: tuple[str, ...]) -> bool:
    """The value that falls back is named as a cadence or a measure (its own name, the
    last part of `x.Sampling.Interval`)."""
    if not isinstance(subject, dict):
        return False
    name = subject.get("name") if subject.get("k") == "field" else str(subject.get("sym", "")).rsplit(".", 1)[-1]
    return _no_budget(str(name or ""), words)


def _no_budget(name: str, words: tuple[str, ...]) -> bool:
    """A name holding a cadence or measure word (a word inside the name, any case)."""
    low = name.lower()
    return bool(low) and any(word in low for word in words)


def _what_is_sent(graph: TimeoutGraph, p: w.Payload, key: str) -> str | None:
    """omitted | zero | null for a payload that leaves the field to the receiver; None
    when it sends a value (or one not known to be zero)."""
    if key in p.omitted:
        return "omitted"
    if key in p.keys:
        value = p.keys[key]
        if value is None:
            return "zero"  # a Go field left out of the literal: its zero value is sent
        return _literal_state(graph, value, p)
    if p.type is None:
        return "omitted"  # a dict without the key
    if key in p.defaults:
        return _literal_state(graph, p.defaults[key], p)
    return None  # a model field without a default: required


def _literal_state(graph: TimeoutGraph, value: dict, p: w.Payload) -> str | None:
    if value.get("k") == "none":
        return "null"
    if value.get("k") == "num" and value.get("v") == 0:
        return "zero"
    return None


def _is_duration(graph: TimeoutGraph, fb: w.Fallback, ctx: Ctx) -> bool:
    """A fallback whose default is a Go Duration or a Python timedelta is about time."""
    value = graph.value(fb.default, ctx)
    return isinstance(value, Quantity) and value.unit in ("ns", "s")


def _minutes(seconds: float) -> str:
    """"2 min" rather than "120 s" for a fallback of whole minutes."""
    if 60 <= seconds < 600 and seconds % 60 == 0:
        return f"{int(seconds // 60)} min"
    return describe_seconds(seconds)
