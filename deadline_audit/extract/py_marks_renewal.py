"""DA103 marks on Python files: the loops a renewal can live in, and the calls that renew.

- `SiteFact.extra["loop"]` / `CallFact.extra["loop"]` = `"line:col"` of the innermost
  `while`/`for` around a site or call (matched by lines);
- `FunctionFact.markers += {"m": "renew", "api", "line", "col", "loop"}` for a call that
  renews a lease without restating its TTL (catalog leases.toml `[[renewal.python]]`:
  Temporal `activity.heartbeat()`, etcd3 `lease.refresh()`); `loop` is None outside one.
Only files with a sleep, timer or lease site, or a renewal call name, hook into the shared
walk (py_marks.py); the module's imports come from its shared index (`MarkContext.imports`).
"""

from __future__ import annotations

import ast
import bisect
from fnmatch import fnmatchcase

from deadline_audit.catalog import Catalog
from deadline_audit.extract.py_marks import MarkContext, Walker, run_marker_passes
from deadline_audit.facts import FileFacts, FunctionFact

_LOOPS = (ast.While, ast.For, ast.AsyncFor)


def run(tree: ast.Module, facts: FileFacts, catalog: Catalog) -> None:
    run_marker_passes(tree, facts, catalog, ("py_marks_renewal",))


def register(ctx: MarkContext, walker: Walker):
    facts = ctx.facts
    renewals = ctx.catalog.file("leases").get("renewal", {}).get("python", [])
    methods = {m for e in renewals for m in e.get("method", ())}
    funcs = {f.rsplit(".", 1)[-1] for e in renewals for f in e.get("func", ())}
    timed = any(s.role in ("sleep", "timer", "lease") for s in facts.sites)
    if not timed and not any(c.callee.get("name") in methods for c in facts.calls):
        return None
    names = methods | funcs
    loops: list[tuple[int, int, int]] = []
    found: list[tuple[int, ast.Call]] = []  # (depth, call), pre-order

    def loop(n: ast.AST) -> None:
        loops.append((n.lineno, n.end_lineno or n.lineno, n.col_offset + 1))

    bound: dict[str, ast.Attribute] = {}  # `refresh = functools.partial(lock.reacquire)`
    partials = {f.rsplit(".", 1)[-1] for f in ctx.catalog.table("python", "partials").get("funcs", ())}

    def assign(n: ast.Assign) -> None:
        value = n.value
        if len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and isinstance(value, ast.Call) \
                and value.args and isinstance(value.args[0], ast.Attribute) and value.args[0].attr in names \
                and (getattr(value.func, "id", None) in partials or getattr(value.func, "attr", None) in partials):
            bound[n.targets[0].id] = value.args[0]

    def call(n: ast.Call) -> None:
        f = n.func
        if f.__class__ is ast.Attribute and f.attr in names:
            found.append((walker.depth, n))
        elif f.__class__ is ast.Name and f.id in bound:  # `refresh()`: the method it binds, called here
            found.append((walker.depth, ast.copy_location(ast.Call(func=bound[f.id], args=[], keywords=[]), n)))

    walker.enter(_LOOPS, loop)
    walker.enter(ast.Assign, assign)
    walker.enter(ast.Call, call)

    def finish() -> None:
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
        if found:
            found.sort(key=_first)  # stable: pre-order within a depth = the order of `ast.walk`
            _renewal_calls(ctx.imports, facts, renewals, [c for _, c in found], innermost)

    return finish


def _first(item: tuple) -> int:
    return item[0]


def _renewal_calls(imports: dict[str, str], facts: FileFacts, renewals: list[dict], calls: list[ast.Call], innermost) -> None:
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


def _function_at(fns: list[FunctionFact], line: int, col: int) -> FunctionFact | None:
    best = None
    for fn in fns:
        s = fn.span
        if (s.line, s.column) <= (line, col) <= (s.end_line, s.end_column):
            best = fn  # sorted by start: the last container is the innermost
    return best
