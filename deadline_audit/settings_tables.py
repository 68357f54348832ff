"""Python settings classes filled from a table of a loaded config file (SPEC §4 "Reading a
config key"), the Python counterpart of config_tags.py.

Two ways a settings class names where its values come from:
- a class-level string naming a top-level table of a config file (`section = "locks"`,
  read by a custom pydantic-settings source or a loader that feeds `raw["locks"]` to the
  class) whose keys are field names of the class;
- pydantic-settings' own file sources: `model_config = SettingsConfigDict(toml_file=…)`
  (also `yaml_file`, `json_file`), top-level keys named like the fields.

The file must be one the code names (a path or file name written in the program), the key
must be held by exactly one file, and at least one other field of the class must be a key
of the same table too, so that a string that merely equals a table name binds nothing. A
bound field reads the file's value where it read its compiled default: an environment
variable still overrides it (`{"k": "env", "default": <the file's value, else the
default>}`), as pydantic-settings orders its sources.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from deadline_audit.config_documents import document_keys
from deadline_audit.facts import Binding, Expr

if TYPE_CHECKING:
    from deadline_audit.graph import TimeoutGraph

def bind_settings_tables(graph: "TimeoutGraph") -> None:
    if not graph.config_values:
        return
    named = {PurePosixPath(n).name for f in graph.files.values() for n in f.config_files_named}
    files_by_key: dict[str, set[str]] = defaultdict(set)
    for key, values in graph.config_values.items():
        for path, _ in values:
            if PurePosixPath(path).name in named:
                files_by_key[key].add(path)
    if not files_by_key:
        return
    fields: dict[str, list[str]] = defaultdict(list)  # class symbol -> its field symbols
    for sym, decl in graph.decls.items():
        if decl.kind == "field" and sym.startswith("sym:py:"):
            fields[sym.rsplit(".", 1)[0]].append(sym)
    settings = graph.catalog.table("python", "settings")
    sources = (str(settings.get("config_attribute", "model_config")), tuple(settings.get("file_sources", ())))
    roots: dict[str, list[str]] = defaultdict(list)  # class -> key prefixes it is filled from
    for owner, members in fields.items():
        roots[owner].extend(_tables_named(graph, members, sources))
    for owner, prefix in _validated_documents(graph, settings, fields):
        roots[owner].append(prefix)
    # a model class nested at two places (`transcode: Stage`, `thumbnail: Stage`) reads
    # either table: its field gets one binding per key, values the checks try one by one
    keys_of: dict[str, dict[str, str]] = defaultdict(dict)
    for owner, prefixes in roots.items():
        for prefix in dict.fromkeys(prefixes):
            matched = [(sym, key) for sym, key in _nested_keys(graph, fields, owner, prefix)
                       if len(files_by_key.get(key, ())) == 1]
            if len(matched) < 2:
                continue  # one key in common says nothing about the class
            for sym, key in matched:
                keys_of[sym][key] = next(iter(files_by_key[key]))
    for sym, keys in keys_of.items():
        _read_from_file(graph, sym, keys)


def _nested_keys(graph: "TimeoutGraph", fields: dict[str, list[str]], owner: str, prefix: str,
                 depth: int = 0) -> list[tuple[str, str]]:
    """(field symbol, config key) for the fields of `owner` read under `prefix`, and of the
    model classes its fields hold (`jobs: JobsConfig` -> `jobs.table_sync.timeout_seconds`),
    as pydantic validates a nested table into a nested model."""
    out: list[tuple[str, str]] = []
    for sym in fields.get(owner, ()):
        key = prefix + sym.rsplit(".", 1)[-1]
        out.append((sym, key))
        decl = graph.decls.get(sym)
        if decl is None or depth >= 4:
            continue
        nested = _model_class(decl.type, fields)
        if nested is not None and nested != owner:
            out.extend(_nested_keys(graph, fields, nested, key + ".", depth + 1))
        item = _model_class(decl.item_type, fields)
        if item is not None and item != owner:
            # `carriers: dict[str, CarrierProfile]`: every table under `carriers.` (by
            # name, or by index in a list) validates into one CarrierProfile
            for part in _parts_under(graph, key + "."):
                out.extend(_nested_keys(graph, fields, item, f"{key}.{part}.", depth + 1))
    return out


def _model_class(type_name: str | None, fields: dict[str, list[str]]) -> str | None:
    nested = "sym:" + type_name if type_name and type_name.startswith("py:") else None
    return nested if nested in fields else None


def _parts_under(graph: "TimeoutGraph", prefix: str) -> list[str]:
    """The names (or list indices) of the tables right under `prefix` in the config files."""
    parts = {key[len(prefix):].split(".", 1)[0] for key in graph.config_values
             if key.startswith(prefix) and "." in key[len(prefix):]}
    return sorted(parts)


def _validated_documents(graph: "TimeoutGraph", settings: dict, fields: dict[str, list[str]]):
    """(class, key prefix) for a model class filled from a loaded config document:
    `Jobs.model_validate(raw.get("jobs", {}))`, `Jobs(**raw["jobs"])`, where `raw` is
    what `tomllib.load`/`yaml.safe_load`/… returned (catalog `settings.document_loaders`,
    `settings.validators`)."""
    loaders = frozenset(settings.get("document_loaders", ()))
    validators = set(settings.get("validators", ()))
    for calls in graph.calls_in.values():
        for call, path in calls:
            if not path.endswith(".py") or call.callee.get("k") != "fnref":
                continue
            sym = call.callee["sym"]
            if sym in fields and "spread" in call.extra:
                owner, document = sym, call.extra["spread"]
            elif sym.rsplit(".", 1)[0] in fields and sym.rsplit(".", 1)[-1] in validators and call.args:
                owner, document = sym.rsplit(".", 1)[0], call.args[0]
            else:
                continue
            for keys in document_keys(document, loaders, lambda sym: graph.bindings.get(sym, ())) or ():
                yield owner, "".join(k + "." for k in keys)


def _tables_named(graph: "TimeoutGraph", members: list[str], sources: tuple[str, tuple[str, ...]]) -> list[str]:
    """Key prefixes the class names: "locks." for `section = "locks"`, "" for a
    pydantic-settings file source (catalog `settings.config_attribute` / `file_sources`)."""
    config_attribute, file_sources = sources
    found: list[str] = []
    for sym in members:
        for b, _ in graph.bindings.get(sym, ()):
            expr = b.expr
            if expr.get("k") == "str" and expr.get("v") and "." not in expr["v"] and " " not in expr["v"]:
                found.append(expr["v"] + ".")
            elif expr.get("k") == "call" and sym.endswith("." + config_attribute):
                if any((expr.get("kw") or {}).get(k, {}).get("k") == "str" for k in file_sources):
                    found.append("")
    return list(dict.fromkeys(found))


def _read_from_file(graph: "TimeoutGraph", sym: str, keys: dict[str, str]) -> None:
    rebound = []
    for b, bpath in graph.bindings.get(sym, ()):
        for key, path in keys.items():
            rebound.append((Binding(b.sym, _with_file(b.expr, key, path), b.span, b.function, b.is_default), bpath))
    if rebound:
        graph.bindings[sym] = rebound


def _with_file(expr: Expr, key: str, path: str) -> Expr:
    """The file's value in place of the compiled default (an env read keeps precedence)."""
    if expr.get("k") == "env":
        return {**expr, "default": {"k": "cfg", "key": key, "file": path, "default": expr.get("default")}}
    return {"k": "cfg", "key": key, "file": path, "default": expr}
