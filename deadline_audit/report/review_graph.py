"""The review's picture of the timeout-flow graph: one per component, clusters per
package, nodes coloured by role, edges labelled with the value that flows.

Rendered by Graphviz `dot` (a subprocess with a timeout) to SVG for inline embedding.
Above NODE_LIMIT nodes a component's picture is cut to the sites that carry findings and
everything that flows into them; the full graph is then rendered to a separate SVG file
beside the report. Without `dot` the review says so and carries Mermaid source instead
(graph_export's Mermaid writer, on the same node set).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field

import networkx as nx

from deadline_audit.report import graph_export
from deadline_audit.report.humanize import format_seconds

NODE_LIMIT = 300
NOT_DRAWN = ("sleep",)  # a pause bounds nothing
FULL_LIMIT = 4000  # the full graph beside the report is drawn up to this size
DOT_TIMEOUT_S = 60.0

ROLE_COLOURS = {  # fill colours, by role (sites) or kind (other nodes)
    "lease": "#c7e9c0", "heartbeat": "#c7e9c0", "renewal": "#a1d99b", "timer": "#e5f5e0", "ticker": "#e5f5e0",
    "transport_deadline": "#fcbba1", "read_timeout": "#fdd0a2", "context_deadline": "#fee391",
    "server_write_deadline": "#fc9272", "phase_timeout": "#f0f0f0", "ceiling": "#bcbddc", "fallback": "#dadaeb",
    "wire_field": "#c6dbef", "terminal_write": "#d9d9d9",
    "env": "#deebf7", "cfg": "#deebf7", "sym": "#ffffff", "lit": "#ffffff", "ctx": "#f7f7f7",
}
FINDING_COLOUR = "#cb181d"


@dataclass
class Picture:
    component: str
    total_nodes: int
    shown_nodes: int
    svg: str | None = None  # inline SVG (no XML prolog)
    mermaid: str = ""  # always available: the Markdown form and the fallback
    full_svg_name: str | None = None  # the full graph, beside the report, when cut
    notes: list[str] = field(default_factory=list)

    @property
    def cut(self) -> bool:
        return self.shown_nodes < self.total_nodes


def dot_available() -> str | None:
    return shutil.which("dot")


def pictures(review, *, full_svg_stem: str | None = None, render_svg: bool = True) -> tuple[list[Picture], dict[str, str]]:
    """One Picture per component with graph nodes, and the extra files to write beside the
    report ({file name: SVG text}) for the components that were cut."""
    graph = review.graph
    g = graph.g
    dot = dot_available() if render_svg else None
    marked = _finding_nodes(review)
    out, files = [], {}
    for component, nodes in _nodes_by_component(g, review.component_of, review.knob_of).items():
        full = g.subgraph(nodes)
        shown = full
        if full.number_of_nodes() > NODE_LIMIT:
            shown = g.subgraph(_cut(g, nodes, marked))
        picture = Picture(component, full.number_of_nodes(), shown.number_of_nodes(), mermaid=graph_export.render(shown, "mermaid"))
        if picture.cut:
            picture.notes.append(
                f"{full.number_of_nodes():,} nodes: the picture is cut to the {shown.number_of_nodes():,} "
                "nodes of the sites with findings and what flows into them.")
        if picture.cut and not shown.number_of_nodes():
            picture.notes.append("No site of this component carries a finding: nothing to draw here.")
        if dot is None:
            if render_svg:
                picture.notes.append("Graphviz `dot` is not installed: the graph is given as Mermaid source.")
        else:
            if shown.number_of_nodes():
                svg, error = render(dot, to_dot(shown, review, component, marked))
                # several SVGs share one HTML document: their ids must not collide
                picture.svg = re.sub(r'\bid="', f'id="{_slug(component)}-', svg) if svg else None
                if error:
                    picture.notes.append(f"Graphviz failed ({error}): the graph is given as Mermaid source.")
            if picture.cut and full_svg_stem and full.number_of_nodes() > FULL_LIMIT:
                picture.notes.append(f"The full graph ({full.number_of_nodes():,} nodes) is too large to draw; "
                                     "`deadline-audit graph --format dot` exports it.")
            elif picture.cut and full_svg_stem:
                name = f"{full_svg_stem}-{_slug(component)}-graph.svg"
                full_svg, full_error = render(dot, to_dot(full, review, component, marked), timeout=DOT_TIMEOUT_S * 2)
                if full_svg is not None:
                    files[name] = full_svg
                    picture.full_svg_name = name
                else:
                    picture.notes.append(f"The full graph could not be rendered ({full_error}).")
        out.append(picture)
    return out, files


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "graph"


def _component_of_node(g, node: str, component_of: dict[str, str], knob_of: dict) -> set[str]:
    a = g.nodes[node]
    if a.get("path") in component_of:
        return {component_of[a["path"]]}
    knob = knob_of.get(node) if a.get("kind") == "env" else None
    if knob is not None:  # where it is read, else where it is set
        reads = {component_of[r["path"]] for r in knob.entry["reads"] if r["path"] in component_of}
        if reads:
            return reads
        return {component_of[s["path"]] for s in knob.entry["layers"] + knob.entry["profiles"]
                if s["path"] in component_of}
    return set()


def _nodes_by_component(g, component_of: dict[str, str], knob_of: dict) -> dict[str, set[str]]:
    by: dict[str, set[str]] = {}
    for node in g.nodes:
        if g.nodes[node].get("role") in NOT_DRAWN:
            continue
        for comp in _component_of_node(g, node, component_of, knob_of):
            by.setdefault(comp, set()).add(node)
    for comp, nodes in by.items():  # a source read here but homed elsewhere is drawn here too
        for node in list(nodes):
            for pred in g.predecessors(node):
                if g.nodes[pred].get("kind") in ("env", "cfg"):
                    nodes.add(pred)
    # nodes with edges only: lone env variables nobody reads are not part of the picture
    out = {}
    for comp, nodes in sorted(by.items()):
        sub = g.subgraph(nodes)
        connected = {n for n in nodes if sub.degree(n)}
        if connected:
            out[comp] = connected
    return out


def _finding_nodes(review) -> set[str]:
    g = review.graph.g
    wanted = set()
    for rf in review.findings:
        f = rf.finding
        wanted.add((f.location.path, f.location.line))
        wanted.update((r.location.path, r.location.line) for r in f.related)
    marked = {n for n, a in g.nodes(data=True) if a.get("kind") == "site" and (a.get("path"), a.get("line")) in wanted}
    for rf in review.findings:
        marked.update(step.node for step in rf.finding.flow if step.node in g)
    return marked


def _cut(g, nodes: set[str], marked: set[str]) -> set[str]:
    keep = set()
    for node in nodes & marked:
        keep.add(node)
        keep.update(nx.ancestors(g, node) & nodes)
    return keep


# -- DOT -----------------------------------------------------------------------------

def _q(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _package(a: dict) -> str:
    path = a.get("path") or ""
    return path.rsplit("/", 1)[0] if "/" in path else (path or "env")


def to_dot(sub, review, component: str, marked: set[str]) -> str:
    names = {row.site: row.label for row in review.inventory}  # leases by their own name
    lines = [f"digraph {_q(component)} {{", "  rankdir=LR; newrank=true;",
             '  graph [fontname="Helvetica", fontsize=11, labeljust=l, color="#bbbbbb", style=rounded];',
             '  node [fontname="Helvetica", fontsize=10, style="filled", penwidth=1];',
             '  edge [fontname="Helvetica", fontsize=9, color="#555555"];',
             f"  label={_q('component ' + component)}; labelloc=t;"]
    clusters: dict[str, list[str]] = {}
    free: list[str] = []
    for node in sorted(sub.nodes):
        a = sub.nodes[node]
        (free if a.get("kind") in ("env", "cfg") or not a.get("path") else clusters.setdefault(_package(a), [])).append(node)
    ids = {node: f"n{i}" for i, node in enumerate(sorted(sub.nodes))}
    for i, (package, members) in enumerate(sorted(clusters.items())):
        lines.append(f"  subgraph cluster_{i} {{ label={_q(package)};")
        lines += [f"    {_node(ids[n], n, sub.nodes[n], n in marked, names.get(n))}" for n in members]
        lines.append("  }")
    if free:
        lines.append(f"  subgraph cluster_env {{ label={_q('environment and config')}; style=\"rounded,dashed\";")
        lines += [f"    {_node(ids[n], n, sub.nodes[n], n in marked, knob=review.knob_of.get(n))}" for n in free]
        lines.append("  }")
    for u, v, key, a in sorted(sub.edges(keys=True, data=True), key=lambda e: (e[0], e[1], str(e[2]))):
        label = _edge_label(sub.nodes[u], a)
        style = ' style=dashed' if a.get("kind") in ("derives", "writes_under") else ""
        lines.append(f"  {ids[u]} -> {ids[v]} [label={_q(label)}{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _node(node_id: str, node: str, a: dict, marked: bool, name: str | None = None, knob=None) -> str:
    kind = a.get("kind")
    role = a.get("role") if kind == "site" else kind
    shape = {"env": "note", "cfg": "note", "site": "box", "lit": "plaintext", "sym": "ellipse", "ctx": "hexagon"}.get(kind, "ellipse")
    text = _knob_text(knob) if knob is not None else _text(node, {**a, "label": name} if name else a)
    attrs = [f"label={_q(text)}", f"shape={shape}", f"fillcolor={_q(ROLE_COLOURS.get(role or '', '#ffffff'))}",
             f"tooltip={_q(node)}"]
    if kind == "site":
        attrs.append('style="filled,rounded"')
    if marked and kind == "site":
        attrs += [f"color={_q(FINDING_COLOUR)}", "penwidth=2.5"]
    return f"{node_id} [{', '.join(attrs)}];"


def _text(node: str, a: dict) -> str:
    """`label` / `role · value` on a second line (sites), `label = value` (symbols)."""
    label = str(a.get("label", node))
    value = a.get("value_seconds")
    if a.get("kind") == "lit":
        return label
    if a.get("kind") == "site":
        second = " · ".join(x for x in (a.get("role"), format_seconds(value) if value is not None else None) if x)
        return f"{label}\n{second}" if second else label
    label = _short(label)
    return f"{label} = {format_seconds(value)}" if value is not None else label


def _short(label: str, keep: int = 3) -> str:
    """`openai.resources.chat.completions.Completions.create.timeout` -> `…Completions.create.timeout`
    (the full id is the node's tooltip)."""
    parts = label.split(".")
    return label if len(parts) <= keep else "…" + ".".join(parts[-keep:])


def _knob_text(knob) -> str:
    """An env variable or config key as the knob inventory has it: `$NAME = 30m`, its
    compiled default on a second line."""
    effective = knob.entry.get("effective")
    text = knob.title + (f" = {effective['raw']}" if effective is not None else "")
    defaults = sorted({format_seconds(sec) for sec, _, _ in knob.defaults if sec is not None})
    return text + (f"\ndefault {', '.join(defaults)}" if defaults else "")


def _edge_label(source: dict, edge: dict) -> str:
    parts = []
    value = source.get("value_seconds")
    if value is not None:
        parts.append(format_seconds(value))
    transform = edge.get("transform")
    if transform and transform not in ("identity", "env_read"):
        parts.append(transform)
    if edge.get("kind") not in (None, "flows"):
        parts.append(edge["kind"])
    return " · ".join(parts)


def render(dot: str, source: str, *, timeout: float = DOT_TIMEOUT_S) -> tuple[str | None, str | None]:
    """(inline SVG, None) or (None, why not)."""
    try:
        done = subprocess.run([dot, "-Tsvg"], input=source.encode("utf-8"), capture_output=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return None, f"dot took longer than {timeout:g} s"
    except OSError as exc:
        return None, f"cannot run dot: {exc.strerror or exc}"
    if done.returncode != 0:
        return None, done.stderr.decode("utf-8", errors="replace").strip().splitlines()[-1:][0] if done.stderr else "dot failed"
    svg = done.stdout.decode("utf-8", errors="replace")
    svg = re.sub(r"<\?xml[^>]*\?>\s*", "", svg)
    svg = re.sub(r"<!DOCTYPE[^>]*>\s*", "", svg)
    svg = re.sub(r"<!--.*?-->\s*", "", svg, flags=re.S)
    return svg.strip(), None
