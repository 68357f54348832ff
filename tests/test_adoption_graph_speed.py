"""The graph is built from `dep_summary`, a memoised and deduplicated `deps`: both must
say the same thing (first occurrences, each env read, last transforms, both orders) for
every expression the graph links, on trees with helpers, env layers and leases."""

from __future__ import annotations

import pytest

from analysis_support import build
from deadline_audit.graph import Ctx


def _expected(deps: list) -> tuple[list, list]:
    firsts, seen = [], set()
    last: dict = {}
    for node, named, ctx, transform in deps:
        key = (node,) if not node.startswith("env:") else (
            node, tuple(named.get("at") or ()), repr(named.get("default_value", "-")), ctx.path, ctx.call_at)
        if key not in seen:
            seen.add(key)
            firsts.append(key)
        last.pop(node, None)
        last[node] = transform
    return firsts, list(last.items())


def _actual(summary) -> tuple[list, list]:
    firsts = []
    for node, named, ctx in summary.items.values():
        firsts.append((node,) if not node.startswith("env:") else (
            node, tuple(named.get("at") or ()), repr(named.get("default_value", "-")), ctx.path, ctx.call_at))
    return firsts, list(summary.last.items())


@pytest.mark.parametrize("tree", ["demo", "da101", "da102", "da103", "da201", "da202"])
def test_dep_summary_says_what_deps_says(tree):
    graph = build(tree).graph
    exprs = [(site.value, Ctx(path)) for site, path in graph.sites]
    exprs += [(lease.duration, lease.ctx) for lease in graph.leases()]
    exprs += [(b.expr, Ctx(path)) for bindings in graph.bindings.values() for b, path in bindings[:64]]
    checked = 0
    for expr, ctx in exprs:
        if expr is None:
            continue
        assert _actual(graph.dep_summary(expr, ctx)) == _expected(list(graph.deps(expr, ctx))), expr
        checked += 1
    assert checked >= 10
