"""Go struct fields filled from a loaded config file by their tags (SPEC §4 "Reading a
config key": a struct tag `yaml:"…"`, `toml:"…"`, `mapstructure:"…"` names the key).

A tagged field's dotted key is its tag under the tags of the fields that hold its struct
(`File.Worker yaml:"worker"` → `WorkerSettings.FetchTimeout yaml:"fetch_timeout"` is
`worker.fetch_timeout`). When exactly one config file holds that key, the field is bound
to it, decoded by the field's type: a string into a `time.Duration` as Go parses it, a
number into a `time.Duration` as nanoseconds, anything into a number as a number.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Iterator

from deadline_audit.facts import WRAPPED_SCALARS, Binding

if TYPE_CHECKING:
    from deadline_audit.graph import TimeoutGraph

_TAGS = ("yaml", "toml", "mapstructure")
_NUMERIC = {"int", "int32", "int64", "uint", "uint32", "uint64", "float32", "float64"}


def bind_config_tags(graph: "TimeoutGraph") -> None:
    if not graph.config_values:
        return
    tagged: dict[str, str] = {}
    parents: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for sym, decl in graph.decls.items():
        if decl.kind != "field" or not sym.startswith("sym:go:"):
            continue
        key = next((decl.tags[t].split(",")[0] for t in _TAGS if decl.tags.get(t)), None)
        if not key or key == "-":
            continue
        tagged[sym] = key
        if decl.type:
            parents[decl.type].append((sym.rsplit(".", 1)[0][len("sym:go:"):], key))

    def prefixes(type_name: str, depth: int = 0) -> Iterator[list[str]]:
        if depth > 6 or not parents.get(type_name):
            yield []
            return
        for owner, key in parents[type_name][:8]:
            for pre in prefixes(owner, depth + 1):
                yield [*pre, key]

    # `type Duration struct{ time.Duration }`: a decoding wrapper holds the scalar it embeds
    wrapped = {sym.rsplit(".", 1)[0][len("sym:go:"):]: d.type for sym, d in graph.decls.items()
               if d.embedded and d.kind == "field" and d.type in WRAPPED_SCALARS and sym.startswith("sym:go:")}
    for sym, key in tagged.items():
        decl = graph.decls[sym]
        scalar = wrapped.get(decl.type or "", decl.type)
        if scalar != "time.Duration" and scalar not in _NUMERIC:
            continue
        owner = sym.rsplit(".", 1)[0][len("sym:go:"):]
        for pre in prefixes(owner):
            dotted = ".".join([*pre, key])
            values = graph.config_values.get(dotted, ())
            if len(values) != 1:
                continue
            read = {"k": "cfg", "key": dotted, "file": values[0][0], "default": None}
            if scalar == "time.Duration":
                expr = {"k": "conv", "t": "go_duration" if values[0][1].is_number else "parse_duration", "x": read}
            else:
                expr = {"k": "conv", "t": "number", "x": read}
            graph.bindings[sym].append((Binding(sym, expr, decl.span), graph.decl_path[sym]))
            break
