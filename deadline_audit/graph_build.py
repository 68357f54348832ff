"""Build the timeout-flow graph: index the facts (graph.TimeoutGraph), then populate its
networkx graph: nodes and `flows` edges, walking backwards from every site and lease
through the expressions that feed them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deadline_audit.catalog import Catalog
from deadline_audit.config_tags import bind_config_tags, bind_viper_getters
from deadline_audit.duration_text import format_seconds
from deadline_audit.durations import Quantity
from deadline_audit.facts import Expr, FileFacts
from deadline_audit.findings import Location
from deadline_audit.graph import SCENARIOS, Ctx, TimeoutGraph, to_seconds
from deadline_audit.settings_tables import bind_settings_tables


def build_graph(facts: list[FileFacts], catalog: Catalog, declared_leases: tuple[str, ...] = (),
                wire_config: Any = None, root: Path | None = None) -> TimeoutGraph:
    """Index the facts, bind config-file keys to the fields that read them (Go tags,
    Python settings tables: bindings the indexes' memos may have missed, so they are
    forgotten), then populate the networkx graph."""
    graph = TimeoutGraph(facts, catalog, declared_leases, root)
    bind_config_tags(graph)
    bind_viper_getters(graph)
    bind_settings_tables(graph)
    graph.forget_memos()
    graph.wire_config = wire_config  # components and links from configuration (wire_config.py)
    populate(graph)
    return graph


def populate(graph: TimeoutGraph) -> None:
    g = graph.g
    done: set[str] = set()
    todo: list[str] = []

    def link(target: str, expr: Expr | None, ctx: Ctx, unit: str | None, at: Location | None) -> None:
        # the same graph as walking every `graph.deps(expr, ctx)` tuple: nodes made at
        # their first occurrence, each edge keeping the transform of its last one, and
        # symbols queued in the order of their last occurrence (the queue is a stack)
        summary = graph.dep_summary(expr, ctx)
        for node, named, dep_ctx in summary.items.values():
            _ensure_node(graph, node, named, dep_ctx, unit)
            g.add_edge(node, target, key="flows", kind="flows", transform=summary.last[node] or "identity",
                       **_loc_attrs(at))
        for node in summary.last:
            if node.startswith("sym:") and node not in done:
                todo.append(node)

    called_on_line: dict[tuple[str, int], list[str]] = {}
    for calls in graph.calls_in.values():
        for call, path in calls:
            if call.callee.get("k") == "ext":
                called_on_line.setdefault((path, call.span.line), []).append(call.callee.get("name", ""))
    for site, path in graph.sites:
        spec = graph.spec(site)
        unit = site.unit or (spec.unit if spec else None)
        ctx = Ctx(path)
        loc = Location(path, site.span.line, site.span.column, site.span.end_line, site.span.end_column)
        attrs = {
            "kind": "site", "role": site.role, "api": site.api,
            "label": _called_label(spec, called_on_line.get((path, site.span.line), ())) or _api_label(site.api),
            "path": path, "line": site.span.line, "column": site.span.column,
            "function": site.function, "unit": unit, "implicit": site.value is None,
        }
        for scenario in SCENARIOS:
            if site.value is None:
                value = spec.implicit_default if spec else None
            else:
                value = graph.seconds(site.value, ctx, unit, scenario)
            attrs[f"{scenario}_seconds"] = value
        attrs["value_seconds"] = attrs["effective_seconds"]
        g.add_node(site.id, **attrs)
        link(site.id, site.value, ctx, unit, loc)

    for lease in graph.leases():
        attrs = {
            "kind": "site", "role": "lease", "api": f"lease:{lease.helper}", "label": "lease",
            "path": lease.location.path, "line": lease.location.line, "column": lease.location.column,
            "function": lease.function, "unit": lease.unit, "implicit": False,
            "operations": list(lease.operations),
        }
        for scenario in SCENARIOS:
            attrs[f"{scenario}_seconds"] = graph.seconds(lease.duration, lease.ctx, lease.unit, scenario)
        attrs["value_seconds"] = attrs["effective_seconds"]
        g.add_node(lease.id, **attrs)
        link(lease.id, lease.duration, lease.ctx, lease.unit, lease.location)

    while todo:
        sym = todo.pop()
        if sym in done:
            continue
        done.add(sym)
        for binding, path in graph.bindings.get(sym, ())[:64]:
            at = Location(path, binding.span.line, binding.span.column)
            link(sym, binding.expr, Ctx(path), g.nodes[sym].get("unit"), at)

    for name, var in graph.env.items():
        node = f"env:{name}"
        if node not in g:
            _ensure_node(graph, node, None, None, None)

    _add_contexts(graph)
    from deadline_audit.wire_graph import add_to_graph

    try:
        add_to_graph(graph)
    except Exception:  # noqa: BLE001 - the graph stays usable; the DA40x checks report the error
        graph._memo.pop(("_wire",), None)


def _add_contexts(graph: TimeoutGraph) -> None:
    """SPEC §2 `ctx:` nodes: each Go terminal write (a `site:` of role terminal_write) is
    linked by `writes_under` to the context it uses, and that context by `derives` edges
    to the steps it came from, root first, with `cancellable_by_client` and its root."""
    from deadline_audit.contexts import ContextFlow
    from deadline_audit.terminal_writes import TerminalWrites

    g = graph.g
    writes = TerminalWrites.of(graph)
    flow = None
    for calls in graph.calls_in.values():
        for call, path in calls:
            if graph.lang.get(path) != "go" or not call.args or not writes.is_terminal(call, path):
                continue
            flow = flow or ContextFlow.of(graph)
            origin = flow.origin(call.args[0], path, call.function, call.span.line)
            write = f"site:{path}:{call.span.line}:{call.span.column}"
            g.add_node(write, kind="site", role="terminal_write", label=writes.name_of(call), path=path,
                       line=call.span.line, column=call.span.column, function=call.function)
            at = call.args[0].get("at") or [call.span.line, call.span.column]
            ctx = f"ctx:{path}:{at[0]}:{at[1]}"
            attrs = {"kind": "ctx", "label": origin.root or "context", "origin": origin.kind,
                     "root": origin.root, "cancellable_by_client": origin.kind == "request",
                     "path": path, "line": at[0], "column": at[1]}
            g.add_node(ctx, **attrs)
            g.add_edge(write, ctx, key="writes_under", kind="writes_under")
            child = ctx
            for step in reversed(origin.steps):
                if step.location is None:
                    continue
                parent = f"ctx:{step.location.path}:{step.location.line}:{step.location.column}"
                if parent == child:
                    continue
                if parent not in g:
                    g.add_node(parent, kind="ctx", label=step.label, path=step.location.path,
                               line=step.location.line, column=step.location.column,
                               origin=origin.kind, root=origin.root,
                               cancellable_by_client=origin.kind == "request")
                g.add_edge(parent, child, key="derives", kind="derives")
                child = parent


def _ensure_node(graph: TimeoutGraph, node: str, named: Expr | None, ctx: Ctx | None, unit: str | None) -> None:
    g = graph.g
    if node.startswith("env:"):
        name = node[4:]
        var = graph.env_var(name)
        if named is not None and ctx is not None:
            at = ctx.call_at or (ctx.path, *(named.get("at") or (None, None))[:2])
            default_value = (named["default_value"] if "default_value" in named
                             else graph.value(named.get("default"), ctx, "default"))
            read = {"path": at[0], "line": at[1], "column": at[2],
                    "default_seconds": to_seconds(default_value, unit)}
            if read not in var.reads:
                var.reads.append(read)
        raw = var.effective_raw()
        g.add_node(node, kind="env", label=name,
                   layers=[_layer(lay) for lay in var.layers],
                   profiles=[_layer(p) for p in var.profiles],
                   docs=[{"path": d.path, "line": d.line} for d in var.docs],
                   reads=list(var.reads),
                   value_seconds=raw[1].value_seconds if raw else None,
                   effective_raw=raw[0] if raw else None)
        return
    if node in g:
        return
    if node.startswith("lit:"):
        value = graph.value(named, ctx) if named is not None else None
        path, line, col = _lit_parts(node)
        g.add_node(node, kind="lit", label=_lit_label(value, unit), path=path, line=line, column=col,
                   value_seconds=to_seconds(value, unit), unit=unit)
        return
    if node.startswith("cfg:"):
        g.add_node(node, kind="cfg", label=node[4:])
        return
    decl = graph.decls.get(node)
    attrs: dict[str, Any] = {"kind": "sym", "label": _sym_label(node), "unit": unit}
    if decl is not None:
        attrs.update(path=graph.decl_path[node], line=decl.span.line, column=decl.span.column, decl=decl.kind)
    for scenario in ("effective", "default"):
        attrs[f"{scenario}_seconds"] = to_seconds(graph.value({"k": "ref", "sym": node}, Ctx(attrs.get("path", "")), scenario), unit)
    attrs["value_seconds"] = attrs["effective_seconds"]
    g.add_node(node, **attrs)


def _lit_parts(node: str) -> tuple[str, int, int]:
    body, line, col = node[4:].rsplit(":", 2)
    return body, int(line), int(col)


def _lit_label(value: Any, unit: str | None) -> str:
    seconds = to_seconds(value, unit)
    if seconds is not None:
        return format_seconds(seconds)
    if isinstance(value, Quantity):
        return f"{value.value:g}"
    return str(value)


def _layer(layer) -> dict[str, Any]:
    return {"path": layer.path, "line": layer.line, "raw": layer.raw, "value_seconds": layer.value_seconds,
            "profile": layer.profile, "wins": layer.wins}


def _loc_attrs(at: Location | None) -> dict[str, Any]:
    return {"path": at.path, "line": at.line} if at else {}


def _sym_label(sym: str) -> str:
    """`sym:go:example.com/engine/internal/models.Config.Timeout` -> `models.Config.Timeout`."""
    body = sym.split(":", 2)[-1]
    if "/" in body:
        body = body.rsplit("/", 1)[-1]
    return body


def _called_label(spec, names) -> str | None:
    """The function actually called, when the catalog entry groups several
    (`anyio.sleep` and `time.sleep` under one sleep entry, `WithTimeoutCause` with
    `WithTimeout`): the one such call on the site's line."""
    if spec is None or spec.kind != "call" or len(spec.funcs) < 2:
        return None
    found = {n for n in names if n in spec.funcs}
    return _api_label(found.pop()) if len(found) == 1 else None


def _api_label(api: str) -> str:
    body = api.split(":", 1)[-1]
    if "/" in body:
        body = body.rsplit("/", 1)[-1]
    return body
