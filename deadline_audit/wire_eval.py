"""Evaluation over wire links (deadline_audit/wire.py) for the checks DA401-DA403: the
values that reach a clamp, a receiver evaluated with what one payload sends, where a value
is written (env layer, config key, literal), units on both sides, per-command ceilings.

The checks import this module only: it re-exports what they use of `wire`.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from deadline_audit.config_documents import key_read
from deadline_audit.durations import parse_go_duration
from deadline_audit.facts import Binding, Expr, Span
from deadline_audit.findings import Location
from deadline_audit.graph import SCENARIOS, Ctx, TimeoutGraph, _walk, to_seconds
from deadline_audit.wire_routes import other_route
from deadline_audit.wire import (  # noqa: F401 - re-exported for the checks
    called_returns,
    _GO_DURATION,
    _GO_NUMBER_TYPES,
    Clamp,
    Fallback,
    Link,
    Origin,
    Payload,
    Schema,
    SchemaField,
    Wire,
    analyse,
    clamp_ctx,
    component_name,
    component_of,
    feeders,
    is_duration_name,
    name_unit,
    read_of,
    unit_of,
)


def alternatives(graph: TimeoutGraph, expr: Expr, ctx: Ctx, function: str, before: int,
                 depth: int = 0) -> list[tuple[Expr, Ctx]]:
    """The values that may reach `expr` at line `before`, each with the context to
    evaluate it in: a local assigned in several places gives each of its assignments
    written above the line; a helper's parameter gives the caller's argument (and its
    alternatives at the call)."""
    if expr.get("k") == "ref" and depth < 4:
        sym = expr["sym"]
        if sym in ctx.subst and ctx.call_at is not None:
            arg, arg_ctx = ctx.subst[sym]
            if arg_ctx.fn:
                return alternatives(graph, arg, arg_ctx, arg_ctx.fn, ctx.call_at[1], depth + 1)
            return [(arg, arg_ctx)]
        if sym.startswith(function + ".") and sym not in ctx.subst:
            every = [b for b, p in graph.bindings.get(sym, ()) if p == ctx.path and b.function == function]
            guarded = _guarded_lines(graph, function)
            binds = [b for b in every if b.span.line < before and b.span.line not in guarded
                     and not _other_case(graph, function, b.span.line, before)]
            if len(every) > 1 and binds:
                return [(b.expr, ctx) for b in binds]
        tables = [b.expr for b, _ in graph.bindings.get(sym, ())]
        if len(tables) > 1 and all(t.get("k") == "cfg" for t in tables):
            # a model field filled from several tables (`carriers.ups.…`, `carriers.dhl.…`,
            # settings_tables.py): each table's value reaches the code
            return [(t, ctx) for t in tables]
    return [(expr, ctx)]


def mentions(graph: TimeoutGraph, expr: Expr | None, ctx: Ctx, target: str, depth: int = 0,
             seen: set | None = None) -> bool:
    """Whether `target` (a symbol) feeds `expr`, through locals and the returns of called
    functions of the module."""
    if not expr or depth > 6:
        return False
    seen = set() if seen is None else seen
    for sub in _walk(expr):
        k = sub.get("k")
        if k in ("ref", "field"):
            sym = graph.resolve_sym(sub, ctx)
            if sym == target:
                return True
            if sym in ctx.subst and ("arg", sym) not in seen:
                seen.add(("arg", sym))
                arg, arg_ctx = ctx.subst[sym]
                if mentions(graph, arg, arg_ctx, target, depth + 1, seen):
                    return True
                continue
            if sym and ctx.fn and sym.startswith(ctx.fn + ".") and sym not in seen:
                seen.add(sym)
                for b, _ in graph.bindings.get(sym, ())[:8]:
                    if mentions(graph, b.expr, ctx, target, depth + 1, seen):
                        return True
        elif k == "call":
            if any(mentions(graph, r, inner, target, depth + 1, seen) for r, inner in called_returns(graph, sub, ctx, seen)):
                return True
    return False


@contextmanager
def sent_value(graph: TimeoutGraph, field_sym: str, expr: Expr, path: str) -> Iterator[None]:
    """Evaluate the receiver as if `field_sym` held `expr` (what one payload sends)."""
    saved_bindings = graph.bindings.get(field_sym)
    saved_memo = {k: v for k, v in graph._memo.items() if isinstance(k, tuple) and len(k) == 2 and k[1] in SCENARIOS}
    for k in saved_memo:
        del graph._memo[k]
    graph.bindings[field_sym] = [(Binding(field_sym, expr, Span(1, 1, 1, 1)), path)]
    try:
        yield
    finally:
        if saved_bindings is None:
            graph.bindings.pop(field_sym, None)
        else:
            graph.bindings[field_sym] = saved_bindings
        for k in [k for k in graph._memo if isinstance(k, tuple) and len(k) == 2 and k[1] in SCENARIOS]:
            del graph._memo[k]
        graph._memo.update(saved_memo)


_TEXT_TYPES = frozenset({"string", "str", "builtins.str"})


def decoded(graph: TimeoutGraph, value: Expr, sender_path: str, field: SchemaField) -> Expr:
    """What the receiver's field holds after JSON decoding of the sent value: a text field
    holds the text (`MaxRuntime string` then `time.ParseDuration`), others the number."""
    if field.type in _TEXT_TYPES:
        return value
    number = {"k": "conv", "t": "number", "x": value}
    if field.type == _GO_DURATION:
        return {"k": "conv", "t": "json_decode_ns", "x": number}
    return number


def origins(graph: TimeoutGraph, expr: Expr | None, ctx: Ctx, unit: str | None, depth: int = 0,
            seen: set | None = None) -> list[Origin]:
    """Where the value of `expr` is written: env layers (or the read's default), config
    keys, literals; in the order met."""
    out: list[Origin] = []
    seen = set() if seen is None else seen
    if not expr or depth > 10:
        return out
    for node, named, dep_ctx, _ in graph.deps(expr, ctx):
        if node in seen:
            continue
        seen.add(node)
        if node.startswith("env:"):
            var = graph.env.get(node[4:])
            won = var.effective_raw() if var else None
            if won is not None:
                layer = won[1]
                where = f"{layer.path}" + (f" (profile {layer.profile})" if layer.profile else "")
                # a bare number counts in the unit the variable's name states (`*_TIMEOUT_MS`)
                seconds = _config_seconds(layer.raw, unit, node[4:]) if name_unit(node[4:]) else layer.value_seconds
                out.append(Origin("env", Location(layer.path, layer.line, 1), f"{node[4:]}={layer.raw} in {where}",
                                  seconds, node))
            elif (named.get("default") or {}).get("k") == "str" and (named["default"].get("at") or named.get("at")):
                at = named["default"].get("at") or named["at"]  # a settings field's text default: its line
                out.append(Origin("lit", Location(dep_ctx.path, at[0], at[1]), f"the default of {node[4:]}",
                                  _config_seconds(named["default"]["v"], unit), node))
            elif named.get("default") is not None:
                for o in origins(graph, named["default"], dep_ctx, unit, depth + 1, seen):
                    out.append(Origin(o.kind, o.location, f"the default of {node[4:]} ({o.label})", o.seconds, node))
        elif node.startswith("cfg:"):
            key = node.split("#", 1)[-1]
            for cpath, cv in graph.config_values.get(key, ())[:1]:
                seconds = _config_seconds(cv.raw, unit, key)
                out.append(Origin("cfg", Location(cpath, cv.span.line, cv.span.column), f"{key}: {cv.raw} in {cpath}",
                                  seconds, node))
        elif node.startswith("lit:"):
            at = named.get("at") or [1, 1]
            value = graph.value(named, dep_ctx)
            raw = named.get("v")
            text = f"{raw:g}" if isinstance(raw, (int, float)) and named.get("u") is None else ""
            out.append(Origin("lit", Location(dep_ctx.path, at[0], at[1]), f"the literal {text}".strip(),
                              to_seconds(value, unit), node))
        elif node.startswith("sym:"):
            for b, bpath in graph.bindings.get(node, ())[:8]:
                out.extend(origins(graph, b.expr, Ctx(bpath), unit, depth + 1, seen))
                if b.expr.get("k") == "op":  # `BACKUP_TIMEOUT_S = 90 * 60`: the line computing it
                    out.append(Origin("sym", Location(bpath, b.span.line, b.span.column),
                                      f"{node.rsplit('.', 1)[-1]} = {_op_text(b.expr)}",
                                      graph.seconds(b.expr, Ctx(bpath), unit), node))
    return out


def _op_text(expr: Expr) -> str:
    """`90 * 60 * 1000` as written (numbers and arithmetic only)."""
    if expr.get("k") == "num":
        return f"{expr['v']:g}"
    args = expr.get("args") or []
    sign = {"mul": "*", "add": "+", "sub": "-", "div": "/"}.get(expr.get("op", ""))
    if expr.get("k") == "op" and sign and len(args) == 2:
        left, right = _op_text(args[0]), _op_text(args[1])
        if "an expression" not in (left, right):
            return f"{left} {sign} {right}"
    return "an expression"


def _config_seconds(raw: str, unit: str | None, key: str | None = None) -> float | None:
    """A bare number is read in the unit its key states (`finalize_timeout_ms`), else in
    seconds."""
    from deadline_audit.durations import parse_duration_text

    return parse_duration_text(raw, default_unit=name_unit(key.rsplit(".", 1)[-1] if key else None) or "s")


def lookup_entries(graph: TimeoutGraph, expr: Expr | None, ctx: Ctx) -> list[tuple[Expr, Ctx]]:
    """`budgets[profile]` (a key known only at run time): the values of the map or dict
    literal it looks up, each with where to evaluate it."""
    container = expr.get("lookup") if expr else None
    sym = graph.resolve_sym(container, ctx) if container else None
    bound = graph.bindings.get(sym, ()) if sym else ()
    if len(bound) != 1:
        return []
    b, bpath = bound[0]
    items = b.expr.get("items") if b.expr.get("k") in ("dict", "unknown") else None
    return [(v, Ctx(bpath, fn=b.function)) for _, v in (items or ())[:16] if isinstance(v, dict)]


def sent_alternatives(graph: TimeoutGraph, expr: Expr | None, ctx: Ctx, depth: int = 0,
                      seen: frozenset = frozenset()) -> list[tuple[Expr, Ctx]]:
    """The values a sender may put in one key, each with where to evaluate it: through
    the bindings of a variable, field or parameter (a builder's default and its setter's
    argument), and both arms of `a if test else b`. One entry when there is no choice."""
    if not expr or depth > 6:
        return [(expr, ctx)] if expr else []
    k = expr.get("k")
    if k in ("item", "call"):
        read = graph.document_read(expr, ctx)  # one key of several config tables (config_documents.py)
        if read is not None and read.get("k") == "choice":
            expr, k = read, "choice"
    if k == "choice":
        return [alt for a in expr.get("args") or () for alt in sent_alternatives(graph, a, ctx, depth + 1, seen)][:8]
    if expr.get("lookup") is not None:
        entries = lookup_entries(graph, expr, ctx)
        return [alt for e, e_ctx in entries for alt in sent_alternatives(graph, e, e_ctx, depth + 1, seen)][:16] \
            or [(expr, ctx)]
    if k == "call":
        fn = expr.get("fn") or {}
        args = expr.get("args") or []
        if fn.get("k") == "method" and fn.get("name") == "get" and len(args) == 2 and args[0].get("k") != "str":
            # `BUDGETS.get(bank, DEFAULT)`: any value of the literal, or the default
            entries = lookup_entries(graph, {"lookup": fn.get("x")}, ctx)
            if entries:
                return [alt for e, e_ctx in [*entries, (args[1], ctx)]
                        for alt in sent_alternatives(graph, e, e_ctx, depth + 1, seen)][:16]
        target = graph.resolve_callee(fn, ctx) if fn.get("k") in ("fnref", "method") else None
        if target is not None and target in graph.functions and target not in seen:
            # a helper returning one of several values (`settle_timeout_for(bank)`)
            callee, cpath = graph.functions[target]
            inner = Ctx(cpath, graph.call_subst(callee, expr, ctx), fn=target)
            found = [alt for r in callee.returns[:4]
                     for alt in sent_alternatives(graph, r, inner, depth + 1, seen | {target})]
            if len(found) > 1:
                return found[:16]
        return [(expr, ctx)]
    if k == "conv" and expr.get("x") is not None:
        return [({**expr, "x": a}, a_ctx) for a, a_ctx in sent_alternatives(graph, expr["x"], ctx, depth + 1, seen)]
    if k in ("ref", "field"):
        sym = graph.resolve_sym(expr, ctx)
        if sym is None or sym in seen:
            return [(expr, ctx)]
        if sym in ctx.subst:
            arg, arg_ctx = ctx.subst[sym]
            return sent_alternatives(graph, arg, arg_ctx, depth + 1, seen | {sym})
        bound = [(b, p) for b, p in graph.bindings.get(sym, ())[:8] if not b.is_default] or \
            graph.bindings.get(sym, ())[:8]
        if not bound:
            return [(expr, ctx)]
        found = [alt for b, p in bound
                 for alt in sent_alternatives(graph, b.expr, Ctx(p, fn=b.function), depth + 1, seen | {sym})]
        return found[:8] if len(found) > 1 else [(expr, ctx)]
    return [(expr, ctx)]


def best_origin(found: list[Origin], seconds: float | None) -> Origin | None:
    """The origin that holds `seconds` (env layer first, then config, then literal)."""
    rank = {"env": 0, "cfg": 1, "lit": 2, "sym": 3}
    matching = [o for o in found if o.seconds is not None and seconds is not None
                and abs(o.seconds - seconds) <= 1e-6 * max(1.0, abs(seconds))]
    if matching:
        return min(matching, key=lambda o: rank[o.kind])
    return None


def expr_name(graph: TimeoutGraph, expr: Expr | None, ctx: Ctx) -> str | None:
    """The name a value is held under at the sender (`settings.flush_ms` -> flush_ms)."""
    if not expr:
        return None
    k = expr.get("k")
    if k in ("ref", "field"):
        sym = graph.resolve_sym(expr, ctx)
        return (sym or "").rsplit(".", 1)[-1] or expr.get("name")
    if k == "conv":
        return expr_name(graph, expr.get("x"), ctx)
    return None


_SECONDS_TO = {1e3: "ms", 1e6: "us", 1e9: "ns"}
# the unit a conversion's result counts in: `td.total_seconds()`, `d.Seconds()`, `d.Milliseconds()`
CONVERTED_UNITS = {"timedelta_seconds": "s", "seconds_of": "s", "ms_of": "ms"}
_SECONDS_CONVS = tuple(t for t, unit in CONVERTED_UNITS.items() if unit == "s")


def sent_scale(graph: TimeoutGraph, expr: Expr | None, ctx: Ctx) -> str | None:
    """The unit a sender's arithmetic gives a number: a count of seconds
    (`td.total_seconds()`, `d.Seconds()`, a name in seconds) times 1000 -> ms, times
    10^9 -> ns (`int(grace.total_seconds() * NANOS_PER_SECOND)`)."""
    while expr and expr.get("k") == "conv" and expr.get("t") == "number":
        expr = expr.get("x")
    if not expr or expr.get("k") != "op" or expr.get("op") != "mul" or len(expr.get("args") or ()) != 2:
        return None
    a, b = expr["args"]
    for count, factor in ((a, b), (b, a)):
        in_seconds = (count.get("k") == "conv" and count.get("t") in _SECONDS_CONVS) or \
            name_unit(expr_name(graph, count, ctx)) == "s"
        scale = graph.value(factor, ctx) if in_seconds else None
        if scale is not None and getattr(scale, "unit", "x") is None:
            unit = _SECONDS_TO.get(scale.value)
            if unit:
                return unit
    return None


def receiver_scale(graph: TimeoutGraph, f: SchemaField) -> str | None:
    """The unit the receiver gives an integer field: `time.Duration(x) * time.Second`
    -> s, `* time.Millisecond` -> ms; None when it never converts it (or converts it in
    two ways)."""
    key = ("_wire_scales",)
    index = graph._memo.get(key)
    if index is None:
        index = {}
        for binds in graph.bindings.values():
            for b, path in binds:
                if graph.lang.get(path) == "go":
                    _scales_in(graph, b.expr, Ctx(path, fn=b.function), index)
        for fn_sym, (fn, path) in graph.functions.items():
            if graph.lang.get(path) == "go":
                for ret in fn.returns:
                    _scales_in(graph, ret, Ctx(path, fn=fn_sym), index)
        for site, path in graph.sites:  # `cmd.WaitDelay = time.Duration(req.GraceMs) * time.Second`
            if graph.lang.get(path) == "go" and site.value:
                _scales_in(graph, site.value, Ctx(path, fn=site.function), index)
        graph._memo[key] = index
    units = index.get(f.sym, set())
    return next(iter(units)) if len(units) == 1 else None


def _scales_in(graph: TimeoutGraph, expr: Expr, ctx: Ctx, index: dict[str, set[str]]) -> None:
    for sub in _walk(expr):
        if sub.get("k") != "op" or sub.get("op") != "mul" or len(sub.get("args") or ()) != 2:
            continue
        a, b = sub["args"]
        for conv, unit in ((a, b), (b, a)):
            if conv.get("k") == "conv" and conv.get("t") == "go_duration" and unit.get("k") == "num" \
                    and unit.get("u") == "ns":
                sym = graph.resolve_sym(conv.get("x") or {}, ctx)
                name = {1e9: "s", 1e6: "ms", 6e10: "min"}.get(unit.get("v"))
                if sym and name:
                    index.setdefault(sym, set()).add(name)


def is_duration_string(value: Any) -> bool:
    return isinstance(value, str) and parse_go_duration(value) is not None and not value.strip().isdigit()


def _case_at(graph: TimeoutGraph, function: str | None, line: int) -> tuple[dict, list[dict]] | None:
    """The innermost `case` clause around `line` in `function`, and every clause of its switch."""
    if function not in graph.functions:
        return None
    markers = [m for m in graph.functions[function][0].markers if m.get("m") == "case"]
    inside = [m for m in markers if m["line"] <= line <= m["end"]]
    if not inside:
        return None
    clause = max(inside, key=lambda m: m["line"])
    return clause, [m for m in markers if m["switch"] == clause["switch"]]


def applies(graph: TimeoutGraph, clamp: Clamp | Fallback, payload: Payload, schema: Schema) -> bool:
    """Whether a clamp (or fallback) written under a `case` of a switch on a schema field
    (the discriminator) applies to this payload: its discriminator value is one of the
    case's values (or, under `default:`, none of the switch's). Unknown: it may apply."""
    if other_route(graph, clamp.call[0].function if getattr(clamp, "call", None) is not None else clamp.function,
                   payload):
        return False  # written in the handler of another route
    if getattr(clamp, "call", None) is not None:
        call, path = clamp.call
        found = _case_at(graph, call.function, call.span.line)
        ctx = Ctx(path)
    else:
        found = _case_at(graph, clamp.function, clamp.location.line)
        ctx = Ctx(clamp.path, fn=clamp.function)
    if found is None:
        return True
    clause, clauses = found
    disc = graph.resolve_sym(clause["subject"], ctx)
    key = next((f.key for f in schema.fields.values() if f.sym == disc), None)
    if key is None or payload.keys.get(key) is None:
        return True
    sent = graph.value(payload.keys[key], Ctx(payload.path, fn=payload.function))
    if not isinstance(sent, str):
        return True

    def values(m: dict) -> list:
        return [graph.value(v, ctx) for v in m.get("values") or ()]

    if clause.get("values") is None:
        listed = [v for m in clauses if m.get("values") is not None for v in values(m)]
        if any(v is None for v in listed):
            return True
        return sent not in listed
    mine = values(clause)
    return sent in mine or any(v is None for v in mine)


def _guarded_lines(graph: TimeoutGraph, function: str) -> set[int]:
    """Lines of a function's guarded clamp assignments (`if x > MAX { x = MAX }`): what
    they assign is the ceiling, not a value that reaches the next clamp."""
    fn = graph.functions.get(function, (None,))[0]
    if fn is None:
        return set()
    return {m["assign"][0] for m in fn.markers if m.get("m") == "ceiling" and m.get("assign")}


def _other_case(graph: TimeoutGraph, function: str, line: int, use: int) -> bool:
    """An assignment inside a `case` clause that does not contain the use."""
    found = _case_at(graph, function, line)
    return found is not None and not (found[0]["line"] <= use <= found[0]["end"])


_CONFIG_SUFFIXES = (".yaml", ".yml", ".toml", ".json")


def keyed_config_variants(graph: TimeoutGraph, expr: Expr, path: str) -> list[Expr]:
    """`body.get("timeout_s", 300)` where `body` is one entry of a table the same module
    reads from a config file it names (`doc.get("profiles")` of "profiles.yaml"): one
    variant of `expr` per entry of that table, with the read replaced by the entry's
    config key (`profiles.nightly.timeout_s`)."""
    reads = [sub for sub in _walk(expr) if _read_key(sub)]
    if len(reads) != 1:
        return []
    key = _read_key(reads[0])
    files, tables = _module_config_names(graph, path)
    if not files or not tables:
        return []
    variants = []
    for dotted, values in graph.config_values.items():
        parts = dotted.split(".")
        if len(parts) != 3 or parts[2] != key or parts[0] not in tables or len(values) != 1:
            continue
        if not any(values[0][0].endswith(f) for f in files):
            continue
        read = {"k": "cfg", "key": dotted, "file": values[0][0], "default": None}
        variants.append(_replace(expr, reads[0], read))
    return variants


def _read_key(expr: Expr) -> str | None:
    read = key_read(expr)
    return read[1] if read is not None else None


def _module_config_names(graph: TimeoutGraph, path: str) -> tuple[set[str], set[str]]:
    """Config file names (string literals ending in .yaml/.toml/…) and keys read with a
    string subscript or `.get` anywhere in the file."""
    key = ("_wire_config_names", path)
    if key in graph._memo:
        return graph._memo[key]
    files, tables = set(), set()
    exprs = [b.expr for binds in graph.bindings.values() for b, p in binds if p == path]
    exprs += [r for fn, p in graph.functions.values() if p == path for r in fn.returns]
    exprs += [a for calls in graph.calls_in.values() for c, p in calls if p == path for a in (*c.args, *c.kw.values())]
    exprs += [{"k": "call", "fn": c.callee, "args": c.args} for calls in graph.calls_in.values() for c, p in calls
              if p == path]
    for expr in exprs:
        for sub in _walk(expr):
            if sub.get("k") == "str" and isinstance(sub.get("v"), str) and sub["v"].endswith(_CONFIG_SUFFIXES):
                files.add(sub["v"].lstrip("./"))
            name = _read_key(sub)
            if name:
                tables.add(name)
    graph._memo[key] = (files, tables)
    return files, tables


def _replace(expr: Any, old: Expr, new: Expr) -> Any:
    if expr is old:
        return new
    if isinstance(expr, dict):
        return {k: _replace(v, old, new) for k, v in expr.items()}
    if isinstance(expr, list):
        return [_replace(v, old, new) for v in expr]
    return expr


def type_label(graph: TimeoutGraph, schema: Schema) -> str:
    """`example.com/agent/internal/task.Task` -> `task.Task (agent)`; the component is the Go
    module or Python project the schema lives in."""
    body = schema.type[3:] if schema.type.startswith("py:") else schema.type
    name = ".".join(body.rsplit("/", 1)[-1].split(".")[-2:])
    return f"{name} ({component_name(graph, schema.path)})"


def sent_from(graph: TimeoutGraph, link: Link) -> str:
    """`from platform` / `from platform (links[0] in pyproject.toml)`: where a send starts."""
    via = f" ({link.configured})" if link.configured else ""
    return f"from {component_name(graph, link.payload.path)}{via}"


def replace_reads(graph: TimeoutGraph, expr: Expr, ctx: Ctx, field_sym: str, value: Expr) -> Expr:
    """`expr` with every read of the key `field_sym` names replaced by `value`."""
    def walk(e: Any) -> Any:
        if isinstance(e, dict):
            if e.get("k") in ("item", "call"):
                read = read_of(graph, e, ctx)
                if read is not None and f"key:{read[0]}#{read[1]}" == field_sym:
                    return value
            return {k: walk(v) for k, v in e.items()}
        if isinstance(e, list):
            return [walk(v) for v in e]
        return e
    return walk(expr)
