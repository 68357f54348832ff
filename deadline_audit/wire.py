"""Wire links between components, and the clamps and fallbacks that receive them
(SPEC §2 sites `ceiling`, `fallback`, `wire_field`; edges `clamps`, `falls_back`,
`sent_as` / `received_as`; §4 "DA401/DA402/DA403 and components").

Read from the facts and the graph, never from names of the analysed project:

- **Schemas**: a Go struct with JSON tags (key = the tag's name), or a Python class with
  annotated fields (pydantic model, dataclass, TypedDict; key = the field's name).
- **Payloads**: a Python dict literal with string keys, a keyword call of a Python class,
  or a Go composite literal of a JSON-tagged struct. A payload is linked to a schema when
  at least two of its keys are the schema's keys, and at least half of them are (a log
  dict sharing one key is not a payload). Payloads in test files are not sends.
- **Clamps** (`ceiling`): `min(x, MAX)` (Go builtin, Python builtin, `math.Min`),
  `if x > MAX { x = MAX }` / `return MAX`, `x = MAX if x > MAX else x`. A clamp whose bound
  is a parameter of its function is a helper: each call of it is a clamp, evaluated with
  the call's arguments.
- **Fallbacks** (`fallback`): `if x <= 0 { x = D }` / `return D`, `if not x: x = D`,
  `x or D`, `cmp.Or(x, D)`, `getattr(o, "k", D)`; each with its trigger: Go fallbacks
  fire on the zero value (a missing field decodes as zero), `or` / `not x` on any falsy
  value, `getattr` only on absence.

This module finds them (`analyse`, memoised on the graph); `wire_eval.py` evaluates values
across a link for the checks, `wire_graph.py` adds the result to the exported graph.

Decoding is modelled on the receiving side: a JSON number sent into a Go `time.Duration`
field is nanoseconds (`json_decode_ns`), an integer field keeps the number and the
receiver's own arithmetic (`time.Duration(n) * time.Second`) gives the unit.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Iterator

from deadline_audit.config_documents import key_read
from deadline_audit.facts import Binding, CallFact, Expr, FunctionFact, Span
from deadline_audit.findings import Location
from deadline_audit.graph import Ctx, TimeoutGraph, _walk


_GO_NUMBER_TYPES = {"int", "int8", "int16", "int32", "int64", "uint", "uint16", "uint32", "uint64",
                    "float32", "float64"}


_GO_DURATION = "time.Duration"


_BOUND_WORDS = re.compile(r"max|limit|ceil|cap|upper|bound", re.I)




_UNIT_SUFFIX = [  # name suffix -> unit, checked on lower-cased names without separators kept
    (re.compile(r"(_|\b|[a-z])(ms|millis|milliseconds?)$", re.I), "ms"),
    (re.compile(r"(_|\b|[a-z])(s|secs?|seconds?)$", re.I), "s"),
]


@dataclass
class SchemaField:
    key: str
    sym: str
    type: str | None
    location: Location
    omitempty: bool = False
    duration: bool = False  # carries a duration (type, conversion, or name; catalog wire.toml)


@dataclass
class Schema:
    type: str  # qualified type (Go) / py:<module>.<Class>
    lang: str
    path: str
    fields: dict[str, SchemaField]


@dataclass
class Payload:
    lang: str
    path: str
    location: Location
    function: str | None
    keys: dict[str, Expr | None]  # key -> the value sent (None: a Go field left out: its zero value)
    all_keys: set[str]  # the payload's shape: for a typed payload, every key of its type
    type: str | None = None
    omitted: set[str] = field(default_factory=set)  # keys not sent at all (omitempty / absent from a dict)
    defaults: dict[str, Expr] = field(default_factory=dict)  # keys a model call leaves to the model's default


@dataclass
class Link:
    payload: Payload
    schema: Schema
    common: set[str]
    configured: str | None = None  # "links[0] in pyproject.toml": an explicit link


@dataclass
class Clamp:
    function: str
    path: str
    location: Location  # the clamp itself (the helper's, for a helper call)
    subject: Expr
    bound: Expr
    form: str
    call: tuple[CallFact, str] | None = None  # helper clamp: the call that instantiates it
    fed_by: frozenset = frozenset()  # symbols that feed the subject (schema fields among them)

    @property
    def at(self) -> Location:
        if self.call is not None:
            c, p = self.call
            return Location(p, c.span.line, c.span.column)
        return self.location


@dataclass
class Fallback:
    function: str
    path: str
    location: Location
    subject: Expr
    default: Expr
    trigger: str  # zero | falsy | none | absent
    form: str
    fed_by: frozenset = frozenset()


@dataclass
class Origin:
    kind: str  # env | cfg | lit | sym
    location: Location
    label: str
    seconds: float | None
    node: str


@dataclass
class Wire:
    schemas: list[Schema]
    payloads: list[Payload]
    links: list[Link]
    clamps: list[Clamp]
    fallbacks: list[Fallback]
    problems: list[str] = field(default_factory=list)  # configured links that name nothing


def analyse(graph: TimeoutGraph) -> Wire:
    key = ("_wire",)
    if key not in graph._memo:
        graph._memo[key] = _Builder(graph).build()
    return graph._memo[key]


def unit_of(graph: TimeoutGraph, path: str) -> str:
    return "ns" if graph.lang.get(path) == "go" else "s"


def component_of(graph: TimeoutGraph, path: str) -> str:
    """The configured component whose globs match the file (wire_config.py), else the Go
    module (nearest go.mod) or Python project root (nearest pyproject.toml / setup.py /
    setup.cfg) of a file; else its top-level folder."""
    configured = configured_component(graph, path)
    if configured is not None:
        return configured
    roots = graph._memo.get(("_component_roots",))
    if roots is None:
        roots = set()
        for p, f in graph.files.items():
            if f.kind == "gomod" or PurePosixPath(p).name in ("pyproject.toml", "setup.py", "setup.cfg"):
                roots.add(str(PurePosixPath(p).parent))
        graph._memo[("_component_roots",)] = roots
    parent = PurePosixPath(path).parent
    for candidate in (parent, *parent.parents):
        if str(candidate) in roots:
            return str(candidate)
    parts = PurePosixPath(path).parts
    return parts[0] if len(parts) > 1 else "."


def configured_component(graph: TimeoutGraph, path: str) -> str | None:
    cfg = getattr(graph, "wire_config", None)
    return cfg.component(path) if cfg is not None else None


def component_name(graph: TimeoutGraph, path: str) -> str:
    """A component as messages name it: the configured name, else the folder's name."""
    return PurePosixPath(component_of(graph, path)).name or "."


_KINDS = frozenset({"op", "call", "or", "item", "dict", "obj", "conv"})


_LEAVES = frozenset({"num", "str", "none", "ref", "fnref", "unknown"})


class _Builder:
    def __init__(self, graph: TimeoutGraph) -> None:
        self.g = graph
        self.found: dict[str, list[tuple[str, str | None, Expr, Span]]] = {k: [] for k in _KINDS}
        self._method_spans: dict[str, list[tuple[int, int]]] | None = None  # class -> its methods' lines
        self._literal_locals: dict[tuple[str, int, int], str] | None = None  # payload literal -> the local it binds
        self._literal_ends: dict[str, tuple[int, int]] = {}  # that local -> where its binding statement ends
        self._field_binds_in: dict[str, list[tuple[Binding, str]]] | None = None  # Go field assignments by function
        self._scan()

    def _scan(self) -> None:
        """One walk over every expression of the facts, keeping the nodes the passes read.
        Test code is left out: no pass reads it (a test's payload, clamp or key read says
        nothing about the wiring in production), and it is often half of a tree's lines."""
        found = self.found
        kinds = _KINDS
        tests = {p for p in self.g.files if self.g.tests.holds(p)}
        todo: list[tuple[str, str | None, Any, Span]] = []
        for binds in self.g.bindings.values():
            for b, path in binds:
                if b.expr.get("k") not in _LEAVES and path not in tests:
                    todo.append((path, b.function, b.expr, b.span))
        for fn_sym, (fn, path) in self.g.functions.items():
            if fn.returns and path not in tests:
                todo.append((path, fn_sym, fn.returns, fn.span))
        for calls in self.g.calls_in.values():
            for call, path in calls:
                if (call.args or call.kw) and path not in tests:
                    todo.append((path, call.function, [call.args, call.kw], call.span))
        for site, path in self.g.sites:
            if site.value and path not in tests:
                todo.append((path, site.function, site.value, site.span))
        for fn_sym, (fn, path) in self.g.functions.items():
            for m in fn.markers:
                if m.get("m") == "payload":  # a Go map literal (go_marks_wire)
                    found["dict"].append((path, fn_sym, {"k": "dict", "items": m.get("items") or [],
                                                         "at": [m.get("line", 1), m.get("col", 1)]}, fn.span))
        for path, function, expr, span in todo:
            stack = [expr]
            while stack:
                e = stack.pop()
                cls = e.__class__
                if cls is dict:
                    k = e.get("k")  # a call's keywords are a dict too, and `k=` may be one of them
                    if k.__class__ is str and k in kinds:
                        found[k].append((path, function, e, span))
                    for v in e.values():
                        if v.__class__ is dict or v.__class__ is list:
                            stack.append(v)
                elif cls is list:
                    stack.extend(v for v in e if v.__class__ is dict or v.__class__ is list)

    def nodes(self, *kinds: str) -> Iterator[tuple[str, str | None, Expr, Span]]:
        for k in kinds:
            yield from self.found[k]

    def build(self) -> Wire:
        clamps, fallbacks = self.clamps_and_fallbacks()
        schemas = self.schemas()
        typed = list(schemas)
        schemas += self.key_readers()
        fed = {sym for c in clamps for sym in c.fed_by} | {sym for f in fallbacks for sym in f.fed_by}
        words = tuple(self.g.catalog.file("wire").get("wire", {}).get("duration_words", ()))
        scaled = set()
        for path, _, sub, _ in self.nodes("conv"):
            if sub.get("t") == "go_duration" and self.g.lang.get(path) == "go":
                sym = self.g.resolve_sym(sub.get("x"), Ctx(path))
                if sym:
                    scaled.add(sym)
        for schema in schemas:
            for f in schema.fields.values():
                f.duration = (f.type == _GO_DURATION or f.sym in scaled
                              or is_duration_name(f.key, words) or is_duration_name(f.sym.rsplit(".", 1)[-1], words))
        relevant = [s for s in schemas if any(f.duration or f.sym in fed for f in s.fields.values())]
        configured = self.configured_receivers(schemas)
        wanted = {k for s in relevant for k in s.fields}
        for link, receivers in configured:
            wanted |= {k for s in receivers for k in s.fields} | set(link["field-map"]) | set(link["keys"])
        payloads = self.payloads(typed, wanted)
        links = self.links(payloads, relevant, [s for s in schemas if s not in relevant])
        problems: list[str] = []
        links += self.configured_links(payloads, configured, links, problems)
        return Wire(schemas, payloads, links, clamps, fallbacks, problems)

    # -- configured links ---------------------------------------------------------------
    def configured_receivers(self, schemas: list[Schema]) -> list[tuple[dict, list[Schema]]]:
        cfg = getattr(self.g, "wire_config", None)
        if cfg is None:
            return []
        return [(link, [s for s in schemas if _names_schema(s, link["receiver"])]) for link in cfg.links]

    def configured_links(self, payloads: list[Payload], configured: list[tuple[dict, list[Schema]]],
                         automatic: list[Link], problems: list[str]) -> list[Link]:
        """`[[links]]` from configuration: every payload of the sender (instances of a type,
        payloads built in a function, or payloads with `keys` in files matching a glob)
        is a send to the receiver, its keys renamed by `field-map`."""
        cfg = self.g.wire_config
        made = {(id(link.payload), id(link.schema)) for link in automatic}
        out = []
        for i, (entry, receivers) in enumerate(configured):
            label = f"links[{i}] in {cfg.source}"
            files = cfg.sender_files(entry)
            senders = [p for p in payloads if not self.g.tests.holds(p.path) and (
                (cfg.matches_files(files, p.path) and set(entry["keys"]) <= set(p.keys)) if files is not None
                else _names_sender(p, entry["sender"]))]
            if not receivers:
                problems.append(f"{label}: receiver `{entry['receiver']}` names no struct, model or body reader")
            if not senders:
                problems.append(f"{label}: sender `{entry['sender']}` names no payload")
            for p in senders:
                sent = _renamed(p, entry["field-map"])
                for s in receivers:
                    common = sent.all_keys & set(s.fields)
                    if common and (id(p), id(s)) not in made:
                        made.add((id(p), id(s)))
                        out.append(Link(sent, s, common, label))
        return out

    # -- schemas ------------------------------------------------------------------------
    def schemas(self) -> list[Schema]:
        by_type: dict[str, Schema] = {}
        decls = self.g.decls
        for sym, decl in decls.items():
            if decl.kind != "field":
                continue
            if sym.startswith("sym:go:"):
                tag = decl.tags.get("json") if decl.tags else None
                if not tag:
                    continue
                key, *opts = tag.split(",")
                if key in ("", "-"):
                    continue
                owner = sym.rsplit(".", 1)[0]
                path = self.g.decl_path[sym]
                type_name = owner[len("sym:go:"):]
                schema = by_type.setdefault(type_name, Schema(type_name, "go", path, {}))
                schema.fields[key] = SchemaField(key, sym, decl.type, Location(path, decl.span.line, decl.span.column),
                                                 "omitempty" in opts)
            elif sym.startswith("sym:py:"):
                owner, name = sym.rsplit(".", 1)
                owner_decl = decls.get(owner)
                if owner_decl is None or owner_decl.kind != "class" or name.startswith("_"):
                    continue
                if self._in_method(owner, decl):
                    continue  # `self.x = …` is an object's state; a message declares its fields
                path = self.g.decl_path[sym]
                type_name = "py:" + owner[len("sym:py:"):]
                schema = by_type.setdefault(type_name, Schema(type_name, "python", path, {}))
                schema.fields[name] = SchemaField(name, sym, decl.type, Location(path, decl.span.line, decl.span.column))
        return [s for s in by_type.values() if len(s.fields) >= 2]

    def _keys_added(self, path: str, function: str, at: list[int]) -> dict[str, Expr] | None:
        """Keys a payload literal bound to a local gets after it, in the same function:
        `body["timeout_s"] = t` (Python dicts, Go maps); in Python `body.update(timeout_s=t)`
        / `body.update({…})` and `body.setdefault("timeout_s", t)`; for a Go struct literal
        the field's name (`task.DeadlineSeconds = t`). Sent when the code runs that far: a
        payload that may carry the key is not one that leaves it out. None: an update whose
        keys cannot be read (`body.update(extra)`)."""
        if self._literal_locals is None:
            self._literal_locals = {}
            for binds in self.g.bindings.values():
                for b, p in binds:
                    spot = b.expr.get("at") if b.function else None
                    if spot:
                        self._literal_locals[(p, spot[0], spot[1])] = b.sym
                        self._literal_ends[b.sym] = (b.span.end_line, b.span.end_column)
        sym = self._literal_locals.get((path, at[0], at[1]))
        fn = self.g.functions.get(function, (None,))[0]
        if sym is None or fn is None:
            return {}
        added: dict[str, Expr] = {}
        name = sym.rsplit(".", 1)[-1]
        for m in fn.markers:
            if m.get("m") == "key_set" and m.get("name") == name and m.get("line", 0) >= at[0]:
                added.setdefault(m["key"], {"k": "unknown", "text": f"{name}[{m['key']!r}]"})
        if self.g.lang.get(path) == "go":
            return added
        spec = self.g.catalog.file("wire").get("wire", {})
        merges, defaults = set(spec.get("dict_merges", ())), set(spec.get("dict_defaults", ()))
        for call, _ in self.g.calls_in.get(function, ()):
            callee = call.callee
            if callee.get("k") != "method" or call.span.line < at[0] or (callee.get("x") or {}).get("sym") != sym:
                continue
            if callee.get("name") in merges:
                added.update({k: v for k, v in call.kw.items() if k not in added})
                if call.args:
                    arg = call.args[0]
                    if arg.get("k") != "dict" or arg.get("open"):
                        return None
                    for item in arg.get("items", ()):
                        if isinstance(item, list) and len(item) == 2:
                            added.setdefault(item[0], item[1])
            elif callee.get("name") in defaults and call.args and call.args[0].get("k") == "str":
                added.setdefault(call.args[0]["v"], call.args[1] if len(call.args) > 1 else {"k": "none"})
        return added

    def _fields_set_after(self, path: str, function: str | None, at: list[int], type_name: str) -> dict[str, Expr]:
        """Go: fields of `type_name` assigned in the function after the statement that binds
        its literal at `at` to a local (`task.DeadlineSeconds = t`), by field name."""
        if function is None:
            return {}
        self._keys_added(path, function, at)  # indexes the literals bound to locals
        bound = self._literal_locals.get((path, at[0], at[1])) if self._literal_locals is not None else None
        if bound is None:
            return {}  # `post(ctx, vaultTask{…})`: sent as written
        if self._field_binds_in is None:
            self._field_binds_in = defaultdict(list)
            for binds in self.g.bindings.values():
                for b, p in binds:
                    decl = self.g.decls.get(b.sym)
                    if b.function and decl is not None and decl.kind == "field" and b.sym.startswith("sym:go:"):
                        self._field_binds_in[b.function].append((b, p))
        prefix = "sym:go:" + type_name + "."
        after = self._literal_ends[bound]
        found: dict[str, Expr] = {}
        for b, p in self._field_binds_in.get(function, ()):
            if p == path and b.sym.startswith(prefix) and (b.span.line, b.span.column) > after:
                found.setdefault(b.sym[len(prefix):], b.expr)
        return found

    def _in_method(self, owner: str, decl) -> bool:
        """A field assigned in a method of its class (`self.timeout = None` in `__init__`),
        not declared in the class body as dataclasses, pydantic models, TypedDicts and attrs
        classes declare the fields of a message."""
        if self._method_spans is None:
            self._method_spans = defaultdict(list)
            for sym, (fn, _) in self.g.functions.items():
                if sym.startswith("sym:py:"):
                    self._method_spans[sym.rsplit(".", 1)[0]].append((fn.span.line, fn.span.end_line or fn.span.line))
        line = decl.span.line
        return any(start <= line <= end for start, end in self._method_spans.get(owner, ()))

    def key_readers(self) -> list[Schema]:
        """Python code that reads at least two keys of one decoded body by subscript or
        `.get` (`data["id"]`, `data.get("timeout_s", 120)`): the keys it reads are a schema,
        each field named `key:<body symbol>#<key>` and placed at the first statement that
        reads it."""
        found: dict[str, Schema] = {}
        for path, function, sub, span in self.nodes("item", "call"):
            if function is None or self.g.lang.get(path) == "go" or self.g.tests.holds(path):
                continue
            read = read_of(self.g, sub, Ctx(path, fn=function))
            if read is None:
                continue
            base, key = read
            schema = found.setdefault(base, Schema(f"keys:{base}", "python", path, {}))
            if key not in schema.fields:
                schema.fields[key] = SchemaField(key, f"key:{base}#{key}", None,
                                                 Location(path, span.line, span.column))
        return [s for s in found.values() if len(s.fields) >= 2 and self._is_body(s.type[len("keys:"):])]

    def _is_body(self, sym: str) -> bool:
        """A decoded message: bound from a decoding call, or a parameter named like one."""
        spec = self.g.catalog.file("wire").get("wire", {})
        decl = self.g.decls.get(sym)
        if decl is not None and decl.kind == "param":
            return sym.rsplit(".", 1)[-1].lower() in set(spec.get("body_params", ()))
        calls = set(spec.get("body_calls", ()))
        for b, _ in self.g.bindings.get(sym, ())[:8]:
            for sub in _walk(b.expr):
                fn = (sub.get("fn") or {}) if sub.get("k") == "call" else {}
                name = fn.get("name") or fn.get("sym") or ""
                if name and name.rsplit(".", 1)[-1] in calls:
                    return True
        return False

    # -- payloads -----------------------------------------------------------------------
    def payloads(self, schemas: list[Schema], wanted: set[str]) -> list[Payload]:
        """Payloads that share a key with a relevant schema (`wanted`: their keys)."""
        types = {s.type: s for s in schemas}
        found: dict[tuple[str, int, int], Payload] = {}
        if not wanted:
            return []
        found.update(self._kwargs_sent(wanted))
        for path, function, sub, _ in self.nodes("dict", "obj", "call"):
            if self.g.tests.holds(path):
                continue
            at = sub.get("at")
            if not at:
                continue
            k = sub.get("k")
            where = (path, at[0], at[1])
            if where in found:
                continue
            if k == "dict":
                if where in self._sql_parameters():
                    continue  # `conn.execute(text("INSERT …"), {"id": …})`: bind parameters, not a send
                keys = {item[0]: item[1] for item in sub.get("items", ()) if isinstance(item, list) and len(item) == 2}
                if sub.get("spread") is not None and function is not None:
                    found.update(self._forwarded(path, function, keys, sub["spread"], wanted))
                if wanted.isdisjoint(keys):
                    continue
                lang = "go" if self.g.lang.get(path) == "go" else "python"
                added = self._keys_added(path, function, at) if function is not None else {}
                if sub.get("open") or added is None:
                    continue  # keys the code adds that cannot be read: it may well send the timeout
                keys.update(added)
                found[where] = Payload(lang, path, Location(path, at[0], at[1]), function, keys, set(keys))
            elif k == "obj" and sub.get("type") in types:
                schema = types[sub["type"]]
                fields = sub.get("fields") or {}
                by_name = {f.sym.rsplit(".", 1)[-1]: f for f in schema.fields.values()}
                keys: dict[str, Expr | None] = {}
                omitted = set()
                fields = {**self._fields_set_after(path, function, at, sub["type"]), **fields}
                for name, f in by_name.items():
                    if name in fields:
                        keys[f.key] = fields[name]
                    elif f.omitempty:
                        omitted.add(f.key)
                    else:
                        keys[f.key] = None
                found[where] = Payload("go", path, Location(path, at[0], at[1]), function, keys,
                                       set(schema.fields), sub["type"], omitted)
            elif k == "call" and (sub.get("fn") or {}).get("name") == "dict" and len(sub.get("kw") or {}) >= 2:
                keys = dict(sub["kw"])  # dict(type="backup", timeout_seconds=600)
                if not wanted.isdisjoint(keys):
                    found[where] = Payload("python", path, Location(path, at[0], at[1]), function, keys, set(keys))
            elif k == "call" and (sub.get("fn") or {}).get("k") == "fnref":
                cls = sub["fn"]["sym"]
                type_name = "py:" + cls[len("sym:py:"):] if cls.startswith("sym:py:") else None
                if type_name not in types or not sub.get("kw"):
                    continue
                schema = types[type_name]
                keys = {name: value for name, value in sub["kw"].items() if name in schema.fields}
                defaults = {}
                for name, f in schema.fields.items():
                    if name not in keys:
                        default = [b.expr for b, _ in self.g.bindings.get(f.sym, ()) if b.function is None]
                        if default:
                            defaults[name] = default[0]
                found[where] = Payload("python", path, Location(path, at[0], at[1]), function, keys,
                                       set(schema.fields), type_name, defaults=defaults)
        return list(found.values())

    def _sql_parameters(self) -> set[tuple[str, int, int]]:
        """Positions of the dict literals handed to a call next to a SQL statement (a
        string that starts like one, or a text wrapper of the catalog): bind parameters."""
        key = ("_wire_sql_parameters",)
        found = self.g._memo.get(key)
        if found is None:
            found = set()
            wrappers = set(self.g.catalog.file("terminal_writes").get("sql", {}).get("text_wrappers", ()))
            for calls in self.g.calls_in.values():
                for call, path in calls:
                    values = [*call.args, *call.kw.values()]
                    if not any(_is_statement(v, wrappers) for v in values):
                        continue
                    for v in values:
                        if v.get("k") == "dict" and v.get("at"):
                            found.add((path, v["at"][0], v["at"][1]))
            self.g._memo[key] = found
        return found

    def _from_param(self, expr: Expr, fn: FunctionFact) -> bool:
        """A parameter, or a local first bound to one (`timeout = call_timeout`)."""
        if expr.get("k") != "ref":
            return False
        if expr["sym"] in fn.params:
            return True
        binds = [b for b, _ in self.g.bindings.get(expr["sym"], ()) if b.function == fn.sym]
        return bool(binds) and binds[0].expr.get("k") == "ref" and binds[0].expr["sym"] in fn.params

    def _kwargs_sent(self, wanted: set[str]) -> dict[tuple[str, int, int], Payload]:
        """`async def _submit(self, **fields): return await self._send(fields)`: a helper
        that hands its `**fields` dict on whole sends, at each call, the keywords given."""
        found: dict[tuple[str, int, int], Payload] = {}
        for fn_sym, (fn, path) in self.g.functions.items():
            for m in fn.markers:
                if m.get("m") != "kwargs" or self.g.tests.holds(path):
                    continue
                sym = fn.params[m["param"]]
                if any(a.get("k") == "ref" and a["sym"] == sym for c, _ in self.g.calls_in.get(fn_sym, ())
                       for a in [*c.args, *c.kw.values()]):
                    found.update(self._forwarded(path, fn_sym, {}, {"k": "ref", "sym": sym}, wanted))
        return found

    def _forwarded(self, path: str, function: str, keys: dict[str, Expr], spread: Expr,
                   wanted: set[str]) -> dict[tuple[str, int, int], Payload]:
        """`def submit(self, kind, /, **fields): post({"kind": kind, **fields})`: each call
        of the helper sends the literal's keys (its parameters bound to the call's
        arguments) plus the keywords that land in `**fields`, as a payload at the call."""
        fn = self.g.functions[function][0]
        if spread.get("k") != "ref" or spread["sym"] not in fn.params:
            return {}
        found = {}
        for caller, call, cpath in self._keyword_calls():
            extra = {name: v for name, v in call.kw.items() if name not in fn.param_names}
            if len(extra) < 2 or self.g.resolve_callee(call.callee, Ctx(cpath)) != function:
                continue
            subst = self.g.call_subst(fn, call, Ctx(cpath))
            sent = {key: (subst[v["sym"]][0] if v.get("k") == "ref" and v["sym"] in subst else v)
                    for key, v in keys.items()}
            sent.update(extra)
            if not wanted.isdisjoint(sent):
                where = (cpath, call.span.line, call.span.column)
                found[where] = Payload("python", cpath, Location(cpath, call.span.line, call.span.column),
                                       caller, sent, set(sent))
        return found

    def _keyword_calls(self) -> list[tuple[str, CallFact, str]]:
        """(caller, call, path) of the non-test calls with two keywords or more, in
        `calls_in` order: the only calls `_forwarded` can match, listed once per graph."""
        key = ("_wire_keyword_calls",)
        found = self.g._memo.get(key)
        if found is None:
            found = self.g._memo[key] = [(caller, call, path) for caller, calls in self.g.calls_in.items()
                                         for call, path in calls
                                         if len(call.kw) >= 2 and not self.g.tests.holds(path)]
        return found

    def _all_exprs(self) -> Iterator[tuple[str, str | None, Expr]]:
        for path, function, expr, _ in self._all_exprs_at():
            yield path, function, expr

    def _all_exprs_at(self) -> Iterator[tuple[str, str | None, Expr, Span]]:
        """Every expression of the facts, with the span of the statement that holds it."""
        for binds in self.g.bindings.values():
            for b, path in binds:
                yield path, b.function, b.expr, b.span
        for fn_sym, (fn, path) in self.g.functions.items():
            for ret in fn.returns:
                yield path, fn_sym, ret, fn.span
        for calls in self.g.calls_in.values():
            for call, path in calls:
                for arg in call.args:
                    yield path, call.function, arg, call.span
                for arg in call.kw.values():
                    yield path, call.function, arg, call.span
        for site, path in self.g.sites:
            if site.value:
                yield path, site.function, site.value, site.span

    # -- links --------------------------------------------------------------------------
    def links(self, payloads: list[Payload], schemas: list[Schema], others: list[Schema] = ()) -> list[Link]:
        """Payloads to the schemas (with a duration) they match best. `others` (schemas
        without one) only compete: `{"kind", "job_id", "spec"}` is a BackfillRequest,
        whose timeout is nested, not a SnapshotRequest sent without its timeout."""
        by_key: dict[str, list[Schema]] = {}
        for schema in [*schemas, *others]:
            for key in schema.fields:
                by_key.setdefault(key, []).append(schema)
        linkable = {id(s) for s in schemas}
        found = []
        for p in payloads:
            counts: dict[int, tuple[Schema, int]] = {}
            for key in sorted(p.all_keys):  # a set: sorted, so links come out in the same order every run
                for schema in by_key.get(key, ()):
                    counts[id(schema)] = (schema, counts.get(id(schema), (schema, 0))[1] + 1)
            candidates = []
            for s, n in counts.values():
                if n < 2 or 2 * n < len(p.all_keys):
                    continue
                mine = configured_component(self.g, p.path)
                if mine is not None and mine == configured_component(self.g, s.path):
                    continue  # configured components: a component talking to itself is no wire
                if p.lang == "go" and s.lang == "go" and (p.type == s.type or p.type is None) \
                        and _package(p.path) == _package(s.path):
                    continue  # the receiver building its own value, not a send
                if p.lang == "go" and s.lang == "go" and p.type is None \
                        and component_of(self.g, p.path) == component_of(self.g, s.path):
                    # a map literal a Go module sends elsewhere that shares keys with the
                    # module's own request type (a client of its own API reuses the type)
                    continue
                if s.type.startswith("keys:") and p.path == s.path:
                    continue  # the module that reads the body answering with the same keys
                candidates.append((n, s))
            # the schemas it matches best: a payload of one receiver also shares keys with others
            # (its own type, which a receiver may share, does not compete; a schema without a
            # duration competes with the receivers of its own language only)
            langs = {s.lang for _, s in candidates if id(s) in linkable}
            best = max((n for n, s in candidates if s.type != p.type and (id(s) in linkable or s.lang in langs)),
                       default=0)
            found.extend(Link(p, s, p.all_keys & set(s.fields)) for n, s in candidates
                         if id(s) in linkable and (
                             n == best or s.type == p.type
                             or (s.type.startswith("keys:") and n == len(s.fields))))  # reads only what is sent
        return found

    # -- clamps and fallbacks -----------------------------------------------------------
    def _also_returned_whole(self, function: str, bound: Expr, subject: Expr) -> bool:
        """`if warming_up: return min(FAST, interval)` … `return interval`: a function that
        returns the min on one path and the value itself, never reassigned, on another caps
        nothing. (`return min(requested, maxUpload)` in one case of a switch and `return
        requested` after its own `if requested > max` in another is a clamp per case.)"""
        entry = self.g.functions.get(function)
        if entry is None or subject.get("k") != "ref" or not any(r is bound for r in entry[0].returns):
            return False
        if not any(r is not bound and r == subject for r in entry[0].returns):
            return False
        sym = subject["sym"]
        writes = [b for b, _ in self.g.bindings.get(sym, ()) if not b.is_default and b.function == function]
        own_local = sym.startswith(function + ".") and sym not in entry[0].params
        return len(writes) == 1 if own_local else not writes  # a parameter, or a name of an enclosing function

    def clamps_and_fallbacks(self) -> tuple[list[Clamp], list[Fallback]]:
        clamps: list[Clamp] = []
        fallbacks: list[Fallback] = []
        seen: set[tuple] = set()
        spec = self.g.catalog.file("wire").get("wire", {})
        clamp_calls = set(spec.get("clamp_calls", ()))  # math.Min(x, MAX)
        first_nonzero_calls = set(spec.get("first_nonzero_calls", ()))  # cmp.Or(x, D)
        for path, function, sub, span in self.nodes("op", "call", "or"):
            if function is None or self.g.tests.holds(path):
                continue
            k = sub.get("k")
            at = sub.get("at") or (k == "or" and [span.line, span.column])
            if not at or (path, at[0], at[1], k) in seen:
                continue
            seen.add((path, at[0], at[1], k))
            loc = Location(path, at[0], at[1])
            if k == "op" and sub.get("op") == "min" and len(sub.get("args") or ()) == 2:
                pair = self._split_bound(sub["args"], path)
                if pair and not self._also_returned_whole(function, sub, pair[0]):
                    clamps.append(Clamp(function, path, loc, pair[0], pair[1], "min"))
            elif k == "call":
                name = (sub.get("fn") or {}).get("name")
                args = sub.get("args") or []
                if name in clamp_calls and len(args) == 2:
                    pair = self._split_bound(args, path)
                    if pair:
                        clamps.append(Clamp(function, path, loc, pair[0], pair[1], name))
                elif name in first_nonzero_calls and len(args) >= 2:
                    fallbacks.append(Fallback(function, path, loc, args[0], args[-1], "zero", name))
                elif (sub.get("fn") or {}).get("name") == "get" and (sub.get("fn") or {}).get("k") == "method" \
                        and len(args) == 2 and args[0].get("k") == "str" and self.g.lang.get(path) != "go":
                    fallbacks.append(Fallback(function, path, loc, sub, args[1], "absent", "get"))
                elif name == "getattr" and len(args) == 3:
                    fallbacks.append(Fallback(function, path, loc, {"k": "field", "x": args[0],
                                              "name": (args[1] or {}).get("v", "")}, args[2], "absent", "getattr"))
            elif k == "or" and len(sub.get("args") or ()) >= 2:
                trigger = "zero" if self.g.lang.get(path) == "go" else "falsy"
                fallbacks.append(Fallback(function, path, loc, sub["args"][0], sub["args"][-1], trigger, "or"))
        for fn_sym, (fn, path) in self.g.functions.items():
            if not fn.markers or self.g.tests.holds(path):
                continue
            for m in fn.markers:
                if m.get("m") not in ("ceiling", "fallback"):
                    continue
                loc = Location(path, int(m.get("line") or fn.span.line), int(m.get("col") or 1))
                value = self._guarded_value(fn, path, m)
                if value is None:
                    continue
                subject, guarded = value
                if m["m"] == "ceiling":
                    if self._constant(subject):
                        continue  # `if renew < cutoff { return renew }`: a constant is never what is cut
                    bound = guarded
                    if m.get("form") == "ifexp":
                        bound = self._py_name(fn, path, m.get("bound", ""))
                        if bound is None:
                            continue
                    clamps.append(Clamp(fn_sym, path, loc, subject, bound, "if"))
                else:
                    fallbacks.append(Fallback(fn_sym, path, loc, subject, guarded, m.get("trigger", "zero"), "if"))
        clamps = self._instantiate(clamps)
        for c in clamps:
            c.fed_by = frozenset(feeders(self.g, c.subject, clamp_ctx(self.g, c)))
        for f in fallbacks:
            f.fed_by = frozenset(feeders(self.g, f.subject, Ctx(f.path, fn=f.function)))
        return clamps, fallbacks

    def _constant(self, expr: Expr) -> bool:
        if expr.get("k") == "num":
            return True
        decl = self.g.decls.get(expr["sym"]) if expr.get("k") == "ref" else None
        return decl is not None and decl.kind == "const"

    def _guarded_value(self, fn: FunctionFact, path: str, m: dict) -> tuple[Expr, Expr] | None:
        """(subject, the value the guard assigns or returns)."""
        if m.get("ret") is not None:
            i = m["ret"]
            if not isinstance(i, int) or i >= len(fn.returns) or "subject" not in m:
                return None
            return m["subject"], fn.returns[i]
        assign = m.get("assign")
        if not assign:
            return None
        for b, p in self._bindings_in(fn.sym):
            if p == path and b.span.line == assign[0] and b.span.column == assign[1]:
                if m.get("form") == "ifexp":
                    return {"k": "ref", "sym": b.sym}, b.expr
                return m.get("subject") or {"k": "ref", "sym": b.sym}, b.expr
        if m.get("value") is not None and m.get("subject") is not None:
            return m["subject"], m["value"]
        return None

    def _bindings_in(self, fn_sym: str) -> list[tuple[Binding, str]]:
        index = self.g._memo.get(("_wire_bindings_by_fn",))
        if index is None:
            index = {}
            for binds in self.g.bindings.values():
                for b, p in binds:
                    if b.function:
                        index.setdefault(b.function, []).append((b, p))
            self.g._memo[("_wire_bindings_by_fn",)] = index
        return index.get(fn_sym, [])

    def _py_name(self, fn: FunctionFact, path: str, name: str) -> Expr | None:
        module = self.g.files[path].module if path in self.g.files else None
        if not module or not name.isidentifier():
            return None
        sym = f"sym:py:{module}.{name}"
        return {"k": "ref", "sym": sym} if sym in self.g.decls else None

    def _split_bound(self, args: list[Expr], path: str) -> tuple[Expr, Expr] | None:
        """(subject, bound) of a two-argument min: the bound is the constant-looking one."""
        marks = [self._bound_strength(a) for a in args]
        if marks[0] == marks[1]:
            return None
        # a constant beats a name (`min(s.cfg.SessionMaxAge, limits.MaxSessionAge)`: the
        # configured value is cut, though its name says "max" too)
        return (args[1], args[0]) if marks[0] > marks[1] else (args[0], args[1])

    def _bound_strength(self, expr: Expr) -> int:
        """2: a literal or constant; 1: a variable, field or parameter named as a limit
        (`maxWait`, `ceiling`); 0: anything else."""
        k = expr.get("k")
        if k == "num":
            return 2
        if k == "op" and expr.get("op") in ("mul", "add"):
            return min((self._bound_strength(a) for a in expr.get("args") or ()), default=0)
        if k == "conv":
            return self._bound_strength(expr.get("x") or {})
        if k == "ref":
            decl = self.g.decls.get(expr["sym"])
            name = expr["sym"].rsplit(".", 1)[-1]
            if decl is not None and decl.kind == "const":
                return 2
            if decl is not None and decl.kind in ("param", "var", "field") and _BOUND_WORDS.search(name):
                return 1
            return 0
        if k == "field":
            return 1 if _BOUND_WORDS.search(expr.get("name", "")) else 0
        return 0

    def _instantiate(self, clamps: list[Clamp]) -> list[Clamp]:
        """A clamp whose bound is a parameter of its function is a helper: one clamp per
        call, evaluated with the call's arguments."""
        out = []
        callers: dict[str, list[tuple[CallFact, str]]] | None = None
        for c in clamps:
            fn = self.g.functions.get(c.function, (None,))[0]
            bound_params = fn is not None and any(
                self.g.resolve_sym(sub, Ctx(c.path)) in fn.params for sub in _walk(c.bound))
            # `func capCommit(d time.Duration) time.Duration { if d > maxCommit { d = maxCommit } … }`:
            # the value cut is each call's argument (the clamp as written stays for the rest)
            subject_params = fn is not None and self._from_param(c.subject, fn)
            if not bound_params:
                out.append(c)
                if not subject_params:
                    continue
            if callers is None:
                callers = {}
                for calls in self.g.calls_in.values():
                    for call, p in calls:
                        target = self.g.resolve_callee(call.callee, Ctx(p))
                        if target:
                            callers.setdefault(target, []).append((call, p))
            for call, p in callers.get(c.function, ()):
                if not self.g.tests.holds(p):
                    out.append(Clamp(c.function, c.path, c.location, c.subject, c.bound, c.form + "-helper", (call, p)))
        return out


def is_duration_name(name: str | None, words: tuple[str, ...]) -> bool:
    """A name that says it holds a duration: a unit suffix, or one of the catalog's words."""
    if not name:
        return False
    if name_unit(name):
        return True
    low = name.lower()
    return any(w in low for w in words)


def _body(sym_or_type: str) -> str:
    """`sym:go:example.com/a/task.Task` / `py:svc.models.Job` -> the qualified name."""
    for prefix in ("sym:go:", "sym:py:", "py:"):
        if sym_or_type.startswith(prefix):
            return sym_or_type[len(prefix):]
    return sym_or_type


def _names(qualified: str, name: str) -> bool:
    """A configured name names a qualified one: equal, or its tail after a `.` or `/`."""
    return qualified == name or qualified.endswith("." + name) or qualified.endswith("/" + name)


def _names_schema(schema: Schema, name: str) -> bool:
    if schema.type.startswith("keys:"):  # a body read by key: named by the function reading it
        return _names(_body(schema.type[len("keys:"):]).rsplit(".", 1)[0], name)
    return _names(_body(schema.type), name)


def _names_sender(p: Payload, name: str) -> bool:
    return bool(p.type and _names(_body(p.type), name)) or bool(p.function and _names(_body(p.function), name))


def _renamed(p: Payload, field_map: dict[str, str]) -> Payload:
    if not field_map:
        return p
    ren = lambda k: field_map.get(k, k)  # noqa: E731
    return Payload(p.lang, p.path, p.location, p.function, {ren(k): v for k, v in p.keys.items()},
                   {ren(k) for k in p.all_keys}, p.type, {ren(k) for k in p.omitted},
                   {ren(k): v for k, v in p.defaults.items()})


def _package(path: str) -> str:
    return str(PurePosixPath(path).parent)


# -- evaluation helpers used by the checks -----------------------------------------------


def clamp_ctx(graph: TimeoutGraph, clamp: Clamp) -> Ctx:
    if clamp.call is None:
        return Ctx(clamp.path, fn=clamp.function)
    call, path = clamp.call
    fn = graph.functions[clamp.function][0]
    return Ctx(clamp.path, graph.call_subst(fn, call, Ctx(path, fn=call.function)),
               (path, call.span.line, call.span.column), clamp.function)


def called_returns(graph: TimeoutGraph, call: Expr, ctx: Ctx, seen: set) -> list[tuple[Expr, Ctx]]:
    """The return expressions of the program function a call runs (each function once per
    walk: `seen`), with the context to read them in."""
    callee = graph.resolve_callee(call.get("fn"), ctx)
    if not callee or callee in seen:
        return []
    seen.add(callee)
    fn, path = graph.functions[callee]
    inner = Ctx(path, fn=callee)
    return [(r, inner) for r in fn.returns]


def feeders(graph: TimeoutGraph, expr: Expr | None, ctx: Ctx, depth: int = 0, seen: set | None = None,
            out: set | None = None) -> set[str]:
    """The symbols that feed `expr`: what `mentions` looks for, collected once. A field
    read `p.F` of a local or parameter follows F only in what `p` is bound to (the
    literal's F, the F of what a called function returns): the literal's other fields,
    nested configs among them, feed other fields."""
    out = set() if out is None else out
    if not expr or depth > 6:
        return out
    seen = set() if seen is None else seen
    stack: list = [expr]
    while stack:
        sub = stack.pop()
        if isinstance(sub, list):
            stack.extend(sub)
            continue
        if not isinstance(sub, dict):
            continue
        k = sub.get("k")
        if k.__class__ is str:
            read = read_of(graph, sub, ctx) if k in ("item", "call") else None
            if read is not None:
                out.add(f"key:{read[0]}#{read[1]}")
            if k == "field" and _field_of_local(graph, sub, ctx, depth, seen, out):
                continue
            if k in ("ref", "field"):
                sym = graph.resolve_sym(sub, ctx)
                if sym:
                    out.add(sym)
                    if sym in ctx.subst and ("arg", sym) not in seen:
                        seen.add(("arg", sym))
                        arg, arg_ctx = ctx.subst[sym]
                        feeders(graph, arg, arg_ctx, depth + 1, seen, out)
                    elif ctx.fn and sym.startswith(ctx.fn + ".") and sym not in seen:
                        seen.add(sym)
                        for b, _ in graph.bindings.get(sym, ())[:8]:
                            feeders(graph, b.expr, ctx, depth + 1, seen, out)
            elif k == "call":
                for r, inner in called_returns(graph, sub, ctx, seen):
                    feeders(graph, r, inner, depth + 1, seen, out)
        for value in sub.values():
            if isinstance(value, (dict, list)):
                stack.append(value)
    return out


def _field_of_local(graph: TimeoutGraph, field: Expr, ctx: Ctx, depth: int, seen: set, out: set) -> bool:
    """`p.F` where `p` is a local or parameter: its symbol, and what feeds F in what `p`
    is bound to. False when `p` is anything else (the caller walks it as before)."""
    base, name = field.get("x"), field.get("name")
    if not isinstance(base, dict) or base.get("k") != "ref" or not name:
        return False
    base_sym = graph.resolve_sym(base, ctx)
    if not base_sym or not (base_sym in ctx.subst or ctx.fn and base_sym.startswith(ctx.fn + ".")):
        return False
    sym = graph.resolve_sym(field, ctx)
    if sym:
        out.add(sym)
    out.add(base_sym)
    key = ("field", base_sym, name)
    if key in seen:
        return True
    seen.add(key)
    if base_sym in ctx.subst:
        arg, arg_ctx = ctx.subst[base_sym]
        _field_in(graph, arg, name, arg_ctx, depth + 1, seen, out)
    else:
        for b, _ in graph.bindings.get(base_sym, ())[:8]:
            _field_in(graph, b.expr, name, ctx, depth + 1, seen, out)
    return True


def _field_in(graph: TimeoutGraph, value: Expr | None, name: str, ctx: Ctx, depth: int, seen: set, out: set) -> None:
    """What feeds field `name` of `value`: a literal's own field, through locals and the
    returns of program functions; any other value as a whole."""
    if not isinstance(value, dict) or depth > 6:
        return
    k = value.get("k")
    if k == "obj":
        fields = value.get("fields") or {}
        if name in fields:
            feeders(graph, fields[name], ctx, depth + 1, seen, out)
        return
    if k == "ref":
        sym = graph.resolve_sym(value, ctx)
        if sym and ctx.fn and sym.startswith(ctx.fn + ".") and ("field", sym, name) not in seen:
            seen.add(("field", sym, name))
            for b, _ in graph.bindings.get(sym, ())[:8]:
                _field_in(graph, b.expr, name, ctx, depth + 1, seen, out)
            return
    if k == "call":
        callee = graph.resolve_callee(value.get("fn"), ctx)
        if callee and ("field", callee, name) not in seen:
            seen.add(("field", callee, name))
            fn, path = graph.functions[callee]
            for r in fn.returns:
                _field_in(graph, r, name, Ctx(path, fn=callee), depth + 1, seen, out)
            return
    feeders(graph, value, ctx, depth + 1, seen, out)


def name_unit(name: str | None) -> str | None:
    """The unit a name states: `*_ms`, `TimeoutMs`, `timeout_millis` -> ms; `*_s`,
    `*_seconds`, `TimeoutSeconds`, `*_secs` -> s."""
    if not name:
        return None
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    last = snake.rsplit("_", 1)[-1] if "_" in snake else None
    if last in ("ms", "millis", "msec", "msecs", "millisecond", "milliseconds"):
        return "ms"
    if last in ("s", "sec", "secs", "second", "seconds"):
        return "s"
    return None


def read_of(graph: TimeoutGraph, expr: Expr, ctx: Ctx) -> tuple[str, str] | None:
    """(body symbol, key) of `body["key"]` / `body.get("key", …)` on a named body."""
    read = key_read(expr)
    if read is None:
        return None
    base, key = read
    if not base or base.get("k") not in ("ref", "field"):
        return None
    sym = graph.resolve_sym(base, ctx)
    return (sym, key) if sym and sym.startswith("sym:py:") else None


_STATEMENT_START = re.compile(r"^\s*(select|insert|update|delete|with|upsert|merge)\b", re.IGNORECASE)


def _is_statement(expr: Expr, wrappers: set[str]) -> bool:
    """A SQL statement given to a call: `"INSERT …"` or `text("INSERT …")`."""
    if expr.get("k") == "call":
        fn = expr.get("fn") or {}
        name = fn.get("name") if fn.get("k") == "ext" else str(fn.get("sym", "")).removeprefix("sym:py:")
        return name in wrappers
    return expr.get("k") == "str" and bool(_STATEMENT_START.match(expr.get("v", "")))
