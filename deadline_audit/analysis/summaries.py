"""Function summaries, computed once per function and memoised (SPEC "Calls, dispatch
and summaries"): what a helper does, read from its body, never from its name.

- **env reader**: the function's result comes from an environment read whose name is one
  of its parameters (through locals, string and parse steps, arithmetic), possibly with a
  fallback: `name_param` is that parameter's index, `env_returns` marks which return
  statements carry the read (the others are the fallback). At a call site, the argument
  at `name_param` names the variable (`seconds("FLEET_BEAT_S", 10*time.Second)`).
- **lease runner**: the graph's runner helpers and holders (graph.lease_helpers,
  analysis/leases.py) keyed by function, for rules that ask "is this call a lease?".

Summaries read facts only; a summary that cannot be decided is absent (no summary, no link).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deadline_audit.analysis.context import Ctx, GraphView

_LOCAL_DEPTH = 6


@dataclass(frozen=True)
class EnvReader:
    name_param: int | None  # the parameter naming the variable; None: a fixed name
    env_returns: tuple[bool, ...]  # per return statement: does it carry the env read?


def env_reader(graph: GraphView, fn_sym: str) -> EnvReader | None:
    """The env-reader summary of a function, or None when no return reads the env."""
    key = ("_summary_env", fn_sym)
    if key in graph._memo:
        return graph._memo[key]
    result = None
    if fn_sym in graph.functions:
        fn, path = graph.functions[fn_sym]
        graph._memo[key] = None  # a helper calling itself reads no env through that call
        marks = []
        names: set[Any] = set()
        for ret in fn.returns:
            found = _env_names(graph, fn_sym, path, ret, 0, set())
            marks.append(bool(found))
            names |= found
        if any(marks):
            params = [fn.params.index(n) for n in names if isinstance(n, str) and n in fn.params]
            result = EnvReader(params[0] if len(params) == 1 and len(names) == 1 else None, tuple(marks))
    graph._memo[key] = result
    return result


def _env_names(graph: GraphView, fn_sym: str, path: str, expr: Any, depth: int, seen: set[str]) -> set[Any]:
    """The name exprs of the env reads this expr's value comes from: a parameter symbol,
    or the literal name; locals of the function are followed through their bindings, and
    a call to another env reader (`raw := String(name, "")`) reads the variable its name
    argument names."""
    found: set[Any] = set()
    stack = [expr]
    prefix = fn_sym + "."
    params = set(graph.functions[fn_sym][0].params)  # bound per call site, never followed here
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        k = item.get("k")
        if k == "env":
            name = item.get("name") or {}
            if name.get("k") == "ref":
                found.add(name["sym"])
            elif name.get("k") == "str":
                found.add(("str", name.get("v")))
            continue
        if k == "call" and depth < _LOCAL_DEPTH:
            named = _reader_call_name(graph, item, path)
            if named is not None:
                found.add(named)
                continue
        if k == "ref":
            sym = item["sym"]
            if sym.startswith(prefix) and sym not in seen and sym not in params and depth < _LOCAL_DEPTH:
                seen.add(sym)
                for b, _ in graph.bindings.get(sym, ())[:8]:
                    found |= _env_names(graph, fn_sym, path, b.expr, depth + 1, seen)
            continue
        for value in item.values():
            if isinstance(value, (dict, list)):
                stack.append(value)
    return found


def _reader_call_name(graph: GraphView, call: dict, path: str) -> Any:
    """The name a call to an env-reader helper reads (a parameter symbol or ("str", name)),
    None when the callee reads no env or names its variable some other way."""
    callee = graph.resolve_callee(call.get("fn"), Ctx(path))
    if callee is None:
        return None
    reader = env_reader(graph, callee)
    if reader is None or reader.name_param is None:
        return None
    args = call.get("args") or []
    if reader.name_param >= len(args):
        return None
    name = args[reader.name_param]
    if name.get("k") == "ref":
        return name["sym"]
    if name.get("k") == "str":
        return ("str", name.get("v"))
    return None


def lease_runners(graph: GraphView) -> dict[str, tuple[int, int]]:
    """Runner helpers and lease holders: function -> (duration param, operation param or -1)."""
    from deadline_audit.analysis.leases import lease_holders

    key = ("_summary_runners",)
    if key not in graph._memo:
        runners = dict(graph.lease_helpers(graph.declared_leases))
        for sym, index in lease_holders(graph).items():
            runners.setdefault(sym, (index, -1))
        graph._memo[key] = runners
    return graph._memo[key]
