"""Export the timeout-flow graph the rules read: JSON (node-link), DOT, Mermaid, GraphML."""

from __future__ import annotations

import io
import json
from typing import Any

import networkx as nx

FORMATS = ("json", "dot", "mermaid", "graphml")


def render(graph, fmt: str) -> str:
    g = graph.g if hasattr(graph, "g") else graph
    if fmt == "json":
        data = nx.node_link_data(g, edges="edges")
        return json.dumps({"schema_version": 1, "graph": data}, indent=2, sort_keys=True, default=str)
    if fmt == "dot":
        return _dot(g)
    if fmt == "mermaid":
        return _mermaid(g)
    if fmt == "graphml":
        return _graphml(g)
    raise ValueError(f"unknown graph format {fmt!r} (choose from {', '.join(FORMATS)})")


def _flat(value: Any) -> Any:
    """GraphML holds scalars only: lists, dicts and None become JSON strings."""
    if value is None or isinstance(value, (list, dict, tuple)):
        return json.dumps(value, default=str)
    return value


def _graphml(g: nx.MultiDiGraph) -> str:
    flat = nx.MultiDiGraph()
    for node, attrs in g.nodes(data=True):
        flat.add_node(node, **{k: _flat(v) for k, v in attrs.items()})
    for u, v, key, attrs in g.edges(keys=True, data=True):
        flat.add_edge(u, v, key=key, **{k: _flat(val) for k, val in attrs.items()})
    out = io.BytesIO()
    nx.write_graphml(flat, out)
    return out.getvalue().decode("utf-8")


def _node_text(node: str, attrs: dict) -> str:
    label = attrs.get("label", node)
    role = attrs.get("role")
    seconds = attrs.get("value_seconds")
    parts = [str(label)]
    if role:
        parts.append(f"[{role}]")
    if seconds is not None:
        parts.append(f"{seconds:g} s")
    return " ".join(parts)


def _dot(g: nx.MultiDiGraph) -> str:
    def q(text: str) -> str:
        return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'

    shapes = {"env": "note", "site": "box", "lit": "plaintext", "cfg": "note", "sym": "ellipse"}
    lines = ["digraph timeout_flow {", "  rankdir=LR;"]
    for node, attrs in sorted(g.nodes(data=True)):
        lines.append(f"  {q(node)} [label={q(_node_text(node, attrs))}, shape={shapes.get(attrs.get('kind'), 'ellipse')}];")
    for u, v, attrs in g.edges(data=True):
        transform = attrs.get("transform")
        label = f" [label={q(transform)}]" if transform and transform != "identity" else ""
        lines.append(f"  {q(u)} -> {q(v)}{label};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mermaid(g: nx.MultiDiGraph) -> str:
    ids = {node: f"n{i}" for i, node in enumerate(sorted(g.nodes))}

    def text(node: str) -> str:
        return _node_text(node, g.nodes[node]).replace('"', "'")

    lines = ["flowchart LR"]
    for node in sorted(g.nodes):
        lines.append(f'  {ids[node]}["{text(node)}"]')
    for u, v, attrs in sorted(g.edges(data=True), key=lambda e: (e[0], e[1], str(e[2].get("transform")))):
        transform = attrs.get("transform")  # sorted: the same graph gives the same text (a wiki diff)
        arrow = f"-->|{transform}|" if transform and transform != "identity" else "-->"
        lines.append(f"  {ids[u]} {arrow} {ids[v]}")
    return "\n".join(lines) + "\n"
