"""DA202 request-bound-background-work: a goroutine started in a handler keeps using the
request's context and is not joined, so the work dies when the response ends.

Handlers: HTTP handlers by parameter types (graph.http_handlers()) and gRPC methods.
The goroutine uses the request context when an argument of the `go` call, or the ctx of a
call inside the goroutine's function (func literal, or a named function with its
parameters bound to the statement's arguments: a ctx carried in a struct counts), derives
from a request root (contexts.py).
Not flagged: joined on every path before the handler returns (extract/go_marks_ctx.py
`joined`), or a goroutine that loops until a context's `Done()` (`stops_with_ctx`). A
partial join (a `select` arm, a branch, a return before the join) is flagged only when the
goroutine goes on to record state (a terminal write, or a call named with a state-changing
verb from the catalog).
"""

from __future__ import annotations

from collections.abc import Iterable

from deadline_audit.contexts import ContextFlow, Origin
from deadline_audit.checks.da201 import _go_fix, _loc, _write_timeouts
from deadline_audit.checks.evidence import describe_seconds
from deadline_audit.facts import CallFact
from deadline_audit.findings import Finding, FlowStep, Location, Related
from deadline_audit.graph import Ctx, TimeoutGraph
from deadline_audit.terminal_writes import TerminalWrites, tokens

RULE_ID, RULE_NAME, SEVERITY = "DA202", "request-bound-background-work", "warning"


def check(graph: TimeoutGraph, options: dict) -> Iterable[Finding]:
    flow = ContextFlow.of(graph)
    writes = TerminalWrites.of(graph)
    verbs = set(graph.catalog.file("terminal_writes").get("names", {}).get("state_change_verbs", ()))
    handlers = set(graph.http_handlers()) | {s for s in graph.functions if flow.is_grpc_handler(s)}
    for handler in sorted(handlers):
        for call, path in graph.calls_in.get(handler, ()):
            if not call.in_go or call.extra.get("joined"):
                continue
            target = graph.resolve_callee(call.callee, Ctx(path))
            if target and _stops_with_ctx(graph, flow, call, path, target):
                continue
            change = None
            if call.extra.get("partial_join"):
                # a partial join is a defect only when the goroutine changes state after
                # the handler may have returned (SPEC §4 DA202)
                change = _state_change(graph, writes, verbs, target) if target else None
                if change is None:
                    continue
            origin = _request_origin(graph, flow, call, path, target)
            if origin is not None:
                yield _finding(graph, handler, call, path, origin, change)


def _state_change(graph: TimeoutGraph, writes: TerminalWrites, verbs: set[str],
                  target: str) -> tuple[CallFact, str] | None:
    """The first call in the goroutine (its function and closures) that records state: a
    terminal write, or a call whose name holds a state-changing verb."""
    owners = [target, *graph.closures.get(target, ())]
    calls = sorted(((c, p) for o in owners for c, p in graph.calls_in.get(o, ()) if not c.in_go),
                   key=lambda cp: (cp[0].span.line, cp[0].span.column))
    for call, path in calls:
        first = tokens(writes.name_of(call))[:1]
        if writes.is_terminal(call, path) or any(writes.verb(t, verbs) for t in first):
            return call, path
    return None


def _stops_with_ctx(graph: TimeoutGraph, flow: ContextFlow, call: CallFact, path: str, fn: str) -> bool:
    """The goroutine loops until a context's `Done()`: it exists to stop with the request —
    unless that context is known not to be the request's (a server's lifetime context,
    `context.Background()`), in which case it outlives the request it still uses."""
    for m in graph.functions[fn][0].markers:
        if m.get("m") != "stops_with_ctx":
            continue
        expr = m.get("expr")
        if expr is None:
            return True
        origin = flow.origin_in_callee(expr, fn, m["line"], call.args, path, call.function, call.span.line) \
            if fn not in graph.closures.get(call.function or "", ()) else \
            flow.origin(expr, graph.functions[fn][1], fn, m["line"])
        if origin.kind in ("request", "unknown"):
            return True
    return False


def _request_origin(graph: TimeoutGraph, flow: ContextFlow, call: CallFact, path: str,
                    target: str | None) -> Origin | None:
    for expr in call.args:
        origin = flow.origin(expr, path, call.function, call.span.line)
        if origin.kind == "request":
            return origin
    if not target:
        return None
    # inside the goroutine (`go func() { … }()` or `go s.run(job)`): the contexts its calls
    # use, with its parameters bound to this statement's arguments (a ctx carried in a
    # struct argument counts: `go s.run(job)` with `job.ctx`)
    by_function = graph.bindings_by_function()
    for inner in [target, *graph.closures.get(target, ())]:
        firsts = [(c.args[0], c.span.line) for c, _ in graph.calls_in.get(inner, ()) if not c.in_go and c.args]
        # a library call the facts keep only as the value it binds
        # (`req, err := http.NewRequestWithContext(job.ctx, …)`)
        firsts += [(b.expr["args"][0], b.span.line) for _, b, _ in by_function.get(inner, ())
                   if b.expr.get("k") == "call" and b.expr.get("args")]
        for expr, line in firsts:
            # (a closure of the goroutine's function sees this statement's arguments too)
            origin = flow.origin_in_callee(expr, target, line, call.args, path, call.function,
                                           call.span.line, within=inner)
            if origin.kind == "request":
                return origin
    return None


def _finding(graph: TimeoutGraph, handler: str, call: CallFact, path: str, origin: Origin,
             change: tuple[CallFact, str] | None = None) -> Finding:
    name = handler.split(":", 2)[-1].rsplit("/", 1)[-1].split(".", 1)[-1]
    related = []
    root = origin.steps[0] if origin.steps else None
    if root is not None and root.location is not None:
        related.append(Related(f"request context {origin.root}: cancelled when the handler returns", root.location))
    for site in origin.deadlines:
        node = graph.g.nodes.get(site)
        if node:
            related.append(Related(f"deadline on the path: {node.get('label')} {describe_seconds(node.get('effective_seconds'))}",
                                   Location(node["path"], node["line"], node["column"])))
    timeouts = _write_timeouts(graph, path)
    for loc, seconds in timeouts:
        related.append(Related(f"http.Server.WriteTimeout {describe_seconds(seconds)} also cancels it", loc))
    also = f", the client disconnects or WriteTimeout ({describe_seconds(timeouts[0][1])}) fires" if timeouts \
        else " or the client disconnects"
    joined = "is not joined"
    if change is not None:
        joined = f"is joined only partly ({call.extra.get('partial_join')}) and then records state"
        changed, changed_path = change
        related.append(Related("state change after the handler may have returned",
                               Location(changed_path, changed.span.line, changed.span.column)))
    message = (f"goroutine started in handler {name} uses the request's context {origin.root} and {joined}: "
               f"it is cancelled as soon as the handler returns{also}, so the background work dies with the response.")
    steps = [FlowStep(node=f"ctx:{s.location.path}:{s.location.line}:{s.location.column}" if s.location else f"ctx:{s.label}",
                      label=s.label, location=s.location) for s in origin.steps]
    return Finding(RULE_ID, RULE_NAME, SEVERITY, message, _loc(path, call), related, steps,
                   _go_fix(graph, path).replace("the write", "the background work").replace(
                       "10*time.Second", "runTimeout"))
