"""Go struct fields filled from a loaded config file by their tags (SPEC §4 "Reading a
config key": a struct tag `yaml:"…"`, `toml:"…"`, `mapstructure:"…"` names the key).

A tagged field's dotted key is its tag under the tags of the fields that hold its struct
(`File.Worker yaml:"worker"` → `WorkerSettings.FetchTimeout yaml:"fetch_timeout"` is
`worker.fetch_timeout`). When exactly one config file holds that key, the field is bound
to it, decoded by the field's type: a string into a `time.Duration` as Go parses it, a
number into a `time.Duration` as nanoseconds, anything into a number as a number, text
into a `string` field as it is (the program parses it: `parseDuration(f.Timeout)`).

viper fills the same fields from more layers (catalog `go.viper`): `v.BindEnv(key, NAME)`
wins, then the config file, then `v.SetDefault(key, D)`. A `time.Duration` field whose key
the program binds to an env variable or gives a default that way reads that chain.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Iterator

from deadline_audit.facts import WRAPPED_SCALARS, Binding

if TYPE_CHECKING:
    from deadline_audit.graph import TimeoutGraph

_TAGS = ("yaml", "toml", "mapstructure")
# every tag a decoder fills a field by: the config-file tags and encoding/json's
DECODING_TAGS = ("json", *_TAGS)
_NUMERIC = {"int", "int32", "int64", "uint", "uint32", "uint64", "float32", "float64"}


def tagged_keys(graph: "TimeoutGraph", tags: tuple[str, ...] = _TAGS) -> dict[str, list[str]]:
    """Go struct fields named by a tag of `tags` -> the dotted keys they may read, under
    the tags of the fields that hold their struct (several when the struct is held at
    several places)."""
    tagged: dict[str, str] = {}
    parents: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for sym, decl in graph.decls.items():
        if decl.kind != "field" or not sym.startswith("sym:go:"):
            continue
        key = next((decl.tags[t].split(",")[0] for t in tags if decl.tags.get(t)), None)
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

    return {sym: [".".join([*pre, key]) for pre in prefixes(sym.rsplit(".", 1)[0][len("sym:go:"):])]
            for sym, key in tagged.items()}


def bind_config_tags(graph: "TimeoutGraph") -> None:
    viper = _viper_keys(graph)
    if not graph.config_values and not viper[0] and not viper[1]:
        return
    # `type Duration struct{ time.Duration }`: a decoding wrapper holds the scalar it embeds
    wrapped = {sym.rsplit(".", 1)[0][len("sym:go:"):]: d.type for sym, d in graph.decls.items()
               if d.embedded and d.kind == "field" and d.type in WRAPPED_SCALARS and sym.startswith("sym:go:")}
    # `type Duration time.Duration` (decoded from "45s" by its own UnmarshalYAML): the scalar
    wrapped.update({sym[len("sym:go:"):]: d.type for sym, d in graph.decls.items()
                    if d.kind == "type" and d.type in WRAPPED_SCALARS and sym.startswith("sym:go:")})
    for sym, keys in [*tagged_keys(graph).items(), *_json_config_keys(graph).items()]:
        decl = graph.decls[sym]
        scalar = wrapped.get(decl.type or "", decl.type)
        if scalar != "time.Duration" and scalar not in _NUMERIC and scalar != "string":
            continue
        for dotted in keys:
            values = graph.config_values.get(dotted, ())
            if scalar == "time.Duration" and (dotted in viper[0] or dotted in viper[1]):
                if _bind_viper(graph, sym, dotted, values, viper):
                    break
            if len(values) != 1:
                continue
            read = {"k": "cfg", "key": dotted, "file": values[0][0], "default": None}
            if scalar == "string":  # text the program parses itself (`parseDuration(f.Timeout)`)
                if values[0][1].is_number:
                    break
                expr = read
            elif scalar == "time.Duration":
                expr = {"k": "conv", "t": "go_duration" if values[0][1].is_number else "parse_duration", "x": read}
            else:
                expr = {"k": "conv", "t": "number", "x": read}
            graph.bindings[sym].append((Binding(sym, expr, decl.span), graph.decl_path[sym]))
            # a struct held at several places reads one key per place (`activities.extract.…`,
            # `activities.transform.…`): the read's access path picks one (graph.py)


def _json_config_keys(graph: "TimeoutGraph") -> dict[str, list[str]]:
    """`json:"…"` tags name config keys only in a struct that mirrors a loaded JSON file
    (`json.Unmarshal(raw, &fc)` of `config/sidecar.json`): a field whose key that file
    holds, in a struct where another field's key is held by the same file. A wire struct
    sharing one key name with a config file is not bound to it."""
    files = {f for values in graph.config_values.values() for f, _ in values if str(f).endswith(".json")}
    if not files:
        return {}
    found: dict[str, list[str]] = {}
    by_struct: dict[str, list[tuple[str, list[str], set]]] = defaultdict(list)
    for sym, keys in tagged_keys(graph, ("json",)).items():
        decl = graph.decls[sym]
        if any(decl.tags.get(t) for t in _TAGS):
            continue  # the config-file tags already say
        held = {f for key in keys for f, _ in graph.config_values.get(key, ()) if f in files}
        by_struct[sym.rsplit(".", 1)[0]].append((sym, keys, held))
    for fields in by_struct.values():
        for sym, keys, held in fields:
            if held and any(other != sym and held & other_held for other, _, other_held in fields):
                found[sym] = keys
    return found


def _viper_keys(graph: "TimeoutGraph") -> tuple[dict[str, tuple], dict[str, tuple], tuple | None]:
    """(key -> (default expr, its path, its position)) of `SetDefault(key, D)`,
    (key -> (env name, path, position)) of `BindEnv(key, NAME)`, on any receiver, and
    `AutomaticEnv` as (prefix, key replacer set?, path, position) (catalog `go.viper`)."""
    found = graph._memo.get(("viper_keys",))
    if found is not None:
        return found
    spec = graph.catalog.table("go", "viper")
    set_default, bind_env = set(spec.get("defaults", ())), set(spec.get("env_bindings", ()))
    automatic, prefixes = set(spec.get("automatic_env", ())), set(spec.get("env_prefix", ()))
    replacers = set(spec.get("key_replacers", ()))
    defaults: dict[str, tuple] = {}
    envs: dict[str, tuple] = {}
    auto_at, prefix, replaced = None, "", False
    for calls in graph.calls_in.values():
        for call, path in calls:
            callee = call.callee
            name = callee.get("name") if callee.get("k") in ("method", "ext") else None
            last = str(name or "").rsplit(".", 1)[-1]
            if graph.lang.get(path) != "go":
                continue
            if last in automatic:
                auto_at = (path, (call.span.line, call.span.column))
            elif last in prefixes and call.args and call.args[0].get("k") == "str":
                prefix = call.args[0]["v"]
            elif last in replacers:
                replaced = True
            if last not in set_default and last not in bind_env or len(call.args) < 2 \
                    or call.args[0].get("k") != "str":
                continue
            key = call.args[0]["v"]
            if last in set_default:
                defaults.setdefault(key, (call.args[1], path, (call.span.line, call.span.column)))
            elif call.args[1].get("k") == "str":
                envs.setdefault(key, (call.args[1]["v"], path, (call.span.line, call.span.column)))
    auto = (prefix, replaced, *auto_at) if auto_at is not None else None
    found = graph._memo[("viper_keys",)] = (defaults, envs, auto)
    return found


def _bind_viper(graph: "TimeoutGraph", sym: str, key: str, values, viper) -> bool:
    """The field reads its env variable, else the config file, else the viper default."""
    read = _viper_duration(graph, key, values, viper)
    if read is None:
        return False
    expr, path = read
    decl = graph.decls[sym]
    bound = (Binding(sym, expr, decl.span), path or graph.decl_path[sym])
    graph.bindings[sym].append(bound)
    graph.derived_bindings.append(bound)
    return True


def _viper_duration(graph: "TimeoutGraph", key: str, values, viper) -> tuple[dict, str | None] | None:
    """A Duration viper gives for `key`: its env variable, else the config file, else the
    `SetDefault` value (as Go text, so that one parse reads any of the three), with the
    path of the env binding when there is one."""
    from deadline_audit.durations import Quantity
    from deadline_audit.graph import Ctx

    defaults, envs = viper[0], viper[1]
    compiled: dict | None = None  # the SetDefault value, as Go text
    if key in defaults:
        expr, dpath, at = defaults[key]
        value = graph.value(expr, Ctx(dpath))
        if isinstance(value, Quantity) and value.unit in (None, "ns"):
            compiled = {"k": "str", "v": f"{value.value:.0f}ns", "at": list(at)}
    text: dict | None = compiled  # what the field holds without the env variable
    if len(values) == 1 and not values[0][1].is_number:
        text = {"k": "cfg", "key": key, "file": values[0][0], "default": compiled, "compiled": compiled is not None}
    env = _env_of(key, viper)
    if text is None and env is None:
        return None
    path = None
    if env is not None:
        name, path, at = env
        text = {"k": "env", "name": {"k": "str", "v": name}, "default": text, "at": list(at)}
    return {"k": "conv", "t": "parse_duration", "x": text}, path


def _env_of(key: str, viper) -> tuple[str, str, tuple] | None:
    """The env variable viper reads `key` from: `BindEnv(key, NAME)`, else the name
    `AutomaticEnv` derives (the `SetEnvPrefix` prefix, the key upper-cased, its dots made
    underscores by a `SetEnvKeyReplacer`)."""
    envs, auto = viper[1], viper[2]
    if key in envs:
        return envs[key]
    if auto is None or ("." in key and not auto[1]):
        return None
    prefix, _, path, at = auto
    name = key.upper().replace(".", "_").replace("-", "_")
    return (f"{prefix.upper()}_{name}" if prefix else name), path, at


def bind_viper_getters(graph: "TimeoutGraph") -> None:
    """`HTTPConfig{WriteTimeout: v.GetDuration("http.write_timeout")}`: what a getter of
    catalog `go.viper.getters` reads is the key's env variable, config file value or
    default (the call's own binding is replaced by that chain)."""
    getters = graph.catalog.table("go", "viper").get("getters", {})
    viper = _viper_keys(graph)
    if not getters or not (viper[0] or viper[1] or viper[2] or graph.config_values):
        return
    for sym, binds in graph.bindings.items():
        for i, (binding, path) in enumerate(binds):
            expr = binding.expr
            if expr.get("k") != "call" or not sym.startswith("sym:go:"):
                continue
            kind = getters.get(str((expr.get("fn") or {}).get("name") or "").rsplit(".", 1)[-1])
            args = expr.get("args") or []
            if kind != "duration" or not args or args[0].get("k") != "str":
                continue
            read = _viper_duration(graph, args[0]["v"], graph.config_values.get(args[0]["v"], ()), viper)
            if read is not None:
                binds[i] = (Binding(sym, read[0], binding.span, binding.function, binding.is_default), path)
                graph.derived_bindings.append(binds[i])
