"""DA403 wire-unit-mismatch: a timeout sent in one unit and decoded in another.

For each payload linked to a receiver's schema (deadline_audit/wire.py) and each field it
sends:
- a JSON number into a Go `time.Duration` field (no `UnmarshalJSON` of the module on the
  receiving struct): encoding/json reads it as nanoseconds. A Go sender whose own field is
  a `time.Duration` sends nanoseconds, which is consistent;
- units evident on both sides that disagree: the sender's unit from the key, its own field
  name or the name the value is held under (`*_ms`, `*Seconds`), the receiver's from its
  arithmetic (`time.Duration(x) * time.Second` / `time.Millisecond`);
- a duration string ("2m0s") into a numeric Go field.
Reported at the receiving field; related: the senders.
"""

from __future__ import annotations

from collections.abc import Iterable

from deadline_audit.durations import Quantity
from deadline_audit.findings import Finding, Location, Related
from deadline_audit.graph import Ctx, TimeoutGraph
from deadline_audit import wire as w

RULE_ID, RULE_NAME, SEVERITY = "DA403", "wire-unit-mismatch", "error"
_NUMBERS = w._GO_NUMBER_TYPES
_UNIT_WORDS = {"s": "seconds", "ms": "milliseconds", "min": "minutes"}


def check(graph: TimeoutGraph, options: dict) -> Iterable[Finding]:
    found = w.analyse(graph)
    types = {s.type: s for s in found.schemas}
    problems: dict[str, tuple[w.SchemaField, str, list[Related]]] = {}
    for link in found.links:
        p, s = link.payload, link.schema
        if s.lang != "go":
            continue
        custom = f"sym:go:{s.type}.UnmarshalJSON" in graph.functions
        for key in sorted(link.common):
            value = p.keys.get(key)
            if value is None:
                continue
            f = s.fields[key]
            ctx = Ctx(p.path, fn=p.function)
            sent = graph.value(value, ctx)
            sender_field = types[p.type].fields.get(key) if p.type in types else None
            at = value.get("at")
            where = Location(p.path, at[0], at[1]) if at else p.location
            problem = None
            if f.type == w._GO_DURATION and not custom:
                number_sender = (sender_field.type in _NUMBERS if sender_field is not None
                                 else p.lang == "python" and isinstance(sent, Quantity) and sent.unit in (None, "s"))
                sender_unit = _sender_unit(graph, key, sender_field, value, ctx)
                if number_sender and sender_unit != "ns":
                    n = sent.value if isinstance(sent, Quantity) else None
                    what = f"{n:g}" if n is not None else "a number"
                    problem = (f"`{key}` is a time.Duration: encoding/json decodes the JSON number the sender puts "
                               f"here ({what}{' ' + _UNIT_WORDS[sender_unit] if sender_unit in _UNIT_WORDS else ''})"
                               f" as nanoseconds; decode an integer of a named unit (`{key}_seconds`) and convert "
                               f"it with time.Second.")
            elif f.type in _NUMBERS:
                if w.is_duration_string(sent):
                    problem = (f"`{key}` is a {f.type}, but the sender puts a duration string ({sent!r}) here: "
                               f"decoding fails; send a number of a named unit.")
                else:
                    sender_unit = _sender_unit(graph, key, sender_field, value, ctx)
                    receiver_unit = w.receiver_scale(graph, f)
                    if sender_unit in ("s", "ms") and receiver_unit in ("s", "ms", "min") and sender_unit != receiver_unit:
                        problem = (f"`{key}` is sent in {_UNIT_WORDS[sender_unit]} and converted here as "
                                   f"{_UNIT_WORDS[receiver_unit]}; make both sides use the unit the name states.")
            if problem is None:
                continue
            entry = problems.setdefault(f.sym, (f, problem, []))
            if all(r.location != where for r in entry[2]):
                entry[2].append(Related("sent here", where))
    for f, problem, related in problems.values():
        yield Finding(RULE_ID, RULE_NAME, SEVERITY, problem, f.location, related)


def _sender_unit(graph: TimeoutGraph, key: str, sender_field: w.SchemaField | None, value: dict, ctx: Ctx) -> str | None:
    if sender_field is not None and sender_field.type == w._GO_DURATION:
        return "ns"
    for name in (key, sender_field.sym.rsplit(".", 1)[-1] if sender_field else None, w.expr_name(graph, value, ctx)):
        unit = w.name_unit(name)
        if unit:
            return unit
    return None
