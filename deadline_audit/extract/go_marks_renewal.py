"""DA103 marks on Go files: the loops a renewal can live in and what ticks them.

- `FunctionFact.markers += {"m": "loop", "line", "col", "ticks": [Expr]}` for each `for`
  statement (`ticks`: the tickers/timers it receives from, `<-t.C`);
- `SiteFact.extra["loop"]` / `CallFact.extra["loop"]` = `"line:col"` of the innermost
  `for` around a site or call.
Only files that tick, sleep or renew are queried.
"""

from __future__ import annotations

import bisect
from typing import Any

from tree_sitter import Query, QueryCursor

from deadline_audit.catalog import Catalog
from deadline_audit.extract.go import GO
from deadline_audit.extract.go_marks_common import GoMarkContext
from deadline_audit.facts import FileFacts

_PREFILTER = (b"time.", b"Expire", b"KeepAlive", b"Heartbeat", b"Renew", b"renew")
_LOOPS = Query(GO, """
    (for_statement) @loop
    ((unary_expression operator: "<-"
        operand: (selector_expression operand: (_) @timer field: (field_identifier) @c))
     (#eq? @c "C"))
""")


def run(tree: Any, source: bytes, facts: FileFacts, catalog: Catalog) -> None:
    if not any(word in source for word in _PREFILTER) or b"for" not in source:
        return
    ctx = GoMarkContext(tree.root_node, source, facts)
    loops: list[tuple[tuple[int, int], tuple[int, int], dict]] = []
    ticks: list[Any] = []
    for _, caps in QueryCursor(_LOOPS).matches(tree.root_node):
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
        return
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

    for timer in ticks:
        marker = innermost(*ctx.at(timer))
        if marker is not None:
            marker["ticks"].append(ctx.expr(timer, ctx.function_at(timer)))
    for item in [*facts.sites, *facts.calls]:
        marker = innermost(item.span.line, item.span.column)
        if marker is not None:
            item.extra["loop"] = f"{marker['line']}:{marker['col']}"
