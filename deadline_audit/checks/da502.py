"""DA502 default-drift: a timeout knob whose effective deployed value and a compiled
default differ by `ratio` (10) or more, either way.

Env knobs: the effective value of the env layers and profiles (SPEC §2) against every
compiled default the code applies when the variable is unset (an env read's default, a
pydantic-settings field default, a helper's default argument, an envconfig `default:`
tag; defaults in test code are left out). One finding per knob at the env line that
deploys the effective value; related: every default that differs that much. Values are
compared in the unit of the expression that consumes the read when it depends on that
knob alone (knobs.consumed_seconds), else by the name's unit (seconds, `_MS`).
Config keys of loaded files: their value against the code's default for the key
(`.get(key, default)`, SetDefault, a value set on a Go config struct's tagged field).
Only durations are compared (`_timeout_like`); 0 and unresolved values never are.
"""

from __future__ import annotations

from collections.abc import Iterable

from deadline_audit.checks.evidence import describe_seconds
from deadline_audit.durations import Quantity
from deadline_audit.findings import Finding, FlowStep, Layer, Location, Related
from deadline_audit.graph import TimeoutGraph
from deadline_audit.knobs import (
    TIME_WORDS, EnvRead, compiled_defaults, config_defaults_for, consumed_seconds, false_friends, has_unit,
    knob_index, knob_settings, loaded_config_files, matches, seconds_of)

RULE_ID, RULE_NAME, SEVERITY = "DA502", "default-drift", "info"


def drift(a: float, b: float) -> float:
    return max(a, b) / min(a, b)


def check(graph: TimeoutGraph, options: dict) -> Iterable[Finding]:
    ratio = float(options.get("ratio", 10.0))
    patterns, _, _ = knob_settings(graph, options)
    for name in sorted(graph.env):
        var = graph.env[name]
        won = var.effective_raw()
        if won is None:
            continue
        raw, layer = won
        deployed = seconds_of(raw, name)
        if deployed is None or deployed <= 0:
            continue
        defaults = compiled_defaults(graph, name)
        if not defaults or not _timeout_like(graph, name, raw, defaults, patterns):
            continue
        far = []
        for read, default in defaults:
            measured = consumed_seconds(graph, read)
            if measured is not None and measured[0] > 0 and measured[1] > 0:
                deployed_here, default = measured  # in the consuming code's own unit
            else:
                deployed_here = deployed
            if drift(default, deployed_here) >= ratio * (1 - 1e-9):
                far.append((read, default, deployed_here))
        if far:
            yield _finding(name, var, raw, layer, far)
    yield from _config_drift(graph, options, ratio, patterns)


def _config_drift(graph: TimeoutGraph, options: dict, ratio: float, patterns: list[str]) -> Iterable[Finding]:
    """A key of a loaded config file against the default the code gives when the key is
    missing (`.get("key", default)`, viper `SetDefault`): one finding per key line."""
    idx = knob_index(graph)
    if not idx.config_defaults:
        return
    friends = false_friends(graph)
    loaded = loaded_config_files(graph, idx, options)
    leaves: dict[str, int] = {}
    for path in loaded:
        for cv in graph.files[path].config_values:
            leaves[cv.key.rsplit(".", 1)[-1]] = leaves.get(cv.key.rsplit(".", 1)[-1], 0) + 1
    for path in loaded:
        for cv in graph.files[path].config_values:
            parts = cv.key.split(".")
            leaf = parts[-1]
            if not matches(leaf, patterns, friends):
                continue
            if not (matches(leaf, TIME_WORDS, friends) or has_unit(leaf, cv.raw, [d.default for d in config_defaults_for(idx, cv.key)])):
                continue
            deployed = seconds_of(cv.raw, leaf)
            if deployed is None or deployed <= 0:
                continue
            far = []
            for d in config_defaults_for(idx, cv.key):
                if d.go_duration and cv.is_number:
                    continue  # decoded as nanoseconds: DA403's finding, not a drift
                if d.parent is None and "." not in d.key and leaves.get(leaf, 0) > 1:
                    continue  # which of the keys named like this does the default belong to?
                seconds = seconds_of(d.default, leaf)
                if seconds and seconds > 0 and drift(seconds, deployed) >= ratio * (1 - 1e-9):
                    far.append((d, seconds))
            if far:
                yield _config_finding(path, cv, deployed, far)


def _config_finding(path: str, cv, deployed: float, far) -> Finding:
    d, default = far[0]
    factor = drift(default, deployed)
    direction = "larger" if deployed > default else "smaller"
    message = (f"{cv.key} is set to {cv.raw} ({describe_seconds(deployed)}) in the loaded config file {path}, "
               f"{factor:.3g}\u00d7 {direction} than the default the code applies without it, "
               f"{describe_seconds(default)} ({d.location.path}:{d.location.line}): a deployment without this "
               f"file runs a different system.")
    related = [Related(f"compiled default {describe_seconds(s)}, {drift(s, deployed):.3g}\u00d7 from "
                       f"the configured {describe_seconds(deployed)}", x.location) for x, s in far]
    loc = Location(path, cv.span.line, cv.span.column, cv.span.end_line, cv.span.end_column)
    flow = [FlowStep(node=f"cfg:{path}#{cv.key}", label=cv.key, value_seconds=deployed, location=loc,
                     default_seconds=default, default_location=d.location)]
    fix = f"make the code's default for {cv.key} the configured value, or within a small factor of it"
    return Finding(RULE_ID, RULE_NAME, SEVERITY, message, loc, related, flow, fix)


def _timeout_like(graph: TimeoutGraph, name: str, raw: str, defaults: list[tuple[EnvRead, float]],
                  patterns: list[str]) -> bool:
    """Is this knob a duration? It feeds a timeout site, or its default is a duration
    (Go `time.Duration`, `timedelta`), or a value or its name carries a unit, or its name
    is a knob name that always means time (`*TIMEOUT*`, `*TTL*`, `*DEADLINE*`). A bare
    `CHECKPOINT_INTERVAL=1000` may count steps: not compared."""
    node = f"env:{name}"
    if node in graph.g and graph.g.out_degree(node) > 0:
        return True
    if any(isinstance(r.default, Quantity) and r.default.unit in ("ns", "s") for r, _ in defaults):
        return True
    if any(consumed_seconds(graph, r) is not None for r, _ in defaults):
        return True  # the code turns it into a duration (`time.Duration(n) * time.Millisecond`)
    friends = false_friends(graph)
    return matches(name, patterns, friends) and (
        has_unit(name, raw, [r.default for r, _ in defaults]) or matches(name, TIME_WORDS, friends))


def _where(layer: Layer) -> str:
    if layer.profile:
        return f"the {layer.profile} profile ({layer.path}:{layer.line})"
    return f"the env layer {layer.path}:{layer.line}"


def _finding(name: str, var, raw: str, layer: Layer, far: list[tuple[EnvRead, float, float]]) -> Finding:
    read, default, deployed = far[0]
    factor = drift(default, deployed)
    direction = "larger" if deployed > default else "smaller"
    others = f" (and {len(far) - 1} more default(s))" if len(far) > 1 else ""
    message = (f"{name} is deployed as {raw!s} ({describe_seconds(deployed)}) by {_where(layer)}, "
               f"{factor:.3g}\u00d7 {direction} than the compiled default {describe_seconds(default)} "
               f"({read.location.path}:{read.location.line}){others}: every run that misses the deployed value "
               f"(tests, local runs, a new environment) runs a different system.")
    related = [Related(f"compiled default {describe_seconds(s)} ({r.via}), {drift(s, d):.3g}\u00d7 from "
                       f"the deployed {describe_seconds(d)}", r.location) for r, s, d in far]
    loc = Location(layer.path, layer.line, 1)
    layers = tuple(var.layers) + tuple(var.profiles)
    flow = [FlowStep(node=f"env:{name}", label=name, value_seconds=deployed, location=loc, layers=layers,
                     default_seconds=default, default_location=read.location)]
    fix = (f"make the compiled default of {name} the value you deploy (or within a small factor of it), "
           f"and keep env overrides for real differences between environments")
    return Finding(RULE_ID, RULE_NAME, SEVERITY, message, loc, related, flow, fix)
