"""DA201 cancellable-terminal-write: the record of how work ended can itself be cancelled.

Go: the write's context (its first argument) derives from a client-cancellable context,
or from the deadline that bounds the work (a `WithTimeout` also used by non-write calls),
with no detaching step on the path (contexts.py). A write whose context came in
through a call that is itself a terminal write is reported at that call only.

Python: (a) the write sits in the same deadline scope as the work, after it (scopes from
extract/py_marks_scopes.py; the coroutine given to `asyncio.wait_for` and what it calls
count as inside); (b) it is awaited in `finally:` / a cancellation-catching `except`
under level-triggered cancellation; a `shield` inside the scope protects it.
"""

from __future__ import annotations

from collections.abc import Iterable

from deadline_audit.analysis.decorators import Decoration, decorations
from deadline_audit.contexts import ContextFlow, Origin, uses_symbol
from deadline_audit.checks.evidence import describe_seconds
from deadline_audit.terminal_writes import TerminalWrites
from deadline_audit.facts import CallFact, Expr, same_expr
from deadline_audit.findings import Finding, FlowStep, Location, Related
from deadline_audit.graph import Ctx, TimeoutGraph

RULE_ID, RULE_NAME, SEVERITY = "DA201", "cancellable-terminal-write", "error"


def check(graph: TimeoutGraph, options: dict) -> Iterable[Finding]:
    writes = TerminalWrites.of(graph)
    yield from _go(graph, writes)
    yield from _python(graph, writes, bool(options.get("asyncio-level-cancellation", False)))


# -- Go -------------------------------------------------------------------------------

def _go(graph: TimeoutGraph, writes: TerminalWrites) -> Iterable[Finding]:
    flow = ContextFlow.of(graph)
    setters = set(graph.catalog.file("terminal_writes").get("go", {}).get("context_setters", ()))
    candidates = [(c, p) for calls in graph.calls_in.values() for c, p in calls
                  if graph.lang.get(p) == "go" and c.args and writes.is_terminal(c, p)]
    terminal_at = {(p, c.span.line, c.span.column) for c, p in candidates}
    for call, path in sorted(candidates, key=lambda cp: (cp[1], cp[0].span.line, cp[0].span.column)):
        ctx_expr = _bound_context(graph, call, path, setters) or call.args[0]
        origin = flow.origin(ctx_expr, path, call.function, call.span.line)
        done = _known_done(call)
        if done is not None and origin.kind != "detached":
            yield _go_finding(graph, writes, call, path, origin, done)
            continue
        if origin.kind == "deadline" and not _bounds_work(graph, writes, origin, call, ctx_expr):
            continue
        if origin.kind not in ("request", "deadline"):
            continue
        if any(v in terminal_at for v in origin.via):
            continue  # reported where the context entered the terminal write
        yield _go_finding(graph, writes, call, path, origin)


def _bound_context(graph: TimeoutGraph, call: CallFact, path: str, setters: set[str]) -> Expr | None:
    """The context a write's handle carries (`db.WithContext(ctx).Model(…).Update(…)`, or
    `tx := db.WithContext(ctx)` then `tx.Update(…)`): the argument of the nearest context
    setter on the receiver chain, following a local that holds the handle."""
    x = call.callee.get("x")
    for _ in range(12):
        if not isinstance(x, dict):
            return None
        k = x.get("k")
        if k == "call":
            fn = x.get("fn") or {}
            if fn.get("k") == "method" and fn.get("name") in setters and x.get("args"):
                return x["args"][0]
            x = fn.get("x")
        elif k == "field":
            x = x.get("x")
        elif k == "ref" and call.function and x["sym"].startswith(call.function + "."):
            bound = [b for b, _ in graph.bindings.get(x["sym"], ()) if b.span.line <= call.span.line]
            x = bound[-1].expr if bound else None
        else:
            return None
    return None


def _known_done(call: CallFact) -> dict | None:
    """The write's own context is already done here (extract/go_marks_ctx.py `ctx_done`)."""
    mark = call.extra.get("ctx_done")
    if mark and same_expr(mark.get("ctx"), call.args[0]):
        return mark
    return None


def _bounds_work(graph: TimeoutGraph, writes: TerminalWrites, origin: Origin, write: CallFact,
                 ctx_expr: Expr | None = None) -> bool:
    """Is the deadline context also handed to work (a call that is not a terminal write nor
    a context derivation) after the deadline was made, in the function that made it (before
    the write when the write is there too), or, before the write, in the write's own
    function? A helper that builds a fresh deadline
    context for the write alone (`ctx, cancel := newRPCContext(…)` then only the write) is
    the write's own bound, not the work's."""
    if not origin.bound_sym or not origin.bound_in:
        return False
    owners = [origin.bound_in, *graph.closures.get(origin.bound_in, ())]
    # in the write's own body, work comes before the write (a deferred write runs last)
    before = write.function == origin.bound_in and not write.in_defer
    if _hands_on(graph, writes, owners, origin.bound_sym, write,
                 lambda owner, line: owner != origin.bound_in or origin.bound_line < line
                 and (not before or line < write.span.line)):
        return True
    local = ctx_expr.get("sym") if isinstance(ctx_expr, dict) and ctx_expr.get("k") == "ref" else None
    decl = graph.decls.get(local) if local else None
    if decl is not None and decl.kind == "field" and local.startswith("sym:go:"):
        # a run that keeps its own deadline context in a field (`r.ctx`): work done with
        # that field by any method of the run is bounded by it
        owner_type = local.split(":", 2)[-1].rsplit(".", 1)[0]
        methods = list(graph.callgraph.own_methods.get(owner_type, {}).values())
        owners = [o for m in methods for o in (m, *graph.closures.get(m, ()))]
        if _hands_on(graph, writes, owners, local, write,
                     lambda owner, line: owner != write.function or line < write.span.line):
            return True
    if local and local != origin.bound_sym and write.function and write.function != origin.bound_in:
        # from the statement that bound the deadline context to `local`, up to the write
        bound = [b.span.end_line for b, _ in graph.bindings.get(local, ())
                 if b.function == write.function and b.span.line <= write.span.line]
        after = max(bound, default=0)
        mine = [write.function, *graph.closures.get(write.function, ())]
        return _hands_on(graph, writes, mine, local, write, lambda owner, line: after < line < write.span.line)
    return False


def _hands_on(graph: TimeoutGraph, writes: TerminalWrites, owners: list[str], sym: str, write: CallFact,
              counts) -> bool:
    """Does a call in `owners` (where `counts(owner, line)`) pass `sym` to work?"""
    written_at = {write.span.line}  # lines of terminal writes: their bindings are no work either
    for owner in owners:
        for call, cpath in graph.calls_in.get(owner, ()):
            if call is write or call.callee.get("k") == "ext" and call.callee["name"].startswith("context."):
                continue
            if counts(owner, call.span.line) and any(uses_symbol(a, sym) for a in call.args):
                if not writes.is_terminal(call, cpath):
                    return True
                written_at.add(call.span.line)
    # work through external calls the facts keep only as values:
    # `req, _ := http.NewRequestWithContext(ctx, …)`
    for owner in owners:
        for _, b, _ in graph.bindings_by_function().get(owner, ()):
            if b.expr.get("k") == "call" and b.span.line not in written_at and counts(owner, b.span.line):
                fn = b.expr.get("fn") or {}
                name = fn.get("name") or fn.get("sym") or ""
                if not str(name).startswith("context.") and \
                        any(uses_symbol(a, sym) for a in b.expr.get("args") or ()):
                    return True
    return False


def _go_finding(graph: TimeoutGraph, writes: TerminalWrites, call: CallFact, path: str, origin: Origin,
                done: dict | None = None) -> Finding:
    name, noun = writes.name_of(call), writes.noun(call, path)
    related: list[Related] = []
    if done is not None:
        related.append(Related(f"the context is known to be done here ({done['how']})",
                               Location(path, done["line"], done["col"])))
    # the cancellable root: the first step that is it (a detached parent may come before a deadline)
    root = next((s for s in origin.steps if s.label == origin.root), origin.steps[0] if origin.steps else None)
    if root is not None and root.location is not None:
        label = "cancelled by the client and when the response ends" if origin.kind == "request" else "the deadline of the work"
        related.append(Related(f"cancellable root {origin.root}: {label}", root.location))
    fires = []
    for site in origin.deadlines:
        node = graph.g.nodes.get(site)
        if node:
            seconds = node.get("effective_seconds")
            fires.append(f"{node.get('label', 'deadline')} ({describe_seconds(seconds)})")
            related.append(Related(f"deadline that fires: {node.get('label')} {describe_seconds(seconds)}",
                                   Location(node["path"], node["line"], node["column"])))
    if done is not None:
        message = (f"{name} records how the {noun} ended with a context that is already done ({done['how']}): "
                   f"the write is certain to fail with context canceled / deadline exceeded, so the final state "
                   f"is never saved.")
    elif origin.kind == "request":
        for loc, seconds in ([] if origin.root.startswith("gRPC") else _write_timeouts(graph, path)):
            fires.append(f"the server's WriteTimeout ({describe_seconds(seconds)})")
            related.append(Related(f"http.Server.WriteTimeout {describe_seconds(seconds)} cancels the request context",
                                   loc))
        fires = list(dict.fromkeys(fires))  # several servers with the same WriteTimeout: said once, related each
        what = "a client disconnect" + (", " + ", ".join(fires) if fires else "") + " or the end of the response"
        message = (f"{name} records how the {noun} ended under {origin.root}: {what} cancels it, "
                   f"so the final state is never saved.")
    else:
        deadline = fires[0] if fires else origin.root
        message = (f"{name} records how the {noun} ended with the context of the {deadline} that bounds the work: "
                   f"when that deadline fires the write is cancelled too, so the timeout is never recorded.")
    steps = [FlowStep(node=_ctx_node(s.location, s.label), label=s.label, location=s.location) for s in origin.steps]
    steps.append(FlowStep(node=f"site:{path}:{call.span.line}:{call.span.column}", label=f"{name} (terminal write)",
                          location=_loc(path, call)))
    return Finding(RULE_ID, RULE_NAME, SEVERITY, message, _loc(path, call), related, steps, _go_fix(graph, path))


def _write_timeouts(graph: TimeoutGraph, path: str) -> list[tuple[Location, float]]:
    module = _go_module(graph, path)
    found = []
    for site, site_path in graph.sites:
        spec = graph.spec(site)
        server_write = spec is not None and spec.role == "server_write_deadline" and spec.kind == "field"
        if server_write and _go_module(graph, site_path) == module:
            seconds = graph.g.nodes.get(site.id, {}).get("effective_seconds")
            if seconds:
                found.append((Location(site_path, site.span.line, site.span.column), seconds))
    return found


def _go_module(graph: TimeoutGraph, path: str) -> str | None:
    module = graph.files[path].module if path in graph.files else None
    if not module:
        return None
    return max((m for m in graph.go_versions if module == m or module.startswith(m + "/")), key=len, default=None)


def _go_fix(graph: TimeoutGraph, path: str) -> str:
    version = graph.go_version(path)
    if version and _version(version) < (1, 21):
        return (f"detach the write from the cancellation and give it its own bound: "
                f"context.WithTimeout(context.Background(), 10*time.Second) (copy the values you need, or wrap the "
                f"context in a type whose Done() returns nil); context.WithoutCancel needs Go 1.21 "
                f"(this module is go {version}).")
    return ("detach the write from the cancellation and give it its own bound: "
            "context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second).")


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


# -- Python ---------------------------------------------------------------------------

def _python(graph: TimeoutGraph, writes: TerminalWrites, asyncio_level: bool) -> Iterable[Finding]:
    k = graph.catalog.file("terminal_writes").get("python", {})
    cancel_types = tuple(k.get("cancellation_exceptions", ()))
    seen: set[tuple[str, int, int]] = set()
    for fn_sym, calls in graph.calls_in.items():
        py = [(c, p) for c, p in calls if graph.lang.get(p) == "python"]
        if not py:
            continue
        for write, path in py:
            if not write.scopes or not writes.is_terminal(write, path):
                continue  # (a) and (b) both need an enclosing scope: a deadline, finally, except
            key = (path, write.span.line, write.span.column)
            hit = _in_deadline_scope(graph, writes, write, py) or \
                _level_triggered(graph, write, cancel_types, asyncio_level)
            if hit and key not in seen:
                seen.add(key)
                yield _py_finding(graph, writes, write, path, *hit)
    yield from _wait_for_coroutines(graph, writes, seen)


def _unshielded_after(scopes: list[str], index: int) -> bool:
    return "shield" not in scopes[index + 1:]


def _in_deadline_scope(graph, writes, write: CallFact, calls) -> tuple[str, str | None] | None:
    """(a) in the function itself: a deadline scope around the write, with work before it."""
    for i, scope in enumerate(write.scopes):
        if not scope.startswith("with:") or not _unshielded_after(write.scopes, i):
            continue
        if any(s == "finally" or s.startswith("except:") for s in write.scopes[i + 1:]):
            continue  # a handler inside the scope: (b) decides
        for work, wpath in calls:
            if work is not write and scope in work.scopes and _does_work(graph, work, scope) \
                    and not writes.is_terminal(work, wpath) \
                    and (work.span.line, work.span.column) < (write.span.line, write.span.column):
                return "a", scope[5:]
    return None


def _does_work(graph, call: CallFact, scope: str) -> bool:
    """Awaited, or a task started in a task group entered inside the scope (`async with
    anyio.create_task_group() as tg: tg.start_soon(…)`: the group's exit awaits it)."""
    if call.awaited:
        return True
    spawns = graph.catalog.file("terminal_writes").get("python", {}).get("task_spawns", ())
    if call.callee.get("k") != "method" or call.callee.get("name") not in spawns:
        return False
    inner = call.scopes[call.scopes.index(scope) + 1:]
    return any(s.startswith("holder:") for s in inner)


def _level_triggered(graph, write: CallFact, cancel_types: tuple[str, ...], asyncio_level: bool):
    """(b) awaited in finally / a cancellation-catching except, under level-triggered cancellation."""
    if not write.awaited:
        return None
    fn = graph.functions.get(write.function or "")
    marks = [m for m in (fn[0].markers if fn else []) if m.get("m") == "level_triggered"]
    if not marks and write.function in _streamed_bodies(graph):
        marks = [{"why": "StreamingResponse body"}]
    if not marks and not asyncio_level:
        return None
    why = marks[0]["why"] if marks else "asyncio-level-cancellation is on"
    for i, scope in enumerate(write.scopes):
        handler = scope == "finally" or (scope.startswith("except:") and _catches(scope[7:], cancel_types))
        if handler and _unshielded_after(write.scopes, i):
            outer = next((s[5:] for s in reversed(write.scopes[:i]) if s.startswith("with:")), None)
            return "b", outer, scope, why
    return None


def _streamed_bodies(graph: TimeoutGraph) -> set[str]:
    """Generators of one module that another module hands to a streaming response."""
    key = ("_da201_streamed_bodies",)
    found = graph._memo.get(key)
    if found is None:
        found = graph._memo[key] = {m["sym"] for fn, _ in graph.functions.values() for m in fn.markers
                                    if m.get("m") == "streams_body_of"}
    return found


def _catches(types: str, cancel_types: tuple[str, ...]) -> bool:
    for t in types.split(","):
        if t == "*" or any(t == c or t.endswith("." + c) or c.endswith("." + t) for c in cancel_types):
            return True
    return False


def _wait_for_coroutines(graph: TimeoutGraph, writes: TerminalWrites, seen: set) -> Iterable[Finding]:
    """(a) through calls: the coroutine given to `asyncio.wait_for`, or a function called
    inside a deadline scope, writes after doing work."""
    wrappers = set(graph.catalog.file("terminal_writes").get("python", {}).get("deadline_wrappers", ()))
    sites = {s.id: s for s, p in graph.sites if s.role == "context_deadline"}
    yield from _bounded_functions(graph, writes, seen, _decorated_entries(graph, writes, wrappers, sites))
    for calls in list(graph.calls_in.values()):
        for call, path in calls:
            if graph.lang.get(path) != "python" or path in graph.callgraph.test_paths:
                continue  # a deadline in test code bounds a test run, not production work
            entries: list[tuple[str, object]] = []
            if call.callee.get("k") == "ext" and call.callee.get("name") in wrappers and call.args:
                site = next((s for s in sites.values() if s.function == call.function
                             and call.span.line <= s.span.line <= call.span.end_line), None)
                coro = call.args[0]
                if site is not None and coro.get("k") == "call":
                    entries.append((site.id, coro.get("fn")))
            for scope in call.scopes:
                if scope.startswith("with:") and _unshielded_after(call.scopes, call.scopes.index(scope)) \
                        and call.callee.get("k") in ("fnref", "method") and not writes.is_terminal(call, path):
                    # (a terminal write in the scope is judged at that call, never inside it)
                    entries.append((scope[5:], call.callee))
            resolved = [(site_id, graph.resolve_callee(callee, Ctx(path))) for site_id, callee in entries]
            yield from _bounded_functions(graph, writes, seen, [(s, t, None) for s, t in resolved if t])


def _bounded_functions(graph: TimeoutGraph, writes: TerminalWrites, seen: set,
                       entries: list[tuple[str, str, Related | None]]) -> Iterable[Finding]:
    """(deadline site, function run under it): the function's own writes after work, and
    those of what it calls directly (deeper code is other work, whose own writes are
    judged where they are made)."""
    for site_id, target, via in entries:
        for fn in sorted({target} | graph.callees(target)):
            inner = graph.calls_in.get(fn, ())
            for write, wpath in inner:
                key = (wpath, write.span.line, write.span.column)
                if key in seen or not writes.is_terminal(write, wpath) or "shield" in write.scopes:
                    continue
                if any(w is not write and w.awaited and not writes.is_terminal(w, wp)
                       and (w.span.line, w.span.column) < (write.span.line, write.span.column)
                       for w, wp in inner):
                    seen.add(key)
                    finding = _py_finding(graph, writes, write, wpath, "a", site_id)
                    if via is not None:
                        finding.related.append(via)
                    yield finding


def _decorated_entries(graph: TimeoutGraph, writes: TerminalWrites, wrappers: set[str],
                       sites: dict) -> list[tuple[str, str, Related | None]]:
    """A decorator of the program whose wrapper runs the wrapped function inside a
    deadline (`async with asyncio.timeout(s): return await func(*a)`, or
    `wait_for(func(*a), t)`): every function it decorates runs under that deadline."""
    bounding: dict[str, str] = {}  # decorator (takes the function) -> deadline site id
    for sym, (fn, path) in graph.functions.items():
        outer = graph.functions.get(fn.enclosing or "")
        if graph.lang.get(path) != "python" or outer is None or not outer[0].params:
            continue
        wrapped = outer[0].params[0]
        for call, _ in graph.calls_in.get(sym, ()):
            site_id = _wrapped_call_deadline(call, wrapped, wrappers, sites)
            if site_id is not None:
                bounding[fn.enclosing] = site_id
    return [(bounding[d.applied], sym, _decorated_at(graph, sym, d))
            for sym, found in sorted(decorations(graph).items())
            for d in found if d.applied in bounding and d.path not in graph.callgraph.test_paths]


def _decorated_at(graph: TimeoutGraph, sym: str, decoration: Decoration) -> Related:
    fn, path = graph.functions[sym]
    # the factory of `@time_boxed(20)`, the function itself of `@capped`
    named = (decoration.call.callee.get("sym") if decoration.call is not None else None) or decoration.applied
    name = named.removeprefix("sym:py:").rsplit(".", 1)[-1]
    return Related(f"decorated: {sym.rsplit('.', 1)[-1]} runs inside the deadline of {name}",
                   Location(path, fn.span.line, fn.span.column))


def _wrapped_call_deadline(call: CallFact, wrapped: str, wrappers: set[str], sites: dict) -> str | None:
    callee = call.callee
    if callee.get("k") == "ref" and callee.get("sym") == wrapped:
        for i, scope in enumerate(call.scopes):
            if scope.startswith("with:") and _unshielded_after(call.scopes, i):
                return scope[5:]
    if callee.get("k") == "ext" and callee.get("name") in wrappers and call.args:
        coro = call.args[0]
        name = wrapped.rsplit(".", 1)[-1]
        # a call of a parameter is no call of the program's: its text is what it calls
        if (coro.get("k") == "unknown" and coro.get("text") == f"{name}(…)") or \
                (coro.get("k") == "call" and (coro.get("fn") or {}).get("sym") == wrapped):
            return next((s.id for s in sites.values() if s.function == call.function
                         and call.span.line <= s.span.line <= call.span.end_line), None)
    return None


def _py_finding(graph: TimeoutGraph, writes: TerminalWrites, write: CallFact, path: str, kind: str,
                site_id: str | None, handler: str | None = None, why: str | None = None) -> Finding:
    name, noun = writes.name_of(write), writes.noun(write, path)
    related = []
    node = graph.g.nodes.get(site_id) if site_id else None
    deadline = None
    if node:
        deadline = f"{node.get('label')} ({describe_seconds(node.get('effective_seconds'))})"
        related.append(Related(f"deadline scope that fires: {deadline}", Location(node["path"], node["line"], node["column"])))
    if kind == "a":
        message = (f"{name} records how the {noun} ended inside the {deadline or 'deadline scope'} that bounds the work: "
                   f"when the deadline fires the write is cancelled with the work, so the {noun} is never recorded.")
        fix = ("record the outcome outside the deadline scope (catch the timeout and record it as an outcome), "
               "or shield the write: await asyncio.shield(...) / with anyio.CancelScope(shield=True).")
    else:
        where = "finally" if handler == "finally" else f"except {handler[7:]}"
        fn = graph.functions.get(write.function or "")
        if fn:
            related.append(Related(f"cancellation is level-triggered here ({why})",
                                   Location(fn[1], fn[0].span.line, fn[0].span.column)))
        message = (f"{name} is awaited in `{where}` under level-triggered cancellation ({why}) without a shield: "
                   f"a cancelled task cancels this await too, so the {noun}'s final state is never saved.")
        fix = ("wrap the write in `with anyio.CancelScope(shield=True):` (trio: trio.CancelScope(shield=True)) "
               "and bound it with its own move_on_after.")
    flow = [FlowStep(node=f"site:{path}:{write.span.line}:{write.span.column}", label=f"{name} (terminal write)",
                     location=_loc(path, write))]
    return Finding(RULE_ID, RULE_NAME, SEVERITY, message, _loc(path, write), related, flow, fix)


# -- shared ---------------------------------------------------------------------------

def _loc(path: str, call: CallFact) -> Location:
    s = call.span
    return Location(path, s.line, s.column, s.end_line, s.end_column)


def _ctx_node(location: Location | None, label: str) -> str:
    return f"ctx:{location.path}:{location.line}:{location.column}" if location else f"ctx:{label}"
