"""The timeout inventory (SPEC §5, additive `inventory` of `check --format json`).

Plain data built from the graph and the knob index: every env knob (set in an env file,
documented, or read by code) and every timeout-like key of a loaded config file, with
its effective value (seconds when parseable, and the raw text), the layer that won, the
value per layer and profile, the compiled defaults with their locations, the sites that
read it, and the timeout sites it reaches. Reporters only serialise it.
"""

from __future__ import annotations

from typing import Any

from deadline_audit.durations import Quantity, format_go_duration
from deadline_audit.findings import Layer
from deadline_audit.graph import TimeoutGraph
from deadline_audit.knobs import (compiled_defaults, config_defaults_for, consumed_seconds, false_friends, knob_index,
                                  knob_settings, loaded_config_files, matches, seconds_of)


def build_inventory(graph: TimeoutGraph, options: dict | None = None) -> list[dict[str, Any]]:
    options = options or {}
    idx = knob_index(graph)
    patterns, _, _ = knob_settings(graph, options)
    friends = false_friends(graph)
    documented = _documented(graph)
    names = sorted(set(graph.env) | {r[0].name for r in idx.reads.values() if r}
                   | {n for n in documented if n in graph.env or n.upper() in idx.reads})
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for name in names:
        if name.upper() in seen and name not in graph.env:
            continue
        seen.add(name.upper())
        var = graph.env.get(name)
        won = var.effective_raw() if var is not None else None
        defaults = compiled_defaults(graph, name)
        # seconds in the consuming code's unit where it decides (`time.Duration(n) * time.Millisecond`)
        measured = {id(r): consumed_seconds(graph, r) for r, _ in defaults} if won else {}
        effective = _effective(won[1], name, won[1].profile) if won else None
        first = next((m for m in measured.values() if m is not None), None)
        if effective is not None and first is not None:
            effective["seconds"] = first[0]
        out.append({
            "kind": "env",
            "name": name,
            "node": f"env:{name}",
            "timeout_like": matches(name, patterns, friends),
            "effective": effective,
            "layers": [_layer(lay, name) for lay in (var.layers if var else ())],
            "profiles": [_layer(p, name) for p in (var.profiles if var else ())],
            "documented": documented.get(name, []),
            "defaults": [{"path": r.location.path, "line": r.location.line, "column": r.location.column,
                          "seconds": measured[id(r)][1] if measured.get(id(r)) else s,
                          "raw": _raw(r.default), "via": r.via}
                         for r, s in defaults],
            "reads": [{"path": r.location.path, "line": r.location.line, "column": r.location.column, "via": r.via}
                      for r in idx.reads.get(name.upper(), ())],
            "read": idx.env_read(name),
            "sites": _sites(graph, [f"env:{name}"]),
        })
    for path in loaded_config_files(graph, idx, options):
        for cv in graph.files[path].config_values:
            nodes = [f"cfg:{path}#{cv.key}", f"cfg:*#{cv.key}"]
            sites = _sites(graph, nodes)
            if not sites and not matches(cv.key.rsplit(".", 1)[-1], patterns, friends):
                continue
            out.append({
                "kind": "config",
                "name": cv.key,
                "node": nodes[0],
                "timeout_like": matches(cv.key.rsplit(".", 1)[-1], patterns, friends),
                "effective": {"path": path, "line": cv.span.line, "raw": cv.raw,
                              "seconds": seconds_of(cv.raw, cv.key), "layer": "config", "profile": None},
                "layers": [], "profiles": [], "documented": [],
                "defaults": [{"path": d.location.path, "line": d.location.line, "column": d.location.column,
                              "seconds": seconds_of(d.default, cv.key), "raw": _raw(d.default), "via": "config default"}
                             for d in config_defaults_for(idx, cv.key)],
                "reads": [],
                "read": idx.key_read(cv.key),
                "sites": sites,
            })
    return out


def _documented(graph: TimeoutGraph) -> dict[str, list[dict[str, Any]]]:
    docs: dict[str, list[dict[str, Any]]] = {}
    for path, facts in sorted(graph.files.items()):
        if facts.kind == "env" and facts.env_role == "doc":
            for v in facts.env_values:
                docs.setdefault(v.name, []).append({"path": path, "line": v.span.line})
        if facts.kind in ("env", "markdown"):
            for m in facts.knob_mentions:
                docs.setdefault(m.name, []).append({"path": path, "line": m.span.line})
    return docs


def _effective(layer: Layer, name: str, profile: str | None) -> dict[str, Any]:
    return {"path": layer.path, "line": layer.line, "raw": layer.raw, "seconds": seconds_of(layer.raw, name),
            "layer": "profile" if profile else "layer", "profile": profile}


def _layer(layer: Layer, name: str) -> dict[str, Any]:
    return {"path": layer.path, "line": layer.line, "raw": layer.raw, "seconds": seconds_of(layer.raw, name),
            "profile": layer.profile, "wins": layer.wins}


def _raw(value: Any) -> str | None:
    """A compiled default as text: Go durations in Go syntax, numbers as written."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Quantity):
        if value.unit == "ns":
            return format_go_duration(value.value / 1e9)
        return f"{value.value:g}{'s' if value.unit == 's' else ''}"
    return str(value)


def _sites(graph: TimeoutGraph, nodes: list[str]) -> list[dict[str, Any]]:
    import networkx as nx

    g = graph.g
    found: dict[str, dict[str, Any]] = {}
    for node in nodes:
        if node not in g:
            continue
        for other in nx.descendants(g, node):
            attrs = g.nodes[other]
            if attrs.get("kind") != "site" or attrs.get("role") == "terminal_write":
                continue
            found[other] = {"id": other, "path": attrs.get("path"), "line": attrs.get("line"),
                            "column": attrs.get("column"), "role": attrs.get("role"), "label": attrs.get("label"),
                            "effective_seconds": attrs.get("effective_seconds")}
    return [found[k] for k in sorted(found)]
