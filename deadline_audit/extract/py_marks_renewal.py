"""DA103 marks on Python files: the loops a renewal can live in, and the calls that renew.

- `SiteFact.extra["loop"]` / `CallFact.extra["loop"]` = `"line:col"` of the innermost
  `while`/`for` around a site or call (matched by lines);
- `FunctionFact.markers += {"m": "renew", "api", "line", "col", "loop"}` for a call that
  renews a lease without restating its TTL (catalog leases.toml `[[renewal.python]]`:
  Temporal `activity.heartbeat()`, etcd3 `lease.refresh()`); `loop` is None outside one.
Only files with a sleep, timer or lease site, or a renewal call name, are walked.
"""

from __future__ import annotations

import ast
import bisect
from fnmatch import fnmatchcase

from deadline_audit.catalog import Catalog
from deadline_audit.facts import FileFacts, FunctionFact

_LOOPS = (ast.While, ast.For, ast.AsyncFor)


def run(tree: ast.Module, facts: FileFacts, catalog: Catalog) -> None:
    renewals = catalog.file("leases").get("renewal", {}).get("python", [])
    methods = {m for e in renewals for m in e.get("method", ())}
    funcs = {f.rsplit(".", 1)[-1] for e in renewals for f in e.get("func", ())}
    timed = any(s.role in ("sleep", "timer", "lease") for s in facts.sites)
    if not timed and not any(c.callee.get("name") in methods for c in facts.calls):
        return
    loops, calls = [], []
    for n in ast.walk(tree):
        if isinstance(n, _LOOPS):
            loops.append((n.lineno, n.end_lineno or n.lineno, n.col_offset + 1))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in (methods | funcs):
            calls.append(n)
    loops.sort()
    starts = [start for start, _, _ in loops]

    def innermost(line: int, column: int) -> str | None:
        i = bisect.bisect_right(starts, line) - 1
        while i >= 0:
            start, end, col = loops[i]
            if end >= line and (start < line or column > col):
                return f"{start}:{col}"
            i -= 1
        return None

    if loops:
        for item in [*facts.sites, *facts.calls]:
            loop = innermost(item.span.line, item.span.column)
            if loop is not None:
                item.extra["loop"] = loop
    if calls:
        _renewal_calls(tree, facts, renewals, calls, innermost)


def _renewal_calls(tree: ast.Module, facts: FileFacts, renewals: list[dict], calls: list[ast.Call], innermost) -> None:
    imports = _imports(tree)
    fns = sorted(facts.functions, key=lambda f: (f.span.line, f.span.column))
    for call in calls:
        name = call.func.attr
        recv = call.func.value
        qualified = None
        if isinstance(recv, ast.Name) and recv.id in imports:
            qualified = f"{imports[recv.id]}.{name}"
        entry = next((e for e in renewals if (qualified is not None and
                                              any(fnmatchcase(qualified, p) for p in e.get("func", ())))
                      or (qualified is None and name in e.get("method", ()))), None)
        fn = _function_at(fns, call.lineno, call.col_offset + 1)
        if entry is None or fn is None:
            continue
        fn.markers.append({"m": "renew", "api": entry["api"], "line": call.lineno, "col": call.col_offset + 1,
                           "loop": innermost(call.lineno, call.col_offset + 1)})


def _imports(tree: ast.Module) -> dict[str, str]:
    """Local name → qualified module or name, from the module's imports (any depth)."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                found[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                found[a.asname or a.name] = f"{node.module}.{a.name}"
    return found


def _function_at(fns: list[FunctionFact], line: int, col: int) -> FunctionFact | None:
    best = None
    for fn in fns:
        s = fn.span
        if (s.line, s.column) <= (line, col) <= (s.end_line, s.end_column):
            best = fn  # sorted by start: the last container is the innermost
    return best
