"""Evidence shared by the checks: locations, flows with values per layer, durations."""

from __future__ import annotations

from deadline_audit.findings import FlowStep, Layer, Location
from deadline_audit.graph import TimeoutGraph
from deadline_audit.duration_text import format_seconds


def describe_seconds(seconds: float | None) -> str:
    return format_seconds(seconds) if seconds is not None else "an unresolved value"


def first_source(graph: TimeoutGraph, node: str) -> str | None:
    """The root a finding's flow starts from: an env variable when one feeds the node
    (that is where deployments change it), else the first other root."""
    sources = sorted(graph.sources(node))
    env = [s for s in sources if s.startswith("env:")]
    return (env or sources or [None])[0]


def location_of(graph: TimeoutGraph, node: str) -> Location:
    attrs = graph.g.nodes[node]
    return Location(attrs.get("path", ""), int(attrs.get("line") or 1), int(attrs.get("column") or 1))


def flow_steps(graph: TimeoutGraph, source: str, target: str) -> list[FlowStep]:
    """The path from `source` to `target` as FlowSteps, each with its value; env nodes
    carry every layer and profile and the compiled default of the reading site."""
    path = graph.flow_path(source, target)
    steps = []
    previous = None
    for node in path:
        attrs = graph.g.nodes[node]
        transform = None
        if previous is not None:
            edges = graph.g.get_edge_data(previous, node) or {}
            transform = next((e.get("transform") for e in edges.values()), None)
        layers: tuple[Layer, ...] = ()
        default = default_loc = None
        if attrs.get("kind") == "env":
            layers = tuple(
                Layer(lay["path"], lay["line"], lay["value_seconds"], lay["raw"], lay.get("profile"), lay.get("wins", False))
                for lay in attrs.get("layers", []) + attrs.get("profiles", []))
            reads = [r for r in attrs.get("reads", []) if r.get("default_seconds") is not None]
            if reads:
                default = reads[0]["default_seconds"]
                default_loc = Location(reads[0]["path"], reads[0]["line"], reads[0].get("column") or 1)
        location = None
        if attrs.get("path"):
            location = Location(attrs["path"], int(attrs.get("line") or 1), int(attrs.get("column") or 1))
        elif layers:
            won = next((lay for lay in layers if lay.wins), layers[-1])
            location = Location(won.path, won.line, 1)
        steps.append(FlowStep(
            node=node, label=attrs.get("label", node), value_seconds=attrs.get("value_seconds"),
            location=location, layers=layers, default_seconds=default, default_location=default_loc,
            transform=transform if transform not in (None, "identity") else None,
        ))
        previous = node
    return steps
