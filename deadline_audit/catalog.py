"""The catalog: what APIs mean for deadlines, loaded from `rules/catalog/*.toml`.

Knowledge lives in those files (and in the user's `[tool.deadline-audit.catalog]`, same
shape, appended); this module only loads, merges and indexes it. Extractors ask it which
calls and fields are sites; the graph and checks ask what a site's role, zero and implicit
default mean.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cache
from typing import Any

from deadline_audit.resources import rules_dir

_LIST_KEYS = ("sites", "env_reads", "conversions", "leases", "ownership_leases")


class CatalogError(ValueError):
    pass


@dataclass(frozen=True)
class SiteSpec:
    api: str
    kind: str  # field | call | method
    role: str
    lang: str
    unit: str | None = None
    type: str | None = None
    field: str | None = None
    funcs: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    arg: int | None = None
    kw: str | None = None
    zero: str | None = None
    none: str | None = None
    implicit_default: float | None = None
    covers_body: bool = False
    per_attempt: bool = False
    answers_when_done: bool = False
    absolute: bool = False
    temporal: str | None = None
    note: str = ""
    stream_fix: str = ""  # DA102: what to do instead when this deadline covers a stream
    acquire_kw: tuple[str, ...] = ()  # a renewing call given one of these truthily only acquires (`nx=True`)
    callback: int | None = None  # a timer's function argument (`threading.Timer(interval, function)`)
    callback_kw: str | None = None
    rearms: bool = False  # in a timer's callback, this call arms the timer again (`t.Reset(d)`)

    def matches_func(self, qualified: str) -> bool:
        return any(fnmatchcase(qualified, pattern) for pattern in self.funcs)

    def matches_method(self, chain: str) -> bool:
        return any(chain == m or chain.endswith("." + m) for m in self.methods)


def _as_tuple(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


@dataclass
class Catalog:
    data: dict[str, Any]
    sites: list[SiteSpec] = field(default_factory=list)

    def __post_init__(self) -> None:
        for lang, entries in self.data.get("sites_by_lang", {}).items():
            for entry in entries:
                self.sites.append(_site_spec(lang, entry))
        self._by_api = {s.api: s for s in self.sites}

    # -- lookups used by extractors -------------------------------------------------
    def field_sites(self, lang: str, type_name: str, field_name: str) -> list[SiteSpec]:
        return [
            s for s in self.sites
            if s.lang == lang and s.kind == "field" and s.field == field_name and s.type == type_name
        ]

    def field_site_types(self, lang: str) -> set[str]:
        return {s.type for s in self.sites if s.lang == lang and s.kind == "field" and s.type}

    def call_sites(self, lang: str, qualified: str) -> list[SiteSpec]:
        return [s for s in self.sites if s.lang == lang and s.kind == "call" and s.matches_func(qualified)]

    def method_sites(self, lang: str, chain: str) -> list[SiteSpec]:
        return [s for s in self.sites if s.lang == lang and s.kind == "method" and s.matches_method(chain)]

    def site(self, api: str) -> SiteSpec | None:
        return self._by_api.get(api)

    def entries(self, lang: str, key: str) -> list[dict[str, Any]]:
        return list(self.data.get(lang, {}).get(key, []))

    def env_read(self, lang: str, qualified: str) -> dict[str, Any] | None:
        for entry in self.entries(lang, "env_reads"):
            if any(fnmatchcase(qualified, p) for p in _as_tuple(entry.get("func"))):
                return entry
        return None

    def conversion(self, lang: str, qualified: str) -> dict[str, Any] | None:
        for entry in self.entries(lang, "conversions"):
            if any(fnmatchcase(qualified, p) for p in _as_tuple(entry.get("func"))):
                return entry
        return None

    def constants(self, lang: str) -> dict[str, float]:
        return dict(self.data.get(lang, {}).get("constants", {}))

    def table(self, lang: str, key: str) -> dict[str, Any]:
        return dict(self.data.get(lang, {}).get(key, {}))

    def file(self, name: str) -> dict[str, Any]:
        """A whole catalog file by its stem (`rules/catalog/<name>.toml`), user extensions
        merged: rule families keep their own files (terminal_writes, leases, …)."""
        return dict(self.data.get(name, {}))

    def words(self, group: str) -> tuple[str, ...]:
        return tuple(self.data.get("vocabulary", {}).get("vocabulary", {}).get(group, ()))

    @property
    def fingerprint(self) -> str:
        """Part of the cache key: facts depend on the catalog."""
        blob = json.dumps(self.data, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def _site_spec(lang: str, entry: dict[str, Any]) -> SiteSpec:
    try:
        return SiteSpec(
            api=entry["api"],
            kind=entry["kind"],
            role=entry["role"],
            lang=lang,
            unit=entry.get("unit"),
            type=entry.get("type"),
            field=entry.get("field"),
            funcs=_as_tuple(entry.get("func")),
            methods=_as_tuple(entry.get("method")),
            arg=entry.get("arg"),
            kw=entry.get("kw"),
            zero=entry.get("zero"),
            none=entry.get("none"),
            implicit_default=entry.get("implicit_default"),
            covers_body=bool(entry.get("covers_body", False)),
            per_attempt=bool(entry.get("per_attempt", False)),
            answers_when_done=bool(entry.get("answers_when_done", False)),
            absolute=bool(entry.get("absolute", False)),
            temporal=entry.get("temporal"),
            note=entry.get("note", ""),
            stream_fix=entry.get("stream_fix", ""),
            acquire_kw=_as_tuple(entry.get("acquire_kw")),
            callback=entry.get("callback"),
            callback_kw=entry.get("callback_kw"),
            rearms=bool(entry.get("rearms", False)),
        )
    except KeyError as exc:
        raise CatalogError(f"catalog site entry {entry!r} lacks key {exc.args[0]!r}") from None


@cache
def _shipped() -> dict[str, Any]:
    data: dict[str, Any] = {}
    for path in sorted((rules_dir() / "catalog").glob("*.toml")):
        with path.open("rb") as fh:
            data[path.stem] = tomllib.load(fh)
    return data


def _merge(target: dict[str, Any], ext: dict[str, Any]) -> None:
    """Lists are appended and tables merged key by key, at any depth: a user's
    `catalog.go.streaming.methods = [...]` adds to the shipped methods."""
    for key, value in ext.items():
        if key in _LIST_KEYS or isinstance(value, list):
            target.setdefault(key, []).extend(value)
        elif isinstance(value, dict) and isinstance(target.get(key, {}), dict):
            _merge(target.setdefault(key, {}), value)
        else:
            target[key] = value


def load_catalog(extensions: dict[str, Any] | None = None) -> Catalog:
    """The shipped catalog plus the user's extensions (`catalog.go.sites = [...]`, …):
    lists are appended, tables are merged key by key."""
    data = json.loads(json.dumps(_shipped()))  # deep copy
    for lang, ext in (extensions or {}).items():
        if not isinstance(ext, dict):
            raise CatalogError(f"catalog.{lang} must be a table")
        _merge(data.setdefault(lang, {}), ext)
    # Any catalog file may contribute per-language entries (`[[go.sites]]`,
    # `[[python.env_reads]]` in leases.toml, terminal_writes.toml, …): merged into the
    # language's own lists so every lookup sees them.
    for stem, content in list(data.items()):
        if stem in ("go", "python") or not isinstance(content, dict):
            continue
        for lang in ("go", "python"):
            for key, value in (content.get(lang) or {}).items():
                if isinstance(value, list):
                    data.setdefault(lang, {}).setdefault(key, []).extend(value)
    data["sites_by_lang"] = {lang: data.get(lang, {}).get("sites", []) for lang in ("go", "python")}
    return Catalog(data)  # builds SiteSpecs now: a bad user entry fails before any parse


def sql_now_pattern(functions: Any) -> str:
    """A regex alternation for "the current time" in SQL from the catalog's
    `[sql] now_functions` (`now()`, `current_timestamp`: parentheses optional)."""
    names = "|".join(re.escape(f) for f in sorted(functions, key=len, reverse=True)) or "(?!)"
    return rf"(?:(?:{names})(?:\(\s*\))?)"
