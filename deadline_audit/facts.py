"""Facts: what one input file contributes to the timeout-flow graph.

Extractors are pure functions `file -> FileFacts`; the cache stores FileFacts as JSON
(`to_json`/`from_json`), so everything here is plain data: dataclasses, str, int, float,
bool, lists and dicts. The graph (graph.py) is rebuilt from the facts of all files; no
extractor looks at another file.

## Expressions (`Expr`)

How a value is computed, as a JSON-able dict with a kind `k`. Any expr may carry
`"at": [line, column]` (1-based, code points) in the file that produced it.

| k | fields | meaning |
|---|---|---|
| `num` | `v`: float, `u`: None / "ns" / "s" | a number; `u` is its unit when known. Go `time.Second` is `{"k":"num","v":1e9,"u":"ns"}`, Go `5*time.Minute` may be folded to `{"v":3e11,"u":"ns"}`; Python `timedelta(minutes=5)` is `{"v":300,"u":"s"}`; a bare `300` is `u: None` (the consuming API decides) |
| `str` | `v`: str | a string literal (`"30m"`, an env var name) |
| `none` | | Python `None`, Go `nil` |
| `ref` | `sym` | the value of a symbol (const, var, field, attribute, parameter, local) |
| `field` | `x`: Expr, `name` | `x.name` where the extractor could not name the symbol (type of `x` unknown to it); the graph resolves it from the type of `x` |
| `item` | `x`: Expr, `key`: str | `x["key"]` / `x.get("key")` with a string key (config access) |
| `env` | `name`: Expr, `default`: Expr or None, `at` | reading an environment variable (its raw string) with the default the code applies when it is unset/empty |
| `cfg` | `key`: dotted str, `file`: str or None, `default`: Expr or None | reading a key of a loaded config file |
| `call` | `fn`: callee Expr, `args`: [Expr], `kw`: {name: Expr} | a call whose result is the value; callee is `fnref`, `method` or `ext` |
| `fnref` | `sym` | a module function or method named as a value (`handle`, `pkg.Run`, a func literal's synthetic symbol `…func@12:7`, a lambda `…lambda@12:7`) |
| `method` | `x`: Expr, `name` | a method of `x` (`c.http.Do`, bound method value `a.callModel`) |
| `ext` | `name` | an external API by qualified name: `"net/http.NewRequest"`, `"time.ParseDuration"`, `"httpx.AsyncClient"` |
| `obj` | `type`: qualified type, `fields`: {name: Expr} | a composite literal / constructor call of a known type: `&models.Client{...}` |
| `op` | `op`: mul/add/sub/div/min/max/neg, `args`: [Expr] | arithmetic and clamps (Go `min` builtin, Python `min()`) |
| `conv` | `t`, `x`: Expr | a conversion: `parse_duration` (Go `time.ParseDuration`, string → ns), `number` (`strconv.Atoi/ParseFloat`, `int()`, `float()`: string → unitless), `go_duration` (`time.Duration(x)`: unitless → ns), `seconds_of` (`d.Seconds()`: ns → unitless seconds), `ms_of` (`d.Milliseconds()`), `timedelta_seconds` (`td.total_seconds()`), `json_decode_ns` (a JSON number decoded into a Go `time.Duration`) |
| `choice` | `args`: [Expr] | one of the args, picked at run time (`a if test else b`): known when they agree |
| `or` | `args`: [Expr] | first truthy/non-zero of the args (`os.getenv("X") or "30"`, Go `if x == 0 { x = def }` folded) |
| `dict` | `items`: [[key, Expr]], `at` | a Python dict literal with at least two string keys (a wire payload candidate) |
| `list` | `items`: [Expr], `at` | a Go slice/array literal or an element of elided type, a Python list/tuple holding dicts: the values it holds (no value of its own) |
| `unknown` | `text` | anything else (kept short: at most 80 chars) |

## Symbols

Ids are `sym:<lang>:<qualified name>`:
- Go: `sym:go:<import path>.<Name>` for package-level const/var/func/type,
  `sym:go:<import path>.<Type>.<Field>` for struct fields, `…<Type>.<Method>` for methods,
  `…<Func>.<local>` / `…<Type>.<Method>.<local>` for parameters and locals, and
  `…<Func>.func@<line>:<col>` for a func literal (its own locals hang below it).
  The import path of a package is the go.mod module path + the directory relative to the
  module root (`example.com/agent/internal/models`); `main` packages use the same rule.
  External types keep their import path: `net/http.Client`, `time.Duration`.
- Python: `sym:py:<module>.<Name>`, `…<module>.<Class>.<attr>` (class attributes and
  `self.attr` assignments), `…<module>.<func>.<local>`, `…<module>.<Class>.<method>.<local>`;
  `<module>` is the dotted module path from the analysis root (`service/models/client.py`
  → `service.models.client`, `__init__.py` names its package).

Types (`SymbolDecl.type`) are qualified type names without `sym:` and without pointers or
slices: `example.com/agent/internal/models.Client`, `net/http.Client`, `py:service.models.Client`.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Iterator

Expr = dict[str, Any]

FACTS_VERSION = 6  # bump when a shape below changes: it is part of the cache key


@dataclass
class Span:
    line: int
    column: int
    end_line: int
    end_column: int


# Go scalar types a struct embeds only to decode them its own way (`type Duration
# struct{ time.Duration }` with UnmarshalText): that embedded field holds the wrapper's value.
WRAPPED_SCALARS = frozenset({"time.Duration", "string", "bool", "int", "int32", "int64", "uint", "uint32", "uint64",
                             "float32", "float64"})


@dataclass
class SymbolDecl:
    """A declared symbol: const, var, field, param, local, func, method, type."""

    sym: str
    kind: str  # const | var | field | param | local | func | method | type | class | imethod (Go interface method)
    span: Span
    type: str | None = None  # declared/obvious type, qualified (see module doc)
    type_of: Expr | None = None  # when the type follows from an expr (`x := pkg.New()`)
    index: int | None = None  # parameter position
    tags: dict[str, str] = field(default_factory=dict)  # Go struct tags: {"json": "timeout", "env": "X"}
    embedded: bool = False  # Go embedded field (of a WRAPPED_SCALARS type: the wrapper's whole value)
    bases: list[str] = field(default_factory=list)  # Python class: its bases, qualified (`builtins.TimeoutError`)
    item_type: str | None = None  # Python field `dict[str, Model]` / `list[Model]`: the type of its items


@dataclass
class Binding:
    """`expr` flows into `sym` here (declaration, assignment, keyed field of a literal,
    keyword argument of a constructor, default of a parameter)."""

    sym: str
    expr: Expr
    span: Span
    function: str | None = None  # enclosing function symbol, None at module level
    is_default: bool = False  # a parameter default / settings field default


@dataclass
class FunctionFact:
    sym: str
    span: Span
    params: list[str] = field(default_factory=list)  # parameter symbols, in order (receiver/self excluded)
    param_names: list[str] = field(default_factory=list)
    receiver_type: str | None = None  # Go method receiver / Python class, qualified
    result_type: str | None = None  # first result type when it is a named type
    returns: list[Expr] = field(default_factory=list)  # return expressions, in source order
    # Structural features the graph and checks read (lease detection, handlers):
    timer_params: list[int] = field(default_factory=list)  # params used as a timer/ticker/sleep duration
    called_params: list[int] = field(default_factory=list)  # params called or awaited (the operation)
    called_with_args: list[int] = field(default_factory=list)  # Go: those called with arguments (`op(ctx)`, not `alive()`)
    vocabulary: list[str] = field(default_factory=list)  # catalog words seen in the body (renew, heartbeat, …)
    uses: list[Expr] = field(default_factory=list)  # field/attribute reads in the body (`c.httpClient`)
    is_async: bool = False
    enclosing: str | None = None  # for closures: the function they are written in
    # Rule-specific structural marks found by the marker passes (extract/*_marks*.py),
    # e.g. {"m": "http_handler"}, {"m": "sse_write", "line": 12, "col": 3}; names are
    # documented in the pass that emits them.
    markers: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class CallFact:
    """A call of a module function or method, or an external API the catalog names."""

    callee: Expr  # fnref | method | ext
    span: Span
    function: str | None  # enclosing function symbol
    args: list[Expr] = field(default_factory=list)
    kw: dict[str, Expr] = field(default_factory=dict)
    awaited: bool = False
    in_go: bool = False  # Go `go f(...)`
    in_defer: bool = False
    # Enclosing constructs, innermost last, from the marker passes: "loop", "finally",
    # "except:<types>", "with:<site id>", "shield", "select_loop", … (see extract/*_marks*.py)
    scopes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class SiteFact:
    """A place where a duration takes effect; `api` is the catalog entry that matched."""

    id: str  # "site:<path>:<line>:<col>"
    api: str  # catalog key, e.g. "go:net/http.Client.Timeout", "py:httpx.Client.timeout"
    role: str  # catalog role (SPEC §2): transport_deadline, read_timeout, phase_timeout, …
    span: Span
    value: Expr | None  # None: the library's implicit default applies (catalog has it)
    function: str | None = None  # enclosing function symbol
    stored_in: Expr | None = None  # where the configured object goes (`ref` of a field/var)
    group: str | None = None  # sites of one literal/call share it (Temporal options pair)
    unit: str | None = None  # unit of a unitless number here ("ns" for Go Duration, "s" for Python)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class EnvValue:
    """`NAME=value` in an env file."""

    name: str
    raw: str
    span: Span


@dataclass
class ConfigValue:
    """A scalar under a dotted key in a YAML/TOML/JSON file."""

    key: str  # dotted: "model.timeout"; list items as "items.0.timeout"
    raw: str
    span: Span
    is_number: bool = False


@dataclass
class KnobMention:
    """A knob name documented in Markdown or a documentation env file."""

    name: str
    span: Span


@dataclass
class InputProblem:
    message: str
    line: int | None = None
    column: int | None = None


@dataclass
class FileFacts:
    path: str  # POSIX, relative to the cwd (as reported)
    kind: str  # python | go | gomod | env | yaml | toml | json | markdown
    lines: int = 0
    module: str | None = None  # Go import path / Python dotted module
    go_version: str | None = None  # for kind gomod: the `go` directive; module in `module`
    env_role: str | None = None  # env files: layer | profile | doc (set by the pipeline)
    profile: str | None = None
    layer_rank: int | None = None  # env layers: precedence order, later wins (set by the pipeline)
    decls: list[SymbolDecl] = field(default_factory=list)
    bindings: list[Binding] = field(default_factory=list)
    functions: list[FunctionFact] = field(default_factory=list)
    calls: list[CallFact] = field(default_factory=list)
    sites: list[SiteFact] = field(default_factory=list)
    env_values: list[EnvValue] = field(default_factory=list)
    config_values: list[ConfigValue] = field(default_factory=list)
    knob_mentions: list[KnobMention] = field(default_factory=list)
    env_names_read: list[str] = field(default_factory=list)  # names read directly by code
    config_keys_read: list[str] = field(default_factory=list)  # string keys code names
    config_files_named: list[str] = field(default_factory=list)  # file names code opens/loads
    problems: list[InputProblem] = field(default_factory=list)


_PLANS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _plan(cls: type) -> tuple[tuple[str, bool], ...]:
    """(field name, has a default) in field order, computed once per class."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = tuple((f.name, f.default is not MISSING or f.default_factory is not MISSING)
                                   for f in fields(cls))
    return plan


def _compact(obj: Any) -> dict[str, Any]:
    """A dataclass as a dict without the fields that hold their defaults (empty lists,
    None, False): cached facts are read on every warm run, and most fields are empty."""
    out: dict[str, Any] = {}
    for name, has_default in _plan(obj.__class__):
        value = getattr(obj, name)
        cls = value.__class__
        if has_default and (value is None or value is False or (cls is list or cls is dict) and not value):
            continue
        if cls is Span:
            value = [value.line, value.column, value.end_line, value.end_column]
        elif cls is list and value and value[0].__class__ in _FACT_CLASSES:
            value = [_compact(item) for item in value]
        out[name] = value
    return out


_ENCODER = json.JSONEncoder(separators=(",", ":"), check_circular=False)  # facts are trees, never cyclic


def to_json(facts: FileFacts) -> str:
    return _ENCODER.encode(_compact(facts))


_LIST_TYPES = {
    "decls": SymbolDecl,
    "bindings": Binding,
    "functions": FunctionFact,
    "calls": CallFact,
    "sites": SiteFact,
    "env_values": EnvValue,
    "config_values": ConfigValue,
    "knob_mentions": KnobMention,
    "problems": InputProblem,
}
_FACT_CLASSES = frozenset(_LIST_TYPES.values())  # the dataclasses a FileFacts list holds


def from_json(text: str) -> FileFacts:
    data = json.loads(text)
    if data.__class__ is not dict:  # valid JSON, not an entry: a miss, like any damage
        raise TypeError("a cache entry is a JSON object")
    for name, cls in _LIST_TYPES.items():
        items = []
        for item in data.get(name, ()):
            span = item.get("span")
            if span is not None:
                item["span"] = Span(*span)
            items.append(cls(**item))
        data[name] = items
    return FileFacts(**data)


def receiver_chain(callee: Expr) -> list[Expr]:
    """What a method call goes through, innermost last: `a.b.c().d(…)` -> c(), a.b, a."""
    chain, x = [], callee.get("x")
    while isinstance(x, dict) and x.get("k") in ("field", "ref", "method", "call"):
        chain.append(x)
        x = x.get("x") if x.get("k") != "call" else (x.get("fn") or {}).get("x")
    return chain


def truthy(expr: Expr | None) -> bool:
    """A keyword argument given a value that is not plainly false (`stream=True`,
    `nx=flag`; not `False`, `None`, `0`, nor left out)."""
    if not expr:
        return False
    text = expr.get("text") or expr.get("sym") or expr.get("v")
    return str(text).rsplit(".", 1)[-1] not in ("False", "None", "0", "", "false")


def same_expr(a: Any, b: Any) -> bool:
    """Two expressions that say the same thing, wherever they are written (`at` ignored)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return all(same_expr(a.get(k), b.get(k)) for k in (set(a) | set(b)) - {"at"})
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_expr(x, y) for x, y in zip(a, b))
    return a == b


def walk_exprs(expr: Any) -> Iterator[Expr]:
    """Every sub-expression (a dict whose kind `k` is a string), pre-order. A call's
    keywords are a dict too, and a keyword may be named `k`: the string test tells them apart."""
    if isinstance(expr, dict):
        if expr.get("k").__class__ is str:
            yield expr
        for value in expr.values():
            if isinstance(value, (dict, list)):
                yield from walk_exprs(value)
    elif isinstance(expr, list):
        for item in expr:
            yield from walk_exprs(item)


def span_at(line: int, column: int, end_line: int | None = None, end_column: int | None = None) -> Span:
    return Span(line, column, end_line if end_line is not None else line, end_column if end_column is not None else column)
