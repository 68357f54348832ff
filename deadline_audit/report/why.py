"""`deadline-audit why FILE:LINE`: what the graph knows about the sites on a line, and
for each implemented rule why it did or did not fire there."""

from __future__ import annotations

from pathlib import Path

from deadline_audit.report.humanize import format_seconds


def render(graph, path: str, line: int) -> str:
    g = graph.g
    wanted = Path(path).as_posix()
    nodes = [n for n, a in g.nodes(data=True)
             if a.get("kind") == "site" and a.get("line") == line and _same_file(a.get("path", ""), wanted)]
    if not nodes:
        return f"{wanted}:{line}: no timeout site on this line.\n"
    out: list[str] = []
    for node in sorted(nodes, key=lambda n: g.nodes[n].get("column") or 0):
        a = g.nodes[node]
        out.append(f"{a['path']}:{a['line']}:{a.get('column')}  {a.get('label')}  role={a.get('role')}")
        out.append(f"  value   {_seconds(a.get('effective_seconds'))} effective · "
                   f"{_seconds(a.get('default_seconds'))} with compiled defaults")
        for source in sorted(graph.sources(node)):
            out.extend(_source_lines(graph, source, node))
        for rule_line in _rule_lines(graph, node):
            out.append(f"  {rule_line}")
        out.append("")
    return "\n".join(out)


def _same_file(a: str, b: str) -> bool:
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _seconds(value) -> str:
    return format_seconds(value) if value is not None else "unresolved"


def _source_lines(graph, source: str, target: str) -> list[str]:
    g = graph.g
    a = g.nodes[source]
    lines = [f"  source  {a.get('label', source)}"]
    for layer in a.get("layers", []):
        wins = " (wins)" if layer.get("wins") else ""
        lines.append(f"          layer   {layer['path']}:{layer['line']} = {layer['raw']}{wins}")
    for layer in a.get("profiles", []):
        lines.append(f"          profile {layer['profile']}: {layer['path']}:{layer['line']} = {layer['raw']}")
    for read in a.get("reads", []):
        if read.get("default_seconds") is not None:
            lines.append(f"          default {_seconds(read['default_seconds'])} ({read['path']}:{read['line']})")
    chain = graph.flow_path(source, target)
    labels = []
    for node in chain:
        attrs = g.nodes[node]
        where = f" ({attrs['path']}:{attrs['line']})" if attrs.get("path") and attrs.get("line") else ""
        labels.append(f"{attrs.get('label', node)}{where}")
    lines.append("  flow    " + "\n          → ".join(labels))
    return lines


def _rule_lines(graph, node: str) -> list[str]:
    from deadline_audit.checks import implemented_rules
    from deadline_audit.checks import da101

    lines = []
    if "DA101" in implemented_rules():
        explained = da101.explain(graph, node)
        lines.extend(explained or ["DA101 does not apply: no operation lease supervises this site"
                                   if graph.g.nodes[node].get("role") in ("transport_deadline", "context_deadline", "read_timeout")
                                   else f"DA101 does not apply to role {graph.g.nodes[node].get('role')}"])
    return lines
