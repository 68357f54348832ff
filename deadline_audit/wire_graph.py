"""The wire analysis in the exported graph (SPEC §2): clamps and fallbacks as `site:` nodes
of role `ceiling` / `fallback` with `clamps` / `falls_back` edges, payloads and receiving
fields as `wire_field` sites joined by `sent_as` / `received_as` edges."""

from __future__ import annotations

from typing import Any

from deadline_audit.findings import Location
from deadline_audit.graph import Ctx, TimeoutGraph
from deadline_audit.wire import analyse, clamp_ctx, component_of, unit_of


def add_to_graph(graph: TimeoutGraph) -> None:
    """SPEC §2: clamps and fallbacks as `site:` nodes of role `ceiling` / `fallback` with
    `clamps` / `falls_back` edges to the symbols they bound, and wire links as `wire_field`
    sites: the payload `sent_as` the receiver's field, which is `received_as` its symbol."""
    found = analyse(graph)
    g = graph.g

    def site(node: str, loc: Location, role: str, **attrs: Any) -> None:
        if node not in g:
            g.add_node(node, kind="site", role=role, label=attrs.pop("label", role), path=loc.path, line=loc.line,
                       column=loc.column, **attrs)

    def sym_node(sym: str) -> None:
        if sym not in g:
            decl = graph.decls.get(sym)
            attrs = {}
            if decl is not None:
                attrs = {"path": graph.decl_path[sym], "line": decl.span.line, "column": decl.span.column}
            g.add_node(sym, kind="sym", label=sym.split(":", 2)[-1].rsplit("/", 1)[-1], **attrs)

    schema_fields = {f.sym for s in found.schemas for f in s.fields.values()}
    fed = {sym for c in found.clamps for sym in c.fed_by} | {sym for f in found.fallbacks for sym in f.fed_by}
    for c in found.clamps:
        node = f"site:{c.at.path}:{c.at.line}:{c.at.column}"
        ctx, unit = clamp_ctx(graph, c), unit_of(graph, c.path)
        ceiling = graph.seconds(c.bound, ctx, unit, "effective")
        site(node, c.at, "ceiling", label=f"clamp ({c.form})", value_seconds=ceiling, effective_seconds=ceiling,
             default_seconds=graph.seconds(c.bound, ctx, unit, "default"))
        for sym in sorted(c.fed_by & schema_fields):
            sym_node(sym)
            g.add_edge(node, sym, key="clamps", kind="clamps")
    for f in found.fallbacks:
        if not f.fed_by & schema_fields:
            continue  # `.get(k, D)` everywhere: only the fallbacks a wire field reaches are sites
        node = f"site:{f.path}:{f.location.line}:{f.location.column}"
        ctx = Ctx(f.path, fn=f.function)
        value = graph.seconds(f.default, ctx, unit_of(graph, f.path), "effective")
        site(node, f.location, "fallback", label=f"fallback ({f.form}, on {f.trigger})", value_seconds=value,
             trigger=f.trigger)
        for sym in sorted(f.fed_by & schema_fields):
            sym_node(sym)
            g.add_edge(node, sym, key="falls_back", kind="falls_back", trigger=f.trigger)
    for link in found.links:
        p = link.payload
        sender = f"site:{p.location.path}:{p.location.line}:{p.location.column}"
        site(sender, p.location, "wire_field", label="payload", component=component_of(graph, p.path))
        for key in sorted(link.common):
            f = link.schema.fields[key]
            if not (f.duration or f.sym in fed):
                continue  # the link's other keys (the discriminator …) carry no timeout
            receiver = f"site:{f.location.path}:{f.location.line}:{f.location.column}"
            site(receiver, f.location, "wire_field", label=key, component=component_of(graph, f.location.path),
                 field_type=f.type)
            g.add_edge(sender, receiver, key=f"sent_as:{key}", kind="sent_as", field=key,
                       omitted=key not in p.keys or p.keys.get(key) is None)
            sym_node(f.sym)
            if not g.has_edge(receiver, f.sym, key="received_as"):
                g.add_edge(receiver, f.sym, key="received_as", kind="received_as")
