"""Knobs: what the code reads (env names, config keys, loaded config files) and where.

One index per graph, shared by DA501 (set or documented but never read), DA502 (compiled
default vs deployed value) and the inventory. Everything here is derived from the graph's
facts; nothing reaches back into the extractors.

Env names read, case-insensitively (pydantic-settings is case-insensitive by default):
- direct reads (`os.getenv`, `os.Getenv`, `os.environ[...]`, …: `env` exprs whose name
  resolves) and pydantic-settings fields (prefix × field name, aliases);
- calls of a helper whose result comes from an env read keyed by a parameter: the name
  is resolved at each call site by substituting the arguments, through nested helpers
  and closures (`_Helpers`);
- Go struct tags `env:"…"` / `envconfig:"…"`, also under an `envconfig.Process("P", …)`
  prefix (envconfig reads `P_NAME`, then `NAME`);
- precision first, names the code may read without our resolving it: any string literal
  equal to the name; a name made of a literal prefix and a read name (viper
  `SetEnvPrefix("app")` + `server.read_timeout`); a name matching a run-time name's
  literal parts (`svc + "_LEASE_TTL"`, `fmt.Sprintf("%s_TIMEOUT", …)`, f-strings);
  a pydantic nested name (`APP_DB__TIMEOUT`) whose last part is a field.
Config keys read: string literals (`.get("k")`, `["k"]`, viper/koanf getters), struct
tags `yaml`/`json`/`toml`/`mapstructure`/`koanf`, field, attribute, variable and keyword
names (yaml.v3 and settings sections decode by field name). A config file is loaded when
the code names it (a literal path, an env value, a `default:` tag, viper SetConfigName).
Compiled defaults: of each read (`os.getenv("X", "5")`, a helper's default argument, a
settings field, a `default:` tag) and of config keys (`.get("k", 30)`, SetDefault).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from posixpath import basename
from typing import Any, Iterator

from deadline_audit.durations import Quantity, parse_duration_text
from deadline_audit.facts import Expr
from deadline_audit.findings import Location
from deadline_audit.graph import Ctx, TimeoutGraph

_CONFIG_FILE = re.compile(r"^[\w./-]+\.(?:ya?ml|toml|json)$")
_INTERPOLATION = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_CONSTANT = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


@dataclass
class EnvRead:
    """One place the code reads an env var, with the default it applies when unset."""

    name: str
    location: Location
    default: Any = None  # Quantity | str | None, as the graph resolves it
    via: str = "env read"  # env read | helper <name> | struct tag
    consumer: tuple[Expr, str] | None = None  # the expression (and file) that consumes the value


@dataclass
class ConfigDefault:
    """`doc.get("lease_ttl", 30)` / `viper.SetDefault("lease.ttl", …)`: the value the
    code applies when a loaded config file lacks the key."""

    key: str  # the key as the code names it (leaf or dotted)
    parent: str | None  # the enclosing key when the receiver is `x.get("parent", {})` / `x["parent"]`
    location: Location
    default: Any = None
    go_duration: bool = False  # a Go `time.Duration` field: a bare number decodes as nanoseconds


@dataclass
class KnobIndex:
    reads: dict[str, list[EnvRead]] = field(default_factory=dict)  # upper name -> reads
    env_names: set[str] = field(default_factory=set)  # upper: every name the code reads or spells
    env_prefixes: set[str] = field(default_factory=set)  # upper, with trailing "_"
    config_keys: set[str] = field(default_factory=set)  # lower leaf keys (and keywords, fields) the code names
    files_named: set[str] = field(default_factory=set)  # config file paths the code names
    constants: set[str] = field(default_factory=set)  # UPPER_SNAKE names the code declares
    config_defaults: list[ConfigDefault] = field(default_factory=list)
    name_globs: set[str] = field(default_factory=set)  # upper: env names built at run time
    _seen: set[tuple] = field(default_factory=set)
    _by_base: dict[str, list[str]] | None = None

    def add_read(self, read: EnvRead) -> None:
        """Record a read once per (name, file, line)."""
        key = (read.name.upper(), read.location.path, read.location.line)
        if key in self._seen:
            return
        self._seen.add(key)
        self.env_names.add(read.name.upper())
        self.reads.setdefault(read.name.upper(), []).append(read)

    def env_read(self, name: str) -> bool:
        upper = name.upper()
        if upper in self.env_names:
            return True
        if "__" in upper:
            head = upper.rsplit("__", 1)[0] + "__"
            if any(n.startswith(head) for n in self.env_names):
                return False  # the nested model's own variables are known: this is not one of them
            if upper.rsplit("__", 1)[-1].lower() in self.config_keys:
                return True  # pydantic-settings nested model: APP_DB__TIMEOUT -> a field `timeout`
        if any(fnmatchcase(upper, glob) for glob in self.name_globs):
            return True  # os.Getenv(svc + "_LEASE_TTL") may read it
        parts = upper.split("_")
        for i in range(1, min(len(parts) - 1, 3)):
            # a prefix the code spells (viper SetEnvPrefix("app"), envconfig.Process("app", …))
            # before a name it reads: APP_SERVER_READ_TIMEOUT for `server.read_timeout`
            if "_".join(parts[:i]) in self.env_names and "_".join(parts[i:]) in self.env_names:
                return True
        return any(upper.startswith(p) and upper[len(p):] in self.env_names for p in self.env_prefixes)

    def key_read(self, dotted: str) -> bool:
        lower = dotted.lower()
        leaf = lower.rsplit(".", 1)[-1]
        return leaf in self.config_keys or lower in self.config_keys

    def loads(self, path: str) -> bool:
        """Does the code name this config file (by its path's tail, or its base name)?"""
        if self._by_base is None:
            self._by_base = {}
            for named in self.files_named:
                self._by_base.setdefault(basename(named), []).append(named)
        for named in self._by_base.get(basename(path), ()):
            named = re.sub(r"^(?:\.\.?/)+", "", named)  # "./x.yaml", "../config/x.yaml"
            if "/" in named and not named.startswith("/"):
                if path == named or path.endswith("/" + named):
                    return True
            else:
                return True
        return False


def knob_index(graph: TimeoutGraph) -> KnobIndex:
    """The index for this graph, built once."""
    cached = graph.__dict__.get("_knob_index")
    if cached is None:
        cached = _build(graph)
        graph.__dict__["_knob_index"] = cached
    return cached


def _build(graph: TimeoutGraph) -> KnobIndex:
    idx = KnobIndex()
    tagged: list[tuple[str, Any, str]] = []
    key_tagged: list[tuple[str, Any, str]] = []  # struct fields named by a yaml/json/toml tag
    tests = _test_files(graph)
    data = knob_catalog(graph)
    env_tags = {pair[0] for pair in data.get("env_tags", ())}
    key_tags = set(data.get("key_tags", ()))
    for path, facts in graph.files.items():
        if facts.kind not in ("go", "python"):
            if facts.kind == "env":  # `APP_CONFIG=/etc/app/config.yaml` names a file too
                idx.files_named.update(v.raw for v in facts.env_values if _CONFIG_FILE.match(v.raw))
            for cv in facts.config_values:  # `command: ["--lease", "${LEASE_TTL}"]` in compose/CI
                if "$" in cv.raw:
                    idx.env_names.update(m.group(1).upper() for m in _INTERPOLATION.finditer(cv.raw))
            continue
        idx.env_names.update(n.upper() for n in facts.env_names_read)
        for literal in facts.config_keys_read:
            idx.env_names.add(literal.upper())
            idx.config_keys.add(literal.lower())
            if "." in literal or "-" in literal:  # viper/koanf keys: `server.read_timeout`
                idx.env_names.add(re.sub(r"[.-]", "_", literal.upper()))
                idx.config_keys.add(re.split(r"[.]", literal.lower())[-1])
        if not tests(path):  # a file only a test opens (a replay history, a golden file) is not config
            idx.files_named.update(facts.config_files_named)
    for sym, decl in graph.decls.items():
        leaf = sym.rsplit(".", 1)[-1]
        if decl.kind in ("field", "var", "const", "local", "param"):
            idx.config_keys.add(leaf.lower())
        if decl.kind in ("const", "var") and _CONSTANT.fullmatch(leaf):
            idx.constants.add(leaf)
        for tag, value in decl.tags.items():
            name = value.split(",", 1)[0].strip()
            if not name or name == "-":
                continue
            if tag in env_tags:
                tagged.append((sym, decl, name))
            elif tag == "envPrefix":  # caarlos0/env: a nested struct's variables are PREFIX + tag
                idx.env_prefixes.add(name.upper())
            elif tag in key_tags:
                idx.config_keys.add(name.lower())
                key_tagged.append((sym, decl, name))
            elif tag == "default" and _CONFIG_FILE.match(name):
                idx.files_named.add(name)
    _collect_reads(graph, idx)
    for sym, decl, name in tagged:
        # envconfig reads PREFIX_NAME, then NAME; caarlos0/env reads NAME (its prefix option
        # is rarely a literal). The `default:` / `envDefault:` tag is the compiled default.
        default = decl.tags.get("default", decl.tags.get("envDefault"))
        loc = Location(graph.decl_path[sym], decl.span.line, decl.span.column)
        for full in [name, *(p + name.upper() for p in sorted(idx.env_prefixes))]:
            idx.add_read(EnvRead(full, loc, default, "struct tag"))
    _field_defaults(graph, idx, key_tagged)
    _file_bound_defaults(graph, idx)
    return idx


def _file_bound_defaults(graph: TimeoutGraph, idx: KnobIndex) -> None:
    """A settings/model field bound to a key of a loaded file (settings_tables.py:
    `{"k": "cfg", "key": "events.idle_s", "default": <the field's default>}`): the field's
    default is the code's default for that key."""
    for sym, binds in graph.bindings.items():
        for b, path in binds[:4]:
            expr = b.expr
            if expr.get("k") != "cfg" or not expr.get("key") or not isinstance(expr.get("default"), dict):
                continue
            value = graph.value(expr["default"], Ctx(path), "default")
            if not (isinstance(value, Quantity) and value.value > 0):
                continue
            at = expr["default"].get("at") or [b.span.line, b.span.column]
            key = ("file", expr["key"], path, at[0])
            if key not in idx._seen:
                idx._seen.add(key)
                idx.config_defaults.append(ConfigDefault(expr["key"], None, Location(path, at[0], at[1]), value))


def _field_defaults(graph: TimeoutGraph, idx: KnobIndex, tagged: list[tuple[str, Any, str]]) -> None:
    """Values the code gives a config struct's field before or instead of the file's
    (`cfg := Config{ClaimTTL: 30 * time.Second}` then decode, `if c.TTL == 0 { c.TTL = … }`):
    compiled defaults of the key its tag names. The parent key is the tag of the one field
    that holds the struct, when there is one."""
    holders: dict[str, set[str]] = {}
    for sym, decl, name in tagged:
        if decl.type:
            holders.setdefault(decl.type, set()).add(name)
    for sym, decl, name in tagged:
        owner = sym.split(":", 2)[-1].rsplit(".", 1)[0]
        parents = holders.get(owner, set())
        parent = next(iter(parents)) if len(parents) == 1 else None
        for binding, path in graph.bindings.get(sym, ())[:16]:
            if _test_files(graph)(path):
                continue
            if any(e.get("k") in ("env", "cfg", "item") for e in _walk(binding.expr)):
                continue  # a value read from somewhere, not a compiled one
            value = graph.value(binding.expr, Ctx(path), "default")
            if isinstance(value, Quantity) and value.value > 0:
                loc = Location(path, binding.span.line, binding.span.column)
                key = ("field", name, path, binding.span.line)
                if key not in idx._seen:
                    idx._seen.add(key)
                    idx.config_defaults.append(ConfigDefault(name, parent, loc, value, decl.type == "time.Duration"))


# -- env reads with their defaults ----------------------------------------------------

def _top_exprs(graph: TimeoutGraph) -> Iterator[tuple[Expr, str, str | None]]:
    """Every expression of the code once, with its file and enclosing function."""
    for path, facts in graph.files.items():
        for b in facts.bindings:
            yield b.expr, path, b.function
        for site in facts.sites:
            if site.value is not None:
                yield site.value, path, site.function
        for fn in facts.functions:
            for r in fn.returns:
                yield r, path, fn.sym
        # calls last: a call inside a binding or a return was walked there already, and
        # the outer expression is the one that consumes its value
        for c in facts.calls:
            yield {"k": "call", "fn": c.callee, "args": c.args, "kw": c.kw,
                   "at": [c.span.line, c.span.column]}, path, c.function
    for b, path in graph.derived_bindings:  # a viper key's env variable (config_tags.py)
        yield b.expr, path, b.function


def _walk(expr: Any, seen: set | None = None) -> list[Expr]:
    """Sub-expressions (dicts with a kind `k`), iteratively: exprs can be deep. Hot: one
    pass over every expression of the tree. With `seen`, a call already walked at the
    same position (a CallFact and the binding that holds the same call) is skipped."""
    out: list[Expr] = []
    stack = [expr]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        if type(item) is dict:
            if "k" in item:
                if seen is not None and item["k"] == "call" and item.get("at"):
                    at = item["at"]
                    key = (at[0], at[1])
                    if key in seen:
                        continue
                    seen.add(key)
                out.append(item)
            values = item.values()
        elif type(item) is list:
            values = item
        else:
            continue
        for v in values:
            t = type(v)
            if t is dict or t is list:
                push(v)
    return out


def _collect_reads(graph: TimeoutGraph, idx: KnobIndex) -> None:
    env_exprs: list[tuple[Expr, str, Expr]] = []  # (expr, file, the top-level expr holding it)
    call_exprs: list[tuple[Expr, str, Expr]] = []
    data = knob_catalog(graph)
    prefix_calls = tuple(data.get("env_prefix_calls", ()))
    prefix_methods = {name.rsplit(".", 1)[-1] for name in prefix_calls if "." not in name}
    name_calls = tuple(data.get("config_name_calls", ()))
    name_extensions = tuple(data.get("config_name_extensions", ()))
    # per function (closures included in every function that encloses them): its env
    # reads and its calls, for the helper summaries below
    body_env: dict[str, list[Expr]] = {}
    body_calls: dict[str, list[Expr]] = {}
    callers: dict[str, set[str]] = {}
    keys_add = idx.config_keys.add
    walked: set = set()
    current = None
    chains: dict[str | None, list[str]] = {}
    for top, path, function in _top_exprs(graph):
        if path != current:
            current, walked = path, set()
        owners = chains.get(function)
        if owners is None:
            owners = chains[function] = graph.enclosing_chain(function)
        for e in _walk(top, walked):
            k = e.get("k")
            if k == "env":
                env_exprs.append((e, path, top))
                for owner in owners:
                    body_env.setdefault(owner, []).append(e)
            elif k == "call":
                call_exprs.append((e, path, top))
                kw = e.get("kw")
                if kw:  # `f(lease_ttl=…)`
                    for key in kw:
                        keys_add(str(key).lower())
                fn = e.get("fn") or {}
                if fn.get("k") in ("fnref", "method", "ref"):
                    for owner in owners:
                        body_calls.setdefault(owner, []).append(e)
                        if fn.get("k") == "fnref":
                            callers.setdefault(fn["sym"], set()).add(owner)
            elif k == "field" or k == "item":
                keys_add(str(e.get("name") or e.get("key") or "").lower())
    readers = set(body_env)  # functions whose body reads the environment
    todo = list(readers)
    while todo:  # a helper that calls a helper reads the environment too
        for caller in callers.get(todo.pop(), ()):
            if caller not in readers:
                readers.add(caller)
                todo.append(caller)
    helpers = _Helpers(graph, readers, body_env, body_calls)

    for e, path, top in env_exprs:
        ctx = Ctx(path)
        name = None if _keyed_by_param(graph, e.get("name")) else graph.value(e.get("name"), ctx)
        glob = None if isinstance(name, str) and name else _name_glob(e.get("name"))
        if glob is not None:  # a prefix that resolves names one variable, not a family
            idx.name_globs.add(glob)
        if _keyed_by_param(graph, e.get("name")):
            continue  # a helper's own read: resolved at each call site below
        if isinstance(name, str) and name:
            at = e.get("at") or [1, 1]
            default = graph.value(e.get("default"), ctx, "default")
            if default is None and e.get("default") is None:
                default = _overridden_default(graph, e, path, ctx)
            idx.add_read(EnvRead(name, Location(path, at[0], at[1]), default, "env read", (top, path)))
    for e, path, top in call_exprs:
        fn = e.get("fn") or {}
        ctx = Ctx(path)
        if (fn.get("k") == "ext" and fn.get("name", "").endswith(prefix_calls)) or \
                (fn.get("k") == "method" and fn.get("name") in prefix_methods):
            _note_prefix(graph, e, ctx, idx)
            continue
        if fn.get("name", "").endswith(name_calls) and e.get("args"):
            stem = graph.value(e["args"][0], ctx)  # viper: SetConfigName("config") + AddConfigPath
            if isinstance(stem, str) and stem and "/" not in stem:
                idx.files_named.update(f"{stem}.{ext}" for ext in name_extensions)
        at = e.get("at")
        if at:
            _note_config_default(graph, e, fn, ctx, Location(path, at[0], at[1]), idx)
        if not at or fn.get("k") not in ("fnref", "method", "ref"):
            continue
        callee = graph.resolve_callee(fn, ctx)
        if callee is None or callee not in readers:
            continue
        if any(_keyed_by_param(graph, a) for a in e.get("args") or ()):
            continue  # `get(key)` inside another helper: resolved at that helper's call sites
        names = helpers.names(e, ctx, callee)
        if not names:
            continue
        short = callee.rsplit(".", 1)[-1]
        defaults = _helper_defaults(graph, e, ctx)
        for name in names:
            default = defaults.get(name, defaults.get(None))
            idx.add_read(EnvRead(name, Location(path, at[0], at[1]), default, f"helper {short}", (top, path)))


_PRINTF_VERB = re.compile(r"%[-+# 0-9.*]*[a-zA-Z%]")


def _overridden_default(graph: TimeoutGraph, env: Expr, path: str, ctx: Ctx) -> Any:
    """The default of a read that overrides a local set before it (Go and Python alike):
    `d := 20 * time.Second; if v := os.Getenv("X"); v != "" { d, _ = time.ParseDuration(v) }`.
    The local's other binding, when it resolves to a value and does not come from the read."""
    bindings = [b for b in graph.files[path].bindings if b.function is not None]
    holder = next((b.sym for b in bindings if b.expr is env or
                   (b.expr.get("k") == "conv" and b.expr.get("x") is env)), None)
    if holder is None:
        return None
    fed = {holder}  # locals that take the read's value: v, parsed := f(v), d = parsed
    for _ in range(3):
        for b in bindings:
            if b.sym not in fed and any(x.get("k") == "ref" and x.get("sym") in fed for x in _walk(b.expr)):
                fed.add(b.sym)
    for sym in sorted(fed):
        for b in [b for b in bindings if b.sym == sym][:1]:
            others = [o for o in bindings if o.sym == b.sym and
                      not any(x.get("k") in ("ref", "env") and (x.get("k") == "env" or x.get("sym") in fed)
                              for x in _walk(o.expr))]
            if len(others) == 1:
                value = graph.value(others[0].expr, ctx, "default")
                if value is not None and not isinstance(value, str):
                    return value
    return None


def _name_glob(name: Expr | None) -> str | None:
    """A glob for an env name built at run time from literal parts: `svc + "_LEASE_TTL"`,
    `fmt.Sprintf("%s_TIMEOUT", svc)`, `f"{svc}_TIMEOUT"`. None for a plain literal or when
    too little of the name is literal to say anything (fewer than 4 literal characters)."""
    if not name or name.get("k") == "str":
        return None
    k = name.get("k")
    if k == "unknown" and name.get("glob"):
        glob = name["glob"]
    elif k == "op" and name.get("op") == "add":
        glob = "".join(a["v"] if a.get("k") == "str" else "*" for a in name.get("args") or ())
    elif k == "call" and (name.get("fn") or {}).get("name", "").endswith("Sprintf") and name.get("args") \
            and name["args"][0].get("k") == "str":
        glob = _PRINTF_VERB.sub("*", name["args"][0]["v"])
    else:
        return None
    glob = re.sub(r"\*+", "*", glob).upper()
    return glob if len(glob.replace("*", "")) >= 4 and "*" in glob else None


class _Helpers:
    """Env names a call of a reader function reads, its arguments substituted for the
    parameters (through nested helpers and closures, a few levels deep)."""

    def __init__(self, graph: TimeoutGraph, readers: set[str], body_env: dict, body_calls: dict) -> None:
        self.graph, self.readers, self.body_env, self.body_calls = graph, readers, body_env, body_calls

    def names(self, call: Expr, ctx: Ctx, callee: str, depth: int = 0) -> list[str]:
        if depth > 4:
            return []
        graph = self.graph
        fn, path = graph.functions[callee]
        inner = Ctx(path, graph.call_subst(fn, call, ctx), None, callee)
        out: list[str] = []
        for env in self.body_env.get(callee, ()):
            if not _keyed_by_param(graph, env.get("name")):
                continue
            name = graph.value(env.get("name"), inner)
            if isinstance(name, str) and name and name not in out:
                out.append(name)
        for sub in self.body_calls.get(callee, ()):
            if not any(_keyed_by_param(graph, a) for a in sub.get("args") or ()):
                continue
            target = graph.resolve_callee(sub.get("fn"), inner)
            if target is not None and target in self.readers and target != callee:
                out.extend(n for n in self.names(sub, inner, target, depth + 1) if n not in out)
        return out


def _helper_defaults(graph: TimeoutGraph, call: Expr, ctx: Ctx) -> dict[str | None, Any]:
    """A helper call's compiled default per env name (what the call gives when unset)."""
    out: dict[str | None, Any] = {}
    for node, named, dep_ctx, _ in graph.deps(call, ctx):
        if node.startswith("env:") and node[4:] not in out:
            if "default_value" in named:
                out[node[4:]] = named["default_value"]
            else:
                out[node[4:]] = graph.value(named.get("default"), dep_ctx, "default")
    if not out:
        value = graph.value(call, ctx, "default")
        if isinstance(value, (Quantity, str)):
            out[None] = value
    return out


def _note_config_default(graph: TimeoutGraph, call: Expr, fn: Expr, ctx: Ctx, loc: Location, idx: KnobIndex) -> None:
    name = fn.get("name") or ""
    args = call.get("args") or []
    if len(args) < 2 or (args[0] or {}).get("k") != "str":
        return
    if not (fn.get("k") == "method" and name == "get") and not name.endswith("SetDefault"):
        return
    default = graph.value(args[1], ctx, "default")
    if not isinstance(default, (Quantity, str)):
        return
    receiver = fn.get("x") or {}
    parent = None
    if receiver.get("k") == "item":
        parent = receiver.get("key")
    elif receiver.get("k") == "call" and (receiver.get("fn") or {}).get("name") == "get":
        first = (receiver.get("args") or [{}])[0] or {}
        parent = first.get("v") if first.get("k") == "str" else None
    key = ("cfg", args[0]["v"], loc.path, loc.line)
    if key not in idx._seen:
        idx._seen.add(key)
        idx.config_defaults.append(ConfigDefault(args[0]["v"], parent, loc, default))


def _keyed_by_param(graph: TimeoutGraph, name: Expr | None) -> bool:
    for e in _walk(name):
        if e.get("k") == "ref":
            decl = graph.decls.get(e["sym"])
            if decl is not None and decl.kind == "param":
                return True
    return False


def _note_prefix(graph: TimeoutGraph, call: Expr, ctx: Ctx, idx: KnobIndex) -> None:
    args = call.get("args") or []
    if args:
        value = graph.value(args[0], ctx)
        if isinstance(value, str) and value:
            idx.env_prefixes.add(value.upper().rstrip("_") + "_")


# -- values ------------------------------------------------------------------------------

def name_unit(name: str) -> str:
    """The unit a bare number has for this knob: `_MS`/`_MILLIS` names count milliseconds,
    everything else seconds (Python's convention; Go durations carry their own unit)."""
    upper = name.upper()
    if upper.endswith(("_MS", "_MILLIS", "_MILLISECONDS")):
        return "ms"
    return "s"


TIME_WORDS = ("*TIMEOUT*", "*TTL*", "*DEADLINE*")
_UNIT_SUFFIX = re.compile(r"(?:^|[_.-])(?:S|SEC|SECS|SECOND|SECONDS|MS|MILLIS|MILLISECONDS|MIN|MINS|MINUTES|H|HOURS|DURATION)$",
                          re.IGNORECASE)


def has_unit(name: str, raw: Any, defaults: list[Any]) -> bool:
    """Unit evidence: a unit suffix in the name (`_S`, `_MS`, `_SECONDS`), a value written
    with a unit (`"30s"`, `"5m"`), or a default with a duration unit."""
    if _UNIT_SUFFIX.search(name):
        return True
    for value in [raw, *defaults]:
        if isinstance(value, Quantity) and value.unit in ("ns", "s"):
            return True
        if isinstance(value, str) and value.strip() and not _NUMBER_TEXT.fullmatch(value.strip()) \
                and parse_duration_text(value, default_unit=None) is not None:
            return True
    return False


_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def seconds_of(value: Any, name: str) -> float | None:
    """Seconds of a deployed raw string or a compiled default (Quantity or string)."""
    unit = name_unit(name)
    if isinstance(value, Quantity):
        return value.to_seconds(unit)
    if isinstance(value, str):
        return parse_duration_text(value, default_unit=unit)
    return None


def matches(name: str, patterns: list[str] | tuple[str, ...], false_friends: tuple[str, ...] = ()) -> bool:
    """Case-insensitive glob match. `false_friends` (upper case) are words that hold a
    pattern's word without being it (RELEASE holds LEASE, THROTTLE holds TTL): they are
    blanked out of the name first."""
    upper = name.upper()
    for word in false_friends:
        if word in upper:
            upper = upper.replace(word, "_")
    return any(fnmatchcase(upper, p.upper()) for p in patterns)


def false_friends(graph: TimeoutGraph) -> tuple[str, ...]:
    """Catalog knobs.toml `false_friends`, upper case, longest first."""
    words = {str(w).upper() for w in knob_catalog(graph).get("false_friends", ()) if w}
    return tuple(sorted(words, key=len, reverse=True))


# -- settings, loaded files and compiled defaults shared by DA501, DA502 and the inventory

def knob_catalog(graph: TimeoutGraph) -> dict[str, Any]:
    """rules/catalog/knobs.toml's `[knobs]` table with the user's extensions
    (`[tool.deadline-audit.catalog.knobs]`: lists are appended, tables merged)."""
    raw = graph.catalog.file("knobs")
    data = {k: (list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v)
            for k, v in raw.get("knobs", {}).items()}
    for key, value in raw.items():
        if key == "knobs":
            continue
        if isinstance(value, list):
            data[key] = list(data.get(key, [])) + value
        elif isinstance(value, dict):
            data[key] = {**data.get(key, {}), **value}
    return data


def knob_settings(graph: TimeoutGraph, options: dict) -> tuple[list[str], list[str], list[str]]:
    """(patterns, exempt, not-program-config globs): catalog data plus the options."""
    data = knob_catalog(graph)
    patterns = list(data.get("patterns", ())) + list(options.get("patterns", ()))
    exempt = list(data.get("exempt", ())) + list(options.get("exempt", ()))
    return patterns, exempt, list(data.get("not_program_config", ()))


def loaded_config_files(graph: TimeoutGraph, idx: KnobIndex, options: dict) -> list[str]:
    """Config files the program loads: named by code (or configured with the
    `config-files` option), and not a CI workflow, manifest or tool file."""
    data = knob_catalog(graph)
    excluded = list(data.get("not_program_config", ()))
    manifest_keys = set(data.get("manifest_keys", ()))
    document_keys = [keys for keys in data.get("document_keys", ()) if keys]
    configured = list(options.get("config-files", ()))
    out = []
    for path, facts in sorted(graph.files.items()):
        if facts.kind not in ("yaml", "toml", "json") or not facts.config_values:
            continue
        if any(fnmatchcase(path, g) for g in excluded):
            continue
        top = {cv.key.split(".", 1)[0] for cv in facts.config_values}
        if manifest_keys and manifest_keys <= top:
            continue
        if any(set(keys) <= top for keys in document_keys):
            continue
        if idx.loads(path) or any(fnmatchcase(path, g) for g in configured):
            out.append(path)
    return out


def compiled_defaults(graph: TimeoutGraph, name: str) -> list[tuple[EnvRead, float]]:
    """Every resolved, non-zero compiled default of the knob, in seconds. Defaults in
    test code (catalog tests.toml) are left out: tests pick small values on purpose."""
    out = []
    tests = _test_files(graph)
    for read in knob_index(graph).reads.get(name.upper(), ()):
        if tests(read.location.path):
            continue
        seconds = seconds_of(read.default, name)
        if seconds is not None and seconds > 0:
            out.append((read, seconds))
    return out


def config_defaults_for(idx: KnobIndex, dotted: str) -> list[ConfigDefault]:
    """The code's defaults for a config key: same leaf (or dotted tail), and the same
    parent key when the code names one."""
    parts = dotted.split(".")
    out = []
    for d in idx.config_defaults:
        named = d.key.split(".")
        if parts[-len(named):] != named:
            continue
        if d.parent is not None and len(named) == 1 and not (len(parts) > 1 and parts[-2] == d.parent):
            continue
        out.append(d)
    return out


def consumed_seconds(graph: TimeoutGraph, read: EnvRead) -> tuple[float, float] | None:
    """(effective, default) seconds of the expression that consumes this read, when that
    expression depends on this one variable and both values carry a unit: the consuming
    code's own unit (`time.Duration(n) * time.Millisecond`) and its own parsing (a helper
    that ignores a bare number) then decide, not the name."""
    if read.consumer is None:
        return None
    top, path = read.consumer
    ctx = Ctx(path)
    sources = {d[0] for d in graph.deps(top, ctx) if d[0].startswith("env:")}
    if sources != {f"env:{read.name}"}:
        return None
    values = []
    for scenario in ("effective", "default"):
        value = graph.value(top, ctx, scenario)
        if not isinstance(value, Quantity) or value.unit not in ("ns", "s"):
            return None
        values.append(value.to_seconds())
    return values[0], values[1]


def _test_files(graph: TimeoutGraph):
    return graph.tests.holds
