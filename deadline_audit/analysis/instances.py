"""Field values of one constructed object (SPEC "Calls, dispatch and summaries").

Globally, a field has every value any code gives it, and two that disagree resolve to
nothing. A method reading `c.ttl` on an object whose construction is visible where the
method is called can do better: the fields that construction sets, with the arguments of
that construction. `object_fields` reads, for the object an expression denotes:
- a composite literal (`&Claim{ttl: 15 * time.Second}`);
- a constructor call: the fields its body sets (Go: the object it returns, assignments to
  its fields; Python: `self.x = …` in `__init__`), its parameters standing for the call's
  arguments; and functional options given to it (`New(s, WithTTL(d))`: an argument that
  calls a function returning a closure which sets fields of the object) applied after;
- a class without `__init__` of its own (a dataclass) called with keywords;
- a variable holding one such value, or a parameter bound by an enclosing call;
- a field of one such object holding another (`self._step.budget`).

Each field maps to (value expression, the context to evaluate it in): merged into a
`Ctx.subst`, the field symbols then resolve to this object's values.
"""

from __future__ import annotations

from deadline_audit.analysis.context import Ctx, GraphView
from deadline_audit.facts import Expr

_MAX_DEPTH = 6

Fields = dict[str, tuple[Expr, Ctx]]  # field symbol -> (value, where to evaluate it)


def object_fields(graph: GraphView, obj: Expr | None, ctx: Ctx, depth: int = 0) -> Fields:
    """The fields the construction of `obj` sets, or {} when no construction is visible."""
    if not obj or depth > _MAX_DEPTH:
        return {}
    k = obj.get("k")
    if k == "ref":
        sym = obj["sym"]
        if sym in ctx.subst:
            arg, arg_ctx = ctx.subst[sym]
            return object_fields(graph, arg, arg_ctx, depth + 1)
        bound = [(b, path) for b, path in graph.bindings.get(sym, ()) if not b.is_default]
        if len(bound) != 1:
            return {}  # a variable given two objects (or none): which one is unknown
        b, path = bound[0]
        return object_fields(graph, b.expr, ctx if path == ctx.path else Ctx(path), depth + 1)
    if k == "obj":
        owner = obj.get("type")
        if not owner:
            return {}
        return {graph.member(owner, str(name), ctx.path): (value, ctx)
                for name, value in (obj.get("fields") or {}).items() if isinstance(value, dict)}
    if k == "call":
        return _constructed(graph, obj, ctx, depth)
    if k == "field":  # `self._step.budget`: the object a field of a visible construction holds
        sym = graph.resolve_field(obj, ctx)
        held = object_fields(graph, obj.get("x"), ctx, depth + 1).get(sym or "")
        if held is not None:
            return object_fields(graph, held[0], held[1], depth + 1)
        return object_fields(graph, {"k": "ref", "sym": sym}, ctx, depth + 1) if sym else {}
    return {}


def _constructed(graph: GraphView, call: Expr, ctx: Ctx, depth: int) -> Fields:
    callee = graph.resolve_callee(call.get("fn"), ctx)
    if callee is None:
        return _dataclass_call(graph, call, ctx)
    fn, path = graph.functions[callee]
    inner = Ctx(path, graph.call_subst(fn, call, ctx), ctx.call_at, callee)
    fields: Fields = {}
    owner = None
    if callee.endswith(".__init__"):  # Python: the class's own fields, set in __init__
        owner = callee[: -len(".__init__")]
    else:
        returned = {repr(r) for r in fn.returns}
        if len(returned) != 1:
            return {}
        fields.update(object_fields(graph, fn.returns[0], inner, depth + 1))
        if not fields:
            return {}
        owner = next(iter(fields)).rsplit(".", 1)[0]
    prefix = owner + "."
    for sym, b, _ in graph.bindings_by_function().get(callee, ()):
        if sym.startswith(prefix):
            fields[sym] = (b.expr, inner)  # later writes win: source order
    # functional options, applied after the constructor's own defaults
    for arg in call.get("args") or ():
        fields.update(_option_fields(graph, arg, ctx, prefix))
    return fields


def _option_fields(graph: GraphView, arg: Expr, ctx: Ctx, prefix: str) -> Fields:
    """`WithTTL(15 * time.Second)` where `WithTTL` returns a closure that sets `c.ttl`:
    the fields that closure sets, with the option's own arguments."""
    if not isinstance(arg, dict) or arg.get("k") != "call":
        return {}
    option = graph.resolve_callee(arg.get("fn"), ctx)
    if option is None:
        return {}
    fn, path = graph.functions[option]
    closures = {r["sym"] for r in fn.returns if isinstance(r, dict) and r.get("k") == "fnref"}
    if len(fn.returns) != 1 or not closures or not closures <= set(graph.closures.get(option, ())):
        return {}
    inner = Ctx(path, graph.call_subst(fn, arg, ctx), ctx.call_at, option)
    writes = graph.bindings_by_function()
    return {sym: (b.expr, inner) for closure in closures for sym, b, _ in writes.get(closure, ())
            if sym.startswith(prefix)}


def _dataclass_call(graph: GraphView, call: Expr, ctx: Ctx) -> Fields:
    """A class without an `__init__` of its own called with keywords (a dataclass, an
    attrs or pydantic model): each keyword is the field of that name."""
    fn = call.get("fn") or {}
    if fn.get("k") != "fnref" or fn["sym"] not in graph.decls or graph.decls[fn["sym"]].kind != "class":
        return {}
    return {f"{fn['sym']}.{name}": (value, ctx) for name, value in (call.get("kw") or {}).items()
            if f"{fn['sym']}.{name}" in graph.decls}
