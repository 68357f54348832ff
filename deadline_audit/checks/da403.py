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

from deadline_audit.config_tags import DECODING_TAGS, tagged_keys
from deadline_audit.durations import Quantity, format_go_duration_ns
from deadline_audit.knobs import knob_index, loaded_config_files
from deadline_audit.findings import Finding, Location, Related
from deadline_audit.graph import Ctx, TimeoutGraph
from deadline_audit import wire_eval as w

RULE_ID, RULE_NAME, SEVERITY = "DA403", "wire-unit-mismatch", "error"
_NUMBERS = w._GO_NUMBER_TYPES
_UNIT_WORDS = {"s": "seconds", "ms": "milliseconds", "min": "minutes", "ns": "nanoseconds"}


def check(graph: TimeoutGraph, options: dict) -> Iterable[Finding]:
    found = w.analyse(graph)
    types = {s.type: s for s in found.schemas}
    problems: dict[str, tuple[w.SchemaField, str, list[Related]]] = {}
    for link in found.links:
        p, s = link.payload, link.schema
        if s.type.startswith("keys:"):
            _python_reader(graph, link, types, problems)
            continue
        if s.lang != "go":
            _python_model(graph, link, types, problems)
            continue
        custom = f"sym:go:{s.type}.UnmarshalJSON" in graph.functions
        sender_schema = types.get(p.type) if p.type else None
        for key in sorted(link.common):
            f = s.fields[key]
            sender_field = sender_schema.fields.get(key) if sender_schema else None
            value = p.keys.get(key)
            if value is None and sender_field is None:
                continue
            ctx = Ctx(p.path, fn=p.function)
            sent = graph.value(value, ctx) if value is not None else None
            at = (value or {}).get("at")
            where = Location(p.path, at[0], at[1]) if at else p.location
            sender_unit = _sender_unit(graph, key, sender_field, value, ctx)
            problem = None
            if f.type == w._GO_DURATION and not custom and value is not None:
                if sender_field is not None:
                    number_sender = sender_field.type in _NUMBERS
                else:  # a dict / map sends a number (or a string), never a Go Duration
                    number_sender = (p.lang == "python" or p.type is None) and not (
                        isinstance(sent, Quantity) and (sent.value == 0 or sent.unit == "ns")) and (
                        sent is not None or value.get("k") in ("ref", "field", "item", "call", "conv", "op"))
                if value.get("k") == "none":
                    number_sender = False
                if number_sender and sender_unit != "ns":
                    n = sent.value if isinstance(sent, Quantity) else None
                    what = f"{n:g}" if n is not None else (repr(sent) if isinstance(sent, str) else "a number")
                    unit_word = f" {_UNIT_WORDS[sender_unit]}" if sender_unit in _UNIT_WORDS else ""
                    problem = (f"`{key}` is a time.Duration: encoding/json decodes the JSON number the sender puts "
                               f"here ({what}{unit_word}) as nanoseconds; decode an integer of a named unit "
                               f"(`{key}_seconds`) and convert it with time.Second.")
            elif f.type in _NUMBERS:
                text = _duration_text(graph, value, ctx, sender_field)
                if text is not None:
                    where = text[1] or where
                    problem = (f"`{key}` is {_article(f.type)} {f.type}, but the sender puts a duration string ({text[0]!r}) here: "
                               f"decoding fails; send a number of a named unit.")
                else:
                    receiver_unit = w.receiver_scale(graph, f)
                    if sender_unit in ("s", "ms", "ns") and receiver_unit in ("s", "ms", "min") \
                            and sender_unit != receiver_unit:
                        problem = (f"`{key}` is sent in {_UNIT_WORDS[sender_unit]} and converted here as "
                                   f"{_UNIT_WORDS[receiver_unit]}; make both sides use the unit the name states.")
            if problem is None:
                continue
            entry = problems.setdefault(f.sym, (f, problem, []))
            if all(r.location != where for r in entry[2]):
                entry[2].append(Related(f"sent here {w.sent_from(graph, link)}", where))
    for f, problem, related in problems.values():
        yield Finding(RULE_ID, RULE_NAME, SEVERITY, problem, f.location, related)
    yield from _config_numbers(graph, options, set(problems))


def _config_numbers(graph: TimeoutGraph, options: dict, reported: set[str]) -> Iterable[Finding]:
    """A config file the program loads gives a bare number to a Go `time.Duration` field
    through its tag (`"probe_timeout": 20` into a `ProbeTimeout time.Duration` field
    tagged `json:"probe_timeout"`): the decoders (encoding/json, yaml, toml, mapstructure) read
    it as nanoseconds, whatever unit the author meant."""
    loaded = set(loaded_config_files(graph, knob_index(graph), options))
    if not loaded:
        return
    for sym, keys in sorted(tagged_keys(graph, DECODING_TAGS).items()):
        decl = graph.decls[sym]
        owner = sym.rsplit(".", 1)[0]
        if decl.type != w._GO_DURATION or sym in reported or any(
                f"{owner}.{m}" in graph.functions for m in ("UnmarshalJSON", "UnmarshalYAML", "UnmarshalText")):
            continue
        for dotted in keys:
            values = [(p, cv) for p, cv in graph.config_values.get(dotted, ()) if p in loaded]
            numbers = [(p, cv) for p, cv in values if cv.is_number and float(cv.raw) != 0]
            if len(values) != 1 or not numbers:
                continue
            path, cv = numbers[0]
            unit = w.name_unit(dotted.rsplit(".", 1)[-1])
            meant = f" {_UNIT_WORDS[unit]}" if unit in _UNIT_WORDS else ""
            message = (f"`{dotted}` is a time.Duration: the config file gives it the bare number {cv.raw}{meant}, "
                       f"which decodes as {cv.raw} nanoseconds; write a duration string (\"{cv.raw}s\") with a "
                       f"decoder that parses one, or make the field an integer of a named unit "
                       f"(`{dotted.rsplit('.', 1)[-1]}_seconds`) and convert it with time.Second.")
            yield Finding(RULE_ID, RULE_NAME, SEVERITY, message,
                          Location(graph.decl_path[sym], decl.span.line, decl.span.column),
                          [Related(f"set here ({dotted}: {cv.raw})", Location(path, cv.span.line, cv.span.column))])
            break


def _sender_unit(graph: TimeoutGraph, key: str, sender_field: w.SchemaField | None, value: dict, ctx: Ctx) -> str | None:
    if sender_field is not None and sender_field.type == w._GO_DURATION:
        return "ns"
    if value is not None and value.get("k") == "conv" and value.get("t") in w.CONVERTED_UNITS:
        return w.CONVERTED_UNITS[value["t"]]
    scaled = w.sent_scale(graph, value, ctx)  # what the arithmetic makes of it beats names
    if scaled:
        return scaled
    for name in (key, sender_field.sym.rsplit(".", 1)[-1] if sender_field else None, w.expr_name(graph, value, ctx)):
        unit = w.name_unit(name)
        if unit:
            return unit
    return None


def _duration_text(graph: TimeoutGraph, value: dict | None, ctx: Ctx,
                   sender_field: w.SchemaField | None) -> tuple[str, Location | None] | None:
    """A duration string the sender puts in the field ("2m0s"): the value itself, or, for a
    Go sender whose field is a string, an assignment of `d.String()` / a duration literal."""
    candidates = []
    if value is not None:
        candidates.append((value, ctx, None))
    if sender_field is not None and sender_field.type == "string":
        for b, path in graph.bindings.get(sender_field.sym, ())[:16]:
            candidates.append((b.expr, Ctx(path, fn=b.function), Location(path, b.span.line, b.span.column)))
    for expr, c, loc in candidates:
        sent = graph.value(expr, c)
        if w.is_duration_string(sent):
            return sent, loc
        fn = expr.get("fn") or {}
        if expr.get("k") == "call" and fn.get("k") == "method" and fn.get("name") == "String" and not expr.get("args"):
            inner = graph.value(fn.get("x"), c)
            if isinstance(inner, Quantity) and inner.unit == "ns":
                return format_go_duration_ns(int(inner.value)), loc
    return None


def _article(word: str | None) -> str:
    return "an" if (word or "")[:1] in "aeiou" else "a"


def _python_reader(graph: TimeoutGraph, link: w.Link, types: dict, problems: dict) -> None:
    """A Go struct marshalled with a `time.Duration` field (integer nanoseconds on the wire)
    read by Python code as a number of seconds (`timedelta(seconds=data["timeout"])`)."""
    p, s = link.payload, link.schema
    sender_schema = types.get(p.type) if p.lang == "go" and p.type else None
    if sender_schema is None:
        return
    for key in sorted(link.common):
        sender_field = sender_schema.fields.get(key)
        f = s.fields[key]
        if sender_field is not None and sender_field.type in _NUMBERS:
            _key_read_in_another_unit(graph, link, key, sender_field, f, problems)
            continue
        if sender_field is None or sender_field.type != w._GO_DURATION or w.name_unit(key) == "ms":
            continue
        problem = (f"`{key}` arrives as integer nanoseconds (the sender's field is a Go time.Duration, which "
                   f"encoding/json writes as a number of ns) and is read here as seconds; send "
                   f"`{key}_seconds` (d.Seconds()) or divide by 1e9.")
        entry = problems.setdefault(f.sym, (f, problem, []))
        where = sender_field.location
        if all(r.location != where for r in entry[2]):
            entry[2].append(Related("the sender's field", where))


def _python_model(graph: TimeoutGraph, link: w.Link, types: dict, problems: dict) -> None:
    """A number sent in one unit (`budget.Milliseconds()`, `*_ms`) into a Python model
    field that the receiver uses in another: its name's unit, else the unit of every
    timeout it feeds (`asyncio.timeout(envelope.timeout)`: seconds)."""
    p, s = link.payload, link.schema
    sender_schema = types.get(p.type) if p.type else None
    for key in sorted(link.common):
        f = s.fields[key]
        sender_field = sender_schema.fields.get(key) if sender_schema else None
        value = p.keys.get(key)
        if value is None or (sender_field is not None and sender_field.type == w._GO_DURATION):
            continue  # (a Duration field sent as nanoseconds: _python_reader's case)
        sender_unit = _sender_unit(graph, key, sender_field, value, Ctx(p.path, fn=p.function))
        receiver_unit = w.name_unit(f.sym.rsplit(".", 1)[-1]) or _used_in(graph, f.sym)
        if sender_unit not in ("s", "ms") or receiver_unit not in ("s", "ms") or sender_unit == receiver_unit:
            continue
        problem = (f"`{key}` is sent in {_UNIT_WORDS[sender_unit]} and used here as {_UNIT_WORDS[receiver_unit]}; "
                   f"make both sides use the unit the name states (`{key}_{'ms' if sender_unit == 'ms' else 'seconds'}`).")
        at = value.get("at")
        where = Location(p.path, at[0], at[1]) if at else p.location
        entry = problems.setdefault(f.sym, (f, problem, []))
        if all(r.location != where for r in entry[2]):
            entry[2].append(Related(f"sent here {w.sent_from(graph, link)}", where))


def _used_in(graph: TimeoutGraph, sym: str) -> str | None:
    """The one unit of the timeout sites a value flows into directly, if they agree."""
    if sym not in graph.g:
        return None
    units = {graph.g.nodes[n].get("unit") for n in graph.g.successors(sym) if graph.g.nodes[n].get("kind") == "site"}
    return units.pop() if len(units) == 1 else None


def _key_read_in_another_unit(graph: TimeoutGraph, link: w.Link, key: str, sender_field: w.SchemaField,
                              f: w.SchemaField, problems: dict) -> None:
    """A number sent in a stated unit (`effective_timeout_ms` = `budget.Milliseconds()`)
    that the Python receiver reads by key and scales as another (`timedelta(seconds=…)`)."""
    p, s = link.payload, link.schema
    value = p.keys.get(key)
    sender_unit = _sender_unit(graph, key, sender_field, value, Ctx(p.path, fn=p.function))
    body = s.type.removeprefix("keys:")
    receiver_unit = _scaled_as(graph, body, key)
    if sender_unit not in ("s", "ms") or receiver_unit not in ("s", "ms") or sender_unit == receiver_unit:
        return
    problem = (f"`{key}` is sent in {_UNIT_WORDS[sender_unit]} and read here as {_UNIT_WORDS[receiver_unit]}; "
               f"convert it where it is read (`timedelta({_UNIT_WORDS[sender_unit]}=…)`).")
    at = (value or {}).get("at")
    where = Location(p.path, at[0], at[1]) if at else p.location
    entry = problems.setdefault(f.sym, (f, problem, []))
    if all(r.location != where for r in entry[2]):
        entry[2].append(Related(f"sent here {w.sent_from(graph, link)}", where))


_SCALES = {1.0: "s", 0.001: "ms"}


def _scaled_as(graph: TimeoutGraph, body: str, key: str) -> str | None:
    """The unit the receiving function gives `body[key]`: a `timedelta(seconds=x)` (the
    extractor's `x × 1 s`) of the read, or of a local bound to it."""
    function = body.rsplit(".", 1)[0]
    if function not in graph.functions:
        return None
    path = graph.functions[function][1]
    ctx = Ctx(path, fn=function)

    def reads_key(expr: dict, depth: int = 0) -> bool:
        for sub in w._walk(expr):
            if w.read_of(graph, sub, ctx) == (body, key):
                return True
            if depth < 2 and sub.get("k") == "ref" and sub["sym"].startswith(function + "."):
                if any(reads_key(b.expr, depth + 1) for b, _ in graph.bindings.get(sub["sym"], ())[:4]):
                    return True
        return False

    exprs = [b.expr for _, b, _ in graph.bindings_by_function().get(function, ())]
    exprs += [a for c, _ in graph.calls_in.get(function, ()) for a in [*c.args, *c.kw.values()]]
    units = set()
    for expr in exprs:
        for sub in w._walk(expr):
            args = sub.get("args") or []
            if sub.get("k") == "op" and sub.get("op") == "mul" and len(args) == 2 \
                    and args[1].get("k") == "num" and args[1].get("u") == "s" and args[1].get("v") in _SCALES \
                    and reads_key(args[0]):
                units.add(_SCALES[args[1]["v"]])
    return units.pop() if len(units) == 1 else None
