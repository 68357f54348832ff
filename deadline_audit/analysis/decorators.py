"""Which of the program's own decorators wrap a Python function (SPEC §4: what runs the
function may bound it).

Two forms: `@capped` names a function of the program, which is applied to the decorated
function (marker `decorated_by`); `@time_boxed(20)` calls a factory (marker `decorated`
at the call's position), whose result, a function it returns, is applied.
"""

from __future__ import annotations

from dataclasses import dataclass

from deadline_audit.analysis.context import Ctx, GraphView
from deadline_audit.facts import CallFact


@dataclass(frozen=True)
class Decoration:
    applied: str  # the function that receives the decorated function
    call: CallFact | None  # the factory call of the `@factory(...)` form
    path: str


def call_at(graph: GraphView, path: str, line: int, col: int) -> CallFact | None:
    facts = graph.files.get(path)
    for call in facts.calls if facts else ():
        if call.span.line == line and call.span.column == col:
            return call
    return None


def decorations(graph: GraphView) -> dict[str, list[Decoration]]:
    """Decorated function -> the program's functions applied to it, outermost first."""
    key = ("decorations",)
    if key in graph._memo:
        return graph._memo[key]
    found: dict[str, list[Decoration]] = {}
    for sym, (fn, path) in graph.functions.items():
        for mark in fn.markers:
            if mark.get("m") == "decorated_by" and mark.get("sym") in graph.functions:
                found.setdefault(sym, []).append(Decoration(mark["sym"], None, path))
            elif mark.get("m") == "decorated":
                call = call_at(graph, path, mark["line"], mark["col"])
                factory = graph.resolve_callee(call.callee, Ctx(path)) if call is not None else None
                if factory is None:
                    continue
                for returned in graph.functions[factory][0].returns:
                    if returned.get("k") in ("fnref", "ref") and returned.get("sym") in graph.functions:
                        found.setdefault(sym, []).append(Decoration(returned["sym"], call, path))
    graph._memo[key] = found
    return found
