"""Helpers of the Go extractor that need no syntax tree: positions, literals, struct tags,
go.mod, and a per-catalog index of the Go knowledge the extractor asks for."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from typing import Any

from deadline_audit.catalog import Catalog, SiteSpec
from deadline_audit.extract.go_scripts import ScriptKnowledge
from deadline_audit.extract.sql_leases import SqlLeaseKnowledge
from deadline_audit.facts import FileFacts, InputProblem, Span

# --- positions -------------------------------------------------------------------------


class Positions:
    """Byte (row, column) → 1-based (line, code point column). Only lines holding
    non-ASCII bytes pay for a decode; an all-ASCII file takes the fast methods."""

    __slots__ = ("_wide", "at", "span")

    def __init__(self, source: bytes) -> None:
        self._wide: dict[int, bytes] = {}
        if not source.isascii():
            for row, line in enumerate(source.split(b"\n")):
                if not line.isascii():
                    self._wide[row] = line
        if self._wide:
            self.at = self._at_wide
            self.span = self._span_wide
        else:
            self.at = _at_ascii
            self.span = _span_ascii

    def col(self, row: int, bcol: int) -> int:
        line = self._wide.get(row) if self._wide else None
        if line is None:
            return bcol + 1
        return len(line[:bcol].decode("utf-8", "replace")) + 1

    def _at_wide(self, node: Any) -> list[int]:
        r, c = node.start_point
        return [r + 1, self.col(r, c)]

    def _span_wide(self, start: Any, end: Any | None = None) -> Span:
        end = end if end is not None else start
        r, c = start.start_point
        er, ec = end.end_point
        return Span(r + 1, self.col(r, c), er + 1, self.col(er, ec))


def _at_ascii(node: Any) -> list[int]:
    r, c = node.start_point
    return [r + 1, c + 1]


def _span_ascii(start: Any, end: Any | None = None) -> Span:
    r, c = start.start_point
    er, ec = (end if end is not None else start).end_point
    return Span(r + 1, c + 1, er + 1, ec + 1)


def ascii_text(s: str) -> Callable[[Any], str]:
    """The text of a node of an all-ASCII source `s`: byte offsets are str offsets, so one
    decode of the file replaces a decode per node."""
    def text(node: Any) -> str:
        return s[node.start_byte:node.end_byte]
    return text


# --- literals --------------------------------------------------------------------------


def parse_number(text: str) -> float | None:
    s = text.replace("_", "")
    try:
        if s[:2] in ("0x", "0X", "0b", "0B", "0o", "0O"):
            if "." in s or "p" in s or "P" in s:
                return float.fromhex(s) if s[:2] in ("0x", "0X") else None
            return float(int(s, 0))
        if len(s) > 1 and s[0] == "0" and s.isdigit():
            return float(int(s, 8))
        return float(s)
    except ValueError:
        return None


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'", "a": "\a",
            "b": "\b", "f": "\f", "v": "\v"}


def unquote(text: str) -> str:
    """A Go string literal's value (interpreted or raw); lenient on odd escapes."""
    if len(text) >= 2 and text[0] == "`":
        return text[1:-1].replace("\r", "")
    body = text[1:-1] if len(text) >= 2 else text
    if "\\" not in body:
        return body
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            try:
                out.append(chr(int(body[i + 2:i + 2 + width], 16)))
            except ValueError:
                out.append(body[i:i + 2 + width])
            i += 2 + width
        elif nxt.isdigit():
            try:
                out.append(chr(int(body[i + 1:i + 4], 8)))
            except ValueError:
                out.append(body[i:i + 4])
            i += 4
        else:
            out.append(nxt)
            i += 2
    return "".join(out)


def parse_struct_tag(tag: str) -> dict[str, str]:
    """reflect.StructTag conventions: space-separated `key:"value"` pairs; stops at the
    first malformed pair, like StructTag.Lookup."""
    result: dict[str, str] = {}
    i, n = 0, len(tag)
    while i < n:
        while i < n and tag[i] == " ":
            i += 1
        if i >= n:
            break
        j = i
        while j < n and tag[j] > " " and tag[j] not in ':"\x7f':
            j += 1
        if j == i or j + 1 >= n or tag[j] != ":" or tag[j + 1] != '"':
            break
        key = tag[i:j]
        k = j + 1 + 1
        while k < n and tag[k] != '"':
            if tag[k] == "\\":
                k += 1
            k += 1
        if k >= n:
            break
        result.setdefault(key, unquote(tag[j + 1:k + 1]))
        i = k + 1
    return result


_VERSION_SUFFIX = re.compile(r"^v[0-9]+$")


def selector_parts(node: Any, clean: bool, text: Callable[[Any], str]) -> tuple[Any, str]:
    """`x.f` -> (operand node, field name). In an error-free file the fields sit at fixed
    child positions, which is cheaper than looking them up by name."""
    if clean:
        children = node.named_children
        return children[0], text(children[-1])
    return node.child_by_field_name("operand"), text(node.child_by_field_name("field"))


def default_alias(import_path: str) -> str:
    parts = import_path.split("/")
    last = parts[-1]
    if _VERSION_SUFFIX.match(last) and len(parts) > 1:
        last = parts[-2]
    if last.startswith("gopkg.in") or "." in last:
        # gopkg.in/yaml.v3 → yaml; go-foo.v1 → go-foo
        last = last.split(".")[0]
    # Go convention: repository go-redis holds package redis, openai-go package openai
    if last.startswith("go-") and len(last) > 3:
        last = last[3:]
    elif last.endswith("-go") and len(last) > 3:
        last = last[:-3]
    return last.replace("-", "_") if last else import_path


CONFIG_FILE_RE = re.compile(r"^[\w./-]+\.(?:ya?ml|toml|json)$")
# A string literal that may name a config key or an env var (DA501: "code names it").
KEY_LITERAL_RE = re.compile(r"^[A-Za-z_][\w.-]{1,99}$")
# `"WORKER_TIMEOUT=" + v`, `"WORKER_TIMEOUT=%s"`: an env var the code sets for a child process
ENV_ASSIGN_LITERAL_RE = re.compile(r"^([A-Z][A-Z0-9_]{2,99})=")


def named_by_literal(value: str) -> tuple[str, str] | None:
    """What a string literal names for DA501, in any language: ("file", a config file
    path), ("key", a config key or env var name), or None. Shared by the Go and Python
    extractors and by the names-only reading of test code (names.py)."""
    if len(value) < 200 and CONFIG_FILE_RE.match(value):
        return "file", value
    if KEY_LITERAL_RE.match(value):
        return "key", value
    m = ENV_ASSIGN_LITERAL_RE.match(value)
    return ("key", m.group(1)) if m is not None else None


# --- catalog index ---------------------------------------------------------------------


class _Patterns:
    """Could a name match any of these fnmatch patterns? One set lookup and one regex
    instead of an fnmatch per pattern: most names a file calls match none, and only those
    that may are looked up in the catalog itself."""

    def __init__(self, patterns: list[str]) -> None:
        self.exact = {p for p in patterns if not any(ch in p for ch in "*?[")}
        globs = [fnmatch.translate(p) for p in patterns if p not in self.exact]
        self.glob = re.compile("|".join(globs)) if globs else None

    def may_match(self, name: str) -> bool:
        return name in self.exact or (self.glob is not None and self.glob.match(name) is not None)


def _funcs(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or ())


class GoCatalog:
    """Memoized lookups of the Go catalog (fnmatch per call would dominate)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.scripts = ScriptKnowledge(catalog)  # Redis Lua scripts (go_scripts.py)
        self.sql = SqlLeaseKnowledge(catalog, "go")  # row leases in SQL (sql_leases.py)
        self.constants = {k: float(v) for k, v in catalog.constants("go").items()}
        self.field_types = catalog.field_site_types("go")
        self.flag_vars = frozenset(catalog.table("go", "flags").get("vars", ()))
        viper = catalog.table("go", "viper")
        # library methods kept as call facts (`v.SetDefault(key, d)`: config_tags.py reads them)
        self.kept_methods = frozenset(viper.get("defaults", ())) | frozenset(viper.get("env_bindings", ()))
        # calls whose second result is the context they derive (`g, gctx := errgroup.WithContext(ctx)`)
        self.second_result_contexts = frozenset(
            catalog.file("terminal_writes").get("go", {}).get("second_result_contexts", ()))
        self._field: dict[tuple[str, str], list[SiteSpec]] = {}
        self._call: dict[str, list[SiteSpec]] = {}
        self._env: dict[str, dict[str, Any] | None] = {}
        self._conv: dict[str, dict[str, Any] | None] = {}
        self._results: dict[str, str] = {str(k): str(v) for k, v in catalog.table("go", "results").items()}
        self._result: dict[str, str | None] = {}
        self._call_funcs = _Patterns([f for s in catalog.sites if s.lang == "go" and s.kind == "call" for f in s.funcs])
        self._env_funcs = _Patterns([f for e in catalog.entries("go", "env_reads") for f in _funcs(e.get("func"))])
        self._conv_funcs = _Patterns([f for e in catalog.entries("go", "conversions") for f in _funcs(e.get("func"))])
        # method conversions ("time.Duration.Seconds"): method name → (receiver type, entry)
        self.method_convs: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for entry in catalog.entries("go", "conversions"):
            funcs = entry.get("func") or []
            for f in [funcs] if isinstance(funcs, str) else funcs:
                if any(ch in f for ch in "*?["):
                    continue
                head, _, meth = f.rpartition(".")
                if "." in head.rsplit("/", 1)[-1] and meth:
                    self.method_convs.setdefault(meth, []).append((head, entry))
        words: list[str] = []
        for group in catalog.data.get("vocabulary", {}).get("vocabulary", {}).values():
            words.extend(w for w in group if isinstance(w, str))
        self.words = tuple(dict.fromkeys(words))
        self.words_lower = tuple((w, w.lower().encode()) for w in self.words)

    def field_sites(self, type_name: str, field_name: str) -> list[SiteSpec]:
        key = (type_name, field_name)
        got = self._field.get(key)
        if got is None:
            got = self._field[key] = self.catalog.field_sites("go", type_name, field_name)
        return got

    def implicit_fields(self, type_name: str) -> list[SiteSpec]:
        return [s for s in self.catalog.sites if s.lang == "go" and s.kind == "field"
                and s.type == type_name and s.implicit_default is not None]

    def result_type(self, qualified: str) -> str | None:
        """The type an external function or method returns, from the catalog's `results`
        ("pkg.Func" or "pkg.Type.Method", `v*` globs allowed -> a type of the same package)."""
        if qualified in self._result:
            return self._result[qualified]
        name = self._results.get(qualified)
        if name is None:
            name = next((v for k, v in self._results.items() if any(c in k for c in "*?[")
                         and fnmatch.fnmatchcase(qualified, k)), None)
        found = None
        if name is not None:
            dot = qualified.find(".", qualified.rfind("/") + 1)
            package = qualified[:dot] if dot > 0 else qualified
            found = name if "." in name.rsplit("/", 1)[-1] else f"{package}.{name}"
        self._result[qualified] = found
        return found

    def call_sites(self, qualified: str) -> list[SiteSpec]:
        got = self._call.get(qualified)
        if got is None:
            got = self._call[qualified] = (self.catalog.call_sites("go", qualified)
                                           if self._call_funcs.may_match(qualified) else [])
        return got

    def env_read(self, qualified: str) -> dict[str, Any] | None:
        if qualified not in self._env:
            self._env[qualified] = (self.catalog.env_read("go", qualified)
                                    if self._env_funcs.may_match(qualified) else None)
        return self._env[qualified]

    def conversion(self, qualified: str) -> dict[str, Any] | None:
        if qualified not in self._conv:
            self._conv[qualified] = (self.catalog.conversion("go", qualified)
                                     if self._conv_funcs.may_match(qualified) else None)
        return self._conv[qualified]


_INDEX: dict[int, tuple[Catalog, GoCatalog]] = {}


def go_catalog(catalog: Catalog) -> GoCatalog:
    hit = _INDEX.get(id(catalog))
    if hit is not None and hit[0] is catalog:
        return hit[1]
    index = GoCatalog(catalog)
    if len(_INDEX) > 8:
        _INDEX.clear()
    _INDEX[id(catalog)] = (catalog, index)
    return index


# --- go.mod ----------------------------------------------------------------------------

_GOMOD_DIRECTIVES = {"module", "go", "toolchain", "require", "exclude", "replace", "retract",
                     "godebug", "tool", "ignore"}


def _strip_comment(line: str) -> str:
    # `//` starts a comment unless inside a quoted string
    in_q = None
    for i, ch in enumerate(line):
        if in_q:
            if ch == in_q:
                in_q = None
        elif ch in "\"`":
            in_q = ch
        elif ch == "/" and line[i:i + 2] == "//":
            return line[:i]
    return line


def extract_gomod(path: str, text: str) -> FileFacts:
    lines = text.splitlines()
    facts = FileFacts(path=path, kind="gomod", lines=len(lines))
    block: str | None = None
    block_line = 0
    for no, raw in enumerate(lines, 1):
        line = _strip_comment(raw).strip()
        if not line:
            continue
        if block is not None:
            if line == ")":
                block = None
            continue
        words = line.split()
        directive = words[0]
        if directive not in _GOMOD_DIRECTIVES:
            facts.problems.append(InputProblem(f"go.mod: unknown directive {directive!r}", no, 1))
            continue
        rest = words[1:]
        if rest and rest[0] == "(":
            if len(rest) == 1:
                block, block_line = directive, no
            elif rest[-1] != ")":
                facts.problems.append(InputProblem(f"go.mod: malformed {directive} block", no, 1))
            continue
        if not rest:
            facts.problems.append(InputProblem(f"go.mod: {directive} directive without argument", no, 1))
            continue
        if directive == "module":
            if len(rest) != 1:
                facts.problems.append(InputProblem("go.mod: malformed module directive", no, 1))
                continue
            facts.module = unquote(rest[0]) if rest[0][:1] in "\"`" else rest[0]
        elif directive == "go":
            if len(rest) != 1 or not re.fullmatch(r"[0-9]+(\.[0-9]+){0,2}([a-z]+[0-9]*)?", rest[0]):
                facts.problems.append(InputProblem(f"go.mod: invalid go version {' '.join(rest)!r}", no, 1))
                continue
            facts.go_version = rest[0]
    if block is not None:
        facts.problems.append(InputProblem(f"go.mod: unterminated {block} block", block_line, 1))
    if facts.module is None:
        facts.problems.append(InputProblem("go.mod: no module directive", None, None))
    return facts
