"""What the Python extractor needs from the catalog, indexed once per catalog.

All API knowledge comes from `rules/catalog/*.toml` through `Catalog`; this module only
builds fast lookups (memoised per qualified name) and the byte-level prefilter.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from deadline_audit.catalog import Catalog, SiteSpec
from deadline_audit.extract.sql_leases import SqlLeaseKnowledge

LANG = "python"
# Site roles whose value is a period the code waits for (lease detection, SPEC §4).
TIMER_ROLES = frozenset({"timer", "ticker", "sleep", "lease"})
# Words that make a file worth parsing even when no catalog entry names them.
BASE_WORDS = ("timeout", "deadline", "ttl", "lease", "heartbeat", "getenv", "environ",
              "settings", "timedelta", "sleep", "interval")
_GENERIC_PARTS = frozenset({"get", "__getitem__", "os"})


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


@dataclass
class CallKnowledge:
    """What the catalog says about one qualified callee."""

    sites: list[SiteSpec]
    env_read: dict[str, Any] | None
    conversion: dict[str, Any] | None
    timedelta: bool

    @property
    def known(self) -> bool:
        return bool(self.sites or self.env_read or self.conversion or self.timedelta)


@dataclass
class PyIndex:
    catalog: Catalog
    external_roots: frozenset[str]
    settings_bases: frozenset[str]
    field_calls: dict[str, tuple[str, ...]]  # catalog [fields]: calls, default_keywords, factory_keywords
    timedelta_funcs: tuple[str, ...]
    timedelta_keywords: dict[str, float]
    timedelta_positional: tuple[str, ...]
    context_manager_decorators: frozenset[str]
    stub_decorators: frozenset[str]  # catalog [stubs]: typing-only definitions (py_stubs.py)
    vocabulary: tuple[str, ...]
    method_names: frozenset[str]  # last attribute of every method-site chain
    method_conversions: dict[str, dict[str, Any]]  # `td.total_seconds()` by method name
    prefilter: tuple[re.Pattern[bytes], ...]  # over the lowercased source: use `may_contribute`
    sql: Any = None  # SqlLeaseKnowledge: row leases in SQL statements (sql_leases.py)
    spread: dict[str, int] = field(default_factory=dict)  # catalog [executors.spread]: fn argument index
    spread_targets: dict[str, str] = field(default_factory=dict)  # catalog [executors.targets]: fn keyword
    _calls: dict[str, CallKnowledge] = field(default_factory=dict)
    _methods: dict[str, list[SiteSpec]] = field(default_factory=dict)

    def may_contribute(self, source: bytes) -> bool:
        lowered = source.lower()
        return any(p.search(lowered) is not None for p in self.prefilter)

    def call(self, qualified: str) -> CallKnowledge:
        known = self._calls.get(qualified)
        if known is None:
            cat = self.catalog
            known = CallKnowledge(
                sites=cat.call_sites(LANG, qualified),
                env_read=cat.env_read(LANG, qualified),
                conversion=cat.conversion(LANG, qualified),
                timedelta=any(fnmatchcase(qualified, p) for p in self.timedelta_funcs),
            )
            self._calls[qualified] = known
        return known

    def method_sites(self, chain: str) -> list[SiteSpec]:
        last = chain.rsplit(".", 1)[-1]
        if last not in self.method_names:
            return []
        sites = self._methods.get(chain)
        if sites is None:
            sites = self.catalog.method_sites(LANG, chain)
            self._methods[chain] = sites
        return sites

    def is_external(self, qualified: str) -> bool:
        return qualified.split(".", 1)[0] in self.external_roots


_INDEXES: dict[int, PyIndex] = {}


def index_for(catalog: Catalog) -> PyIndex:
    cached = _INDEXES.get(id(catalog))
    if cached is not None and cached.catalog is catalog:
        return cached
    idx = _build(catalog)
    if len(_INDEXES) > 8:
        _INDEXES.clear()
    _INDEXES[id(catalog)] = idx
    return idx


def _build(catalog: Catalog) -> PyIndex:
    sites = [s for s in catalog.sites if s.lang == LANG]
    env_reads = catalog.entries(LANG, "env_reads")
    conversions = catalog.entries(LANG, "conversions")
    td = catalog.table(LANG, "timedelta")
    settings = catalog.table(LANG, "settings")
    td_funcs = tuple(_as_list(td.get("func")))
    settings_bases = frozenset(_as_list(settings.get("bases")))

    qualified_names: list[str] = []
    for s in sites:
        qualified_names.extend(s.funcs)
    for entry in env_reads + conversions:
        qualified_names.extend(_as_list(entry.get("func")))
    qualified_names.extend(td_funcs)
    qualified_names.extend(settings_bases)
    roots = {q.split(".", 1)[0] for q in qualified_names if "." in q}
    roots |= set(sys.stdlib_module_names)

    method_conversions: dict[str, dict[str, Any]] = {}
    for entry in conversions:
        for func in _as_list(entry.get("func")):
            if "." in func:
                method_conversions[func.rsplit(".", 1)[1]] = entry

    vocabulary: list[str] = []
    for words in catalog.data.get("vocabulary", {}).get("vocabulary", {}).values():
        for word in words:
            if word.lower() not in vocabulary:
                vocabulary.append(word.lower())

    words: set[str] = set(BASE_WORDS) | set(vocabulary)
    packages: set[str] = set()  # matched in an import statement only (below)
    keywords: set[str] = set()  # matched as `kw=` only: `ex`/`px` as substrings pass every file
    for s in sites:
        if s.funcs:
            # a call of a library API needs its package imported in the file (`import httpx`,
            # `from aiohttp import ClientTimeout`): that import is the signal, not a keyword
            # such as `total=`, a class name such as `Client`, nor the package's name in a
            # docstring or a URL (`platform.openai.com`)
            for f in s.funcs:
                word = _package_word(f)
                (packages if word == f.split(".", 1)[0] else words).add(word)
            continue
        if s.kw:
            keywords.add(s.kw)
        # a method name matters on its own only when the site can exist without its keyword
        if s.kw is None or s.arg is not None or s.implicit_default is not None:
            words.update(m.rsplit(".", 1)[-1] for m in s.methods)
    for entry in env_reads:
        for func in _as_list(entry.get("func")):
            root = func.split(".", 1)[0]
            if "." in func and root not in sys.stdlib_module_names and _package_word(func) == root:
                packages.add(root)  # a library's reader (`environ.Env.int`): its import is the signal
                continue
            parts = [p for p in func.split(".") if p not in _GENERIC_PARTS and not p.startswith("__")]
            if parts:
                words.add(parts[-1])
    words.update(f.rsplit(".", 1)[-1] for f in td_funcs)
    words.update(b.rsplit(".", 1)[-1] for b in settings_bases)
    for name in method_conversions:
        words.add(name)
    # rule families name what makes a file worth parsing beyond timeouts (`prefilter.python`
    # in any catalog file: anyio/trio scopes, shields, streaming responses, …)
    for content in catalog.data.values():
        if isinstance(content, dict):
            words.update((content.get("prefilter") or {}).get("python", ()))
    words.discard("")
    # matched case-insensitively by lowercasing the words here and the source in
    # `may_contribute` (ASCII folding both ways, as re.IGNORECASE on bytes): a plain
    # alternation searches ~3× faster than the same one under IGNORECASE
    # three searches, cheapest first: one alternation mixing literals with anchored
    # branches (`\b`, `^`) loses `re`'s fast scan for all of them (~3× slower in all)
    patterns = [_trie({w.encode().lower() for w in words})]
    if keywords:
        patterns.append(rb"\b" + _trie({k.encode().lower() for k in keywords}, substrings=False) + rb"\s*=(?!=)")
    packages -= words
    if packages:  # `import a, httpx as h` / `from openai.types import X`, at a line's start
        names = b"|".join(re.escape(p.encode().lower()) for p in sorted(packages, key=len, reverse=True))
        patterns.append(rb"(?m:^[ \t]*(?:from|import)[ \t]+(?:[\w.]+(?:[ \t]+as[ \t]+\w+)?[ \t]*,[ \t]*)*(?:"
                        + names + rb")\b)")
    return PyIndex(
        catalog=catalog,
        external_roots=frozenset(roots),
        settings_bases=settings_bases,
        field_calls={k: tuple(v) for k, v in catalog.file("python").get("fields", {}).items()},
        timedelta_funcs=td_funcs,
        timedelta_keywords={k: float(v) for k, v in dict(td.get("keywords", {})).items()},
        timedelta_positional=tuple(td.get("positional", ())),
        context_manager_decorators=frozenset(catalog.file("python").get("context_managers", {}).get("decorators", ())),
        stub_decorators=frozenset(catalog.file("python").get("stubs", {}).get("decorators", ())),
        vocabulary=tuple(vocabulary),
        method_names=frozenset(m.rsplit(".", 1)[-1] for s in sites for m in s.methods),
        method_conversions=method_conversions,
        prefilter=tuple(re.compile(p) for p in patterns),
        sql=SqlLeaseKnowledge(catalog, "python"),
        spread=dict(catalog.table("python", "executors").get("spread") or {}),
        spread_targets=dict(catalog.table("python", "executors").get("targets") or {}),
    )


_GENERIC_ROOTS = {"time", "os", "sys", "re", "io", "json"}


def _trie(words: set[bytes], *, substrings: bool = True) -> bytes:
    """One regex for "any of these words", factored by common prefix: `re` tries every
    branch of a flat alternation at every position, a trie only the branches that share
    the next byte. Searched as substrings, a word that contains another adds nothing, so
    only the shortest remain; as whole words (`substrings=False`), each stays, and a word
    may end where a longer one goes on."""
    kept = [w for w in words if not substrings or not any(o != w and o in w for o in words)]
    root: dict = {}
    for word in kept:
        node = root
        for byte in word:
            node = node.setdefault(byte, {})
        node[None] = True  # a word ends here

    def emit(node: dict) -> bytes:
        branches = [re.escape(bytes([b])) + emit(child) for b, child in sorted(
            (kv for kv in node.items() if kv[0] is not None), key=lambda kv: kv[0])]
        if not branches:
            return b""
        body = branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")"
        return b"(?:" + body + b")?" if None in node else body

    return emit(root)


def _package_word(qualified: str) -> str:
    """What a file calling `qualified` must contain: its package, unless the package name
    is a common substring (`time.sleep` -> `sleep`)."""
    root = qualified.split(".", 1)[0]
    if "." not in qualified or root in _GENERIC_ROOTS or len(root) < 4:
        return qualified.rsplit(".", 1)[-1]
    return root
