"""DA103 marks on Go files: the loops a renewal can live in and what ticks them.

- `FunctionFact.markers += {"m": "loop", "line", "col", "ticks": [Expr]}` for each `for`
  statement (`ticks`: the tickers/timers it receives from, `<-t.C`, or the channel it
  receives from, `<-tick` for `tick := time.Tick(d)`), and for each `select` case of a
  loop that receives from one (`case <-t.C:`): what its body does runs at that tick only;
- `SiteFact.extra["loop"]` / `CallFact.extra["loop"]` = `"line:col"` of the innermost
  `for` around a site or call;
- `FunctionFact.markers += {"m": "renew", "api", "line", "col", "loop"}` for a call that
  renews a lease without restating its TTL (catalog leases.toml `[[renewal.go]]`:
  `activity.RecordHeartbeat`, etcd `KeepAliveOnce`); `loop` is None outside a loop;
- `FunctionFact.markers += {"m": "execute_activity", "ctx": Expr, "activity": Expr,
  "line", "col"}` for a Temporal `workflow.ExecuteActivity(ctx, activity, …)` (catalog
  `[temporal.go]`); a string activity name is `{"k": "str"}`.
Only files that tick, sleep, renew or execute activities are queried.
"""

from __future__ import annotations

import bisect
from fnmatch import fnmatchcase
from typing import Any

from deadline_audit.catalog import Catalog
from deadline_audit.extract.go_marks_common import GoMarkContext
from deadline_audit.facts import FileFacts

_PREFILTER = (b"time.", b"Expire", b"KeepAlive", b"Heartbeat", b"Renew", b"renew")
_CALLS = """
    ((call_expression function: (selector_expression operand: (_) @recv field: (field_identifier) @name)
                      arguments: (argument_list) @args) @call
     %s)
"""
_QUERIES = {
    "renewal.loops": """
        (for_statement) @loop
        ((unary_expression operator: "<-"
            operand: (selector_expression operand: (_) @timer field: (field_identifier) @c))
         (#eq? @c "C"))
        (unary_expression operator: "<-" operand: (identifier) @timer)
    """,
}


def _apis(catalog: Catalog) -> tuple[list[dict], list[str]]:
    leases = catalog.file("leases")
    return leases.get("renewal", {}).get("go", []), leases.get("temporal", {}).get("go", {}).get("execute", [])


def queries(catalog: Catalog) -> dict[str, str]:
    # Only calls named like a catalog API can match one: the cursor keeps only those
    # (a method call is the commonest node), unless a pattern's name is itself a glob.
    renewals, execute = _apis(catalog)
    patterns = [*execute, *(w for e in renewals for w in (*e.get("func", ()), *e.get("method", ())))]
    names = sorted({p.rsplit(".", 1)[-1] for p in patterns})
    exact = names and not any(ch in p for p in patterns for ch in "*?[")
    predicate = "(#any-of? @name %s)" % " ".join(f'"{n}"' for n in names) if exact else ""
    return {"renewal.calls": _CALLS % predicate, **_QUERIES}


def run(tree: Any, source: bytes, facts: FileFacts, catalog: Catalog) -> None:
    renewals, execute = _apis(catalog)
    call_words = {w.rsplit(".", 1)[-1].encode() for e in renewals for w in (*e.get("func", ()), *e.get("method", ()))}
    call_words |= {w.rsplit(".", 1)[-1].encode() for w in execute}
    with_calls = any(word in source for word in call_words)
    with_loops = any(word in source for word in _PREFILTER) and b"for" in source
    if not with_calls and not with_loops:
        return
    ctx = tree.context()
    innermost = _loops(tree, ctx, facts) if with_loops else (lambda line, col: None)
    if with_calls:
        _renewal_calls(tree, ctx, renewals, execute, innermost)


def _renewal_calls(tree: Any, ctx: GoMarkContext, renewals: list[dict], execute: list[str], innermost) -> None:
    for caps in tree.matches("renewal.calls"):
        call, recv = caps["call"][0], caps["recv"][0]
        name = ctx.text(caps["name"][0])
        qualified = None
        if recv.type == "identifier" and ctx.text(recv) in ctx.imports:
            qualified = f"{ctx.imports[ctx.text(recv)]}.{name}"
        fn = ctx.function_at(call)
        if fn is None:
            continue
        line, col = ctx.at(call)
        args = [a for a in caps["args"][0].named_children if a.type != "comment"]
        if qualified is not None and any(fnmatchcase(qualified, p) for p in execute):
            if len(args) >= 2:
                activity = args[1]
                act = ({"k": "str", "v": ctx.text(activity).strip('"`')} if activity.type == "interpreted_string_literal"
                       or activity.type == "raw_string_literal" else ctx.expr(activity, fn))
                fn.markers.append({"m": "execute_activity", "ctx": ctx.expr(args[0], fn), "activity": act,
                                   "line": line, "col": col})
            continue
        for entry in renewals:
            hit = (any(fnmatchcase(qualified, p) for p in entry.get("func", ())) if qualified is not None
                   else name in entry.get("method", ()))
            if hit:
                loop = innermost(line, col)
                fn.markers.append({"m": "renew", "api": entry["api"], "line": line, "col": col,
                                   "loop": f"{loop['line']}:{loop['col']}" if loop else None})
                break


def _tick_case(timer: Any) -> Any:
    """The `select` case whose communication receives from this timer (`case <-t.C:`,
    `case v := <-tick:`), or None."""
    node = timer.parent
    for _ in range(3):
        if node is None:
            return None
        if node.type == "receive_statement":
            parent = node.parent
            return parent if parent is not None and parent.type == "communication_case" else None
        node = node.parent
    return None


def _loops(tree: Any, ctx: GoMarkContext, facts: FileFacts):
    loops: list[tuple[tuple[int, int], tuple[int, int], dict]] = []
    ticks: list[Any] = []
    for caps in tree.matches("renewal.loops"):
        if "loop" in caps:
            node = caps["loop"][0]
            fn = ctx.function_at(node)
            if fn is None:
                continue
            start = tuple(ctx.at(node))
            end = (node.end_point[0] + 1, ctx.pos.col(node.end_point[0], node.end_point[1]))
            marker = {"m": "loop", "line": start[0], "col": start[1], "ticks": []}
            fn.markers.append(marker)
            loops.append((start, end, marker))
        else:
            ticks.append(caps["timer"][0])
    if not loops:
        return lambda line, col: None
    loops.sort(key=lambda item: item[0])
    starts = [item[0] for item in loops]

    def innermost(line: int, col: int) -> dict | None:
        i = bisect.bisect_right(starts, (line, col)) - 1
        while i >= 0:
            start, end, marker = loops[i]
            if end >= (line, col):
                return marker
            i -= 1
        return None

    cases: list[tuple[tuple[int, int], tuple[int, int], dict]] = []
    for timer in ticks:
        marker = innermost(*ctx.at(timer))
        if marker is not None:
            tick = ctx.expr(timer, ctx.function_at(timer))
            marker["ticks"].append(tick)
            case = _tick_case(timer)
            if case is not None:  # `case <-renew.C:` paces its own body only
                start = tuple(ctx.at(case))
                end = (case.end_point[0] + 1, ctx.pos.col(case.end_point[0], case.end_point[1]))
                scoped = {"m": "loop", "line": start[0], "col": start[1], "ticks": [tick]}
                ctx.function_at(case).markers.append(scoped)
                cases.append((start, end, scoped))
    if cases:
        loops.extend(cases)
        loops.sort(key=lambda item: item[0])
        starts[:] = [item[0] for item in loops]
    for item in [*facts.sites, *facts.calls]:
        marker = innermost(item.span.line, item.span.column)
        if marker is not None:
            item.extra["loop"] = f"{marker['line']}:{marker['col']}"
    return innermost
