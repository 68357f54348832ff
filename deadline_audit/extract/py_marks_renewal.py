"""DA103 marks on Python files: the loops a renewal can live in.

`SiteFact.extra["loop"]` / `CallFact.extra["loop"]` = `"line:col"` of the innermost
`while`/`for` around a site or call (matched by lines). Only files with a sleep, timer or
lease site are walked.
"""

from __future__ import annotations

import ast
import bisect

from deadline_audit.catalog import Catalog
from deadline_audit.facts import FileFacts

_LOOPS = (ast.While, ast.For, ast.AsyncFor)


def run(tree: ast.Module, facts: FileFacts, catalog: Catalog) -> None:
    if not any(s.role in ("sleep", "timer", "lease") for s in facts.sites):
        return
    loops = sorted((n.lineno, n.end_lineno or n.lineno, n.col_offset + 1) for n in ast.walk(tree)
                   if isinstance(n, _LOOPS))
    if not loops:
        return
    starts = [start for start, _, _ in loops]
    for item in [*facts.sites, *facts.calls]:
        line = item.span.line
        i = bisect.bisect_right(starts, line) - 1
        while i >= 0:
            start, end, col = loops[i]
            if end >= line and (start < line or item.span.column > col):
                item.extra["loop"] = f"{start}:{col}"
                break
            i -= 1
