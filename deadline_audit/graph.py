"""The timeout-flow graph (SPEC §2): facts of all files -> one networkx MultiDiGraph.

`graph_build.build_graph` indexes the facts (`TimeoutGraph`), then walks backwards from every site (and every lease
the graph recognises) through the expressions that feed it, adding `env:`, `cfg:`,
`sym:`, `lit:` and `site:` nodes with `flows` edges. Values are resolved in seconds per
*scenario*: `effective` (env layers and profiles applied, SPEC §2) and `default` (no env
value at all: what the compiled defaults give).

Resolution policy: what syntax and the module's own declarations determine is resolved;
anything else stays None. Unresolved means no link, and no link means no finding.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from fnmatch import fnmatchcase
from typing import Any, Callable, Iterator

import networkx as nx

from deadline_audit.analysis.context import Ctx, Lease  # noqa: F401 - Lease: re-exported for the checks
from deadline_audit.analysis.instances import object_fields
from deadline_audit.analysis.config_reads import ConfigReads
from deadline_audit.analysis.lease_queries import LeaseQueries
from deadline_audit.analysis.summaries import env_reader
from deadline_audit.catalog import Catalog, SiteSpec
from deadline_audit.durations import Quantity, evaluate, parse_duration_text
from deadline_audit.facts import (WRAPPED_SCALARS, Binding, CallFact, Expr, FileFacts, FunctionFact, SiteFact, SymbolDecl,
                                  walk_exprs as _walk)
from deadline_audit.findings import Layer, Location
from deadline_audit.testfiles import TestFiles

SCENARIOS = ("effective", "default")
HARD_ROLES = ("transport_deadline", "context_deadline", "read_timeout")
_MAX_DEPTH = 40


@dataclass
class EnvVar:
    name: str
    layers: list[Layer] = field(default_factory=list)  # precedence order, later wins
    profiles: list[Layer] = field(default_factory=list)
    docs: list[Location] = field(default_factory=list)
    reads: list[dict[str, Any]] = field(default_factory=list)  # {location, default_expr, ctx}

    def effective_raw(self) -> tuple[str, Layer] | None:
        if self.layers:
            return self.layers[-1].raw, self.layers[-1]
        if len({p.profile for p in self.profiles}) == 1:
            return self.profiles[0].raw, self.profiles[0]
        for p in self.profiles:
            if p.profile in ("production", "prod"):
                return p.raw, p
        return None


class TimeoutGraph(ConfigReads, LeaseQueries):
    """The graph plus the indexes the checks query. `g` is what `graph` exports."""

    def __init__(self, facts: list[FileFacts], catalog: Catalog, declared_leases: tuple[str, ...] = (),
                 root: Path | None = None) -> None:
        self.catalog = catalog
        self.tests = TestFiles(catalog, root)  # test code, by the project's own paths
        self.declared_leases = declared_leases  # DA101 option `lease-functions`
        self.g = nx.MultiDiGraph()
        self.files = {f.path: f for f in facts}
        self.lang = {f.path: ("go" if f.kind == "go" else "python") for f in facts}
        self.decls: dict[str, SymbolDecl] = {}
        self.decl_path: dict[str, str] = {}
        self.bindings: dict[str, list[tuple[Binding, str]]] = defaultdict(list)
        self.functions: dict[str, tuple[FunctionFact, str]] = {}
        self.closures: dict[str, list[str]] = defaultdict(list)
        self.calls_in: dict[str | None, list[tuple[CallFact, str]]] = defaultdict(list)
        self.sites: list[tuple[SiteFact, str]] = []
        self.sites_in: dict[str | None, list[SiteFact]] = defaultdict(list)  # by enclosing function
        self.env: dict[str, EnvVar] = {}
        self.config_values: dict[str, list[tuple[str, Any]]] = defaultdict(list)
        self.go_versions: dict[str, str] = {}
        # bindings the graph derives from several facts (a viper key's env / file / default
        # chain, config_tags.py): the knob index reads them beside the files' own
        self.derived_bindings: list[tuple[Binding, str]] = []
        self._memo: dict[tuple, Any] = {}
        self._active: set[tuple] = set()
        self._summaries: dict[tuple, tuple[Expr, Ctx, DepSummary]] = {}  # see dep_summary()
        self._callgraph = None
        self._callee_cache: dict[tuple[str, str], str | None] = {}
        # the same fact expr asked again (most asks): by identity, the expr kept alive in
        # the entry so that its id cannot be reused
        self._callee_seen: dict[tuple[int, str], tuple[Expr, str | None]] = {}
        self._calls_active: set[str] = set()  # summarised calls being evaluated (recursion guard)
        self._deps_active: set[str] = set()
        self._index(facts)

    @property
    def callgraph(self):
        """The call graph with dispatch (analysis/callgraph.py), built once."""
        if self._callgraph is None:
            from deadline_audit.analysis.callgraph import CallGraph

            self._callgraph = CallGraph(self)
        return self._callgraph

    # -- indexing ---------------------------------------------------------------------
    def _index(self, facts: list[FileFacts]) -> None:
        _canonicalise_python_names(facts)
        for f in facts:
            for d in f.decls:
                self.decls.setdefault(d.sym, d)
                self.decl_path.setdefault(d.sym, f.path)
            for b in f.bindings:
                self.bindings[b.sym].append((b, f.path))
            for fn in f.functions:
                self.functions[fn.sym] = (fn, f.path)
                if fn.enclosing:
                    self.closures[fn.enclosing].append(fn.sym)
            for c in f.calls:
                self.calls_in[c.function].append((c, f.path))
            for s in f.sites:
                self.sites.append((s, f.path))
                self.sites_in[s.function].append(s)
            for cv in f.config_values:
                self.config_values[cv.key].append((f.path, cv))
            if f.kind == "gomod" and f.module:
                self.go_versions[f.module] = f.go_version or ""
        self._link_self_methods()
        self._index_env(facts)
        self._narrow_reused_locals()
        self._bind_settings_proxies()
        self._bind_params()
        self.forget_memos()

    def _bind_settings_proxies(self) -> None:
        """`from django.conf import settings; settings.ALLOCATION_TIMEOUT` reads the module-level
        name of the project's settings module (catalog python `settings_proxies`: proxy ->
        the last part of that module's name), when exactly one such module defines it."""
        proxies = self.catalog.table("python", "settings_proxies")
        for proxy, module_name in proxies.items():
            defined: dict[str, list[str]] = defaultdict(list)
            marker = f".{module_name}."
            for sym, decl in self.decls.items():
                if sym.startswith("sym:py:") and decl.kind in ("var", "const") and marker in sym \
                        and sym.rsplit(".", 2)[-2] == module_name and sym in self.bindings:
                    defined[sym.rsplit(".", 1)[-1]].append(sym)
            for name, targets in defined.items():
                alias = f"sym:py:{proxy}.{name}"
                if len(targets) == 1 and alias not in self.bindings:
                    decl = self.decls[targets[0]]
                    self.bindings[alias].append((Binding(alias, {"k": "ref", "sym": targets[0]}, decl.span),
                                                 self.decl_path[targets[0]]))

    def _narrow_reused_locals(self) -> None:
        """Go: `d, err := …` declared again in a sibling block is one symbol with several
        bindings. A binding that copies such a local (`cfg.Timeout = d`) reads the one
        assigned last before it, in the same function."""
        for sym, binds in self.bindings.items():
            for i, (b, path) in enumerate(binds):
                expr = b.expr
                if expr.get("k") != "ref" or not b.function or self.lang.get(path) != "go":
                    continue
                local = expr["sym"]
                if not local.startswith(b.function + "."):
                    continue
                earlier = [lb for lb, _ in self.bindings.get(local, ()) if lb.function == b.function]
                if len(earlier) < 2:
                    continue
                before = [lb for lb in earlier if lb.span.line <= b.span.line]
                if before:
                    last = max(before, key=lambda lb: (lb.span.line, lb.span.column))
                    binds[i] = (Binding(b.sym, last.expr, b.span, b.function, b.is_default), path)

    def forget_memos(self) -> None:
        """Drop what was memoised while bindings were still being added (parameters
        bound from call sites, config tags): types and values read then may have missed
        them. The call graph's indexes are static: it is kept."""
        self._memo.clear()
        self._callee_cache.clear()
        self._callee_seen.clear()

    def _link_self_methods(self) -> None:
        """`self.m(…)` written before `m` is defined in its class reaches the extractor as a
        method of an unknown receiver: name the enclosing class's method."""
        for fn_sym, calls in self.calls_in.items():
            owner = fn_sym
            while owner in self.functions and self.functions[owner][0].receiver_type is None:
                owner = self.functions[owner][0].enclosing
            if owner not in self.functions:
                continue
            rtype = self.functions[owner][0].receiver_type or ""
            if not rtype.startswith("py:"):
                continue
            for call, _ in calls:
                x = call.callee.get("x") or {}
                if call.callee.get("k") == "method" and x.get("k") == "unknown" and x.get("text") in ("self", "cls"):
                    target = f"sym:{rtype}.{call.callee['name']}"
                    if target in self.functions:  # in place: argument exprs share this dict
                        call.callee.clear()
                        call.callee.update({"k": "fnref", "sym": target})

    def _index_env(self, facts: list[FileFacts]) -> None:
        env_files = [f for f in facts if f.kind == "env"]
        layers = sorted((f for f in env_files if f.env_role == "layer"), key=lambda f: (f.layer_rank or 0))
        for f in layers:
            for v in f.env_values:
                var = self.env_var(v.name)
                var.layers.append(Layer(f.path, v.span.line, self._text_seconds(v.raw), v.raw))
        for f in env_files:
            for v in f.env_values:
                if f.env_role == "profile":
                    self.env_var(v.name).profiles.append(
                        Layer(f.path, v.span.line, self._text_seconds(v.raw), v.raw, profile=f.profile))
                elif f.env_role == "doc":
                    self.env_var(v.name).docs.append(Location(f.path, v.span.line, v.span.column))
        for var in self.env.values():
            won = var.effective_raw()
            if won is not None:
                layer = won[1]
                marked = Layer(layer.path, layer.line, layer.value_seconds, layer.raw, layer.profile, wins=True)
                var.layers = [marked if lay is layer else lay for lay in var.layers]
                var.profiles = [marked if p is layer else p for p in var.profiles]

    @staticmethod
    def _text_seconds(raw: str) -> float | None:
        return parse_duration_text(raw, default_unit="s")

    def env_var(self, name: str) -> EnvVar:
        if name not in self.env:
            self.env[name] = EnvVar(name)
        return self.env[name]

    def _bind_params(self) -> None:
        """Each call's arguments flow into the callee's parameters (context-insensitive
        bindings; summarised calls substitute arguments precisely instead)."""
        for calls in list(self.calls_in.values()):
            for call, path in [*calls, *((s, p) for c, p in calls if (s := self.spawned_call(c, p)) is not None)]:
                callee = self.resolve_callee(call.callee, Ctx(path))
                if callee is None:
                    continue
                fn = self.functions[callee][0]
                for i, arg in enumerate(call.args):
                    if i < len(fn.params):
                        self.bindings[fn.params[i]].append((Binding(fn.params[i], arg, call.span, call.function), path))
                for name, arg in call.kw.items():
                    if name in fn.param_names:
                        sym = fn.params[fn.param_names.index(name)]
                        self.bindings[sym].append((Binding(sym, arg, call.span, call.function), path))
        # `functools.partial(f, a, k=v)` (catalog python `partials`): binds f's parameters now
        partials = set(self.catalog.table("python", "partials").get("funcs", ()))
        if not partials:
            return
        made = [(b.expr, b.span, b.function, path) for binds in self.bindings.values() for b, path in binds]
        made += [(arg, call.span, call.function, path) for calls in self.calls_in.values() for call, path in calls
                 for arg in [*call.args, *call.kw.values()]]
        for expr, span, function, path in made:
            target = self.partial_target(expr, Ctx(path), partials)
            if target is None:
                continue
            fn = self.functions[target][0]
            for i, arg in enumerate(expr["args"][1:]):
                if i < len(fn.params):
                    self.bindings[fn.params[i]].append((Binding(fn.params[i], arg, span, function), path))
            for name, arg in (expr.get("kw") or {}).items():
                if name in fn.param_names:
                    param = fn.params[fn.param_names.index(name)]
                    self.bindings[param].append((Binding(param, arg, span, function), path))

    def spawned_call(self, call: CallFact, path: str) -> CallFact | None:
        """`tg.start_soon(keep, lease, every)`: the call of `keep(lease, every)` that an
        executor makes (catalog python `[executors] spread`), when its function is one of
        the program's; else None."""
        if self.lang.get(path) == "go" or call.callee.get("k") not in ("ext", "method"):
            return None
        table = self.catalog.table("python", "executors")
        name = str(call.callee.get("name") or "").rsplit(".", 1)[-1]
        at = (table.get("spread") or {}).get(name)
        target = (table.get("targets") or {}).get(name)
        if at is not None and at < len(call.args):
            fn, args = call.args[at], list(call.args[at + 1:])
            kw = dict(call.kw) if name in table.get("spread_keywords", ()) else {}
        elif target is not None and target in call.kw:  # `Thread(target=keep, args=(…), kwargs={…})`
            fn, given, named = call.kw[target], call.kw.get("args") or {}, call.kw.get("kwargs") or {}
            args = list(given.get("items") or ()) if given.get("k") in ("tuple", "list") else []
            kw = {str(k): v for k, v in named.get("items") or ()} if named.get("k") == "dict" else {}
        else:
            return None
        if fn.get("k") == "field":  # a bound method: `start_soon(self._keep, ttl)`
            fn = {"k": "method", "x": fn.get("x"), "name": fn.get("name")}
        if fn.get("k") not in ("fnref", "method", "ref") or self.resolve_callee(fn, Ctx(path)) not in self.functions:
            return None
        return CallFact(callee=fn, span=call.span, function=call.function, args=args, kw=kw,
                        awaited=call.awaited, scopes=list(call.scopes), extra=dict(call.extra))

    def partial_target(self, expr: Expr | None, ctx: Ctx, partials: set[str] | None = None) -> str | None:
        """The program function `functools.partial(f, …)` wraps, else None."""
        if not expr or expr.get("k") != "call" or not expr.get("args"):
            return None
        fn = expr.get("fn") or {}
        if partials is None:
            partials = set(self.catalog.table("python", "partials").get("funcs", ()))
        if fn.get("k") != "ext" or fn.get("name") not in partials:
            return None
        wrapped = expr["args"][0]
        if wrapped.get("k") == "field":  # a bound method: `partial(self._client.fetch, url)`
            wrapped = {"k": "method", "x": wrapped.get("x"), "name": wrapped.get("name")}
        target = self.resolve_callee(wrapped, ctx)
        return target if target in self.functions else None

    # -- types and names --------------------------------------------------------------
    def member(self, type_name: str | None, name: str, path: str) -> str | None:
        if not type_name:
            return None
        if type_name.startswith("py:"):
            return f"sym:{type_name}.{name}"
        if type_name.startswith("sym:"):
            return f"{type_name}.{name}"
        return f"sym:{'go' if self.lang.get(path) == 'go' else 'py'}:{type_name}.{name}"

    def type_of(self, expr: Expr | None, ctx: Ctx, depth: int = 0) -> str | None:
        if not expr or depth > 12:
            return None
        k = expr.get("k")
        if k == "obj":
            return expr.get("type")
        if k == "ref":
            sym = expr["sym"]
            if sym in ctx.subst:
                arg, arg_ctx = ctx.subst[sym]
                return self.type_of(arg, arg_ctx, depth + 1)
            return self._symbol_type(sym, depth)
        if k == "field":
            sym = self.resolve_field(expr, ctx, depth + 1)
            return self._symbol_type(sym, depth + 1) if sym else None
        if k == "call":
            callee = expr.get("fn") or {}
            if callee.get("k") == "fnref":
                target = callee["sym"]
                if target in self.functions:
                    return self._result_type(target, depth)
                decl = self.decls.get(target)
                if decl is not None and decl.kind in ("class", "type"):
                    return _type_of_sym(target)
                return None
            sym = self.resolve_callee(callee, ctx, depth + 1)
            return self._result_type(sym, depth) if sym else None
        if expr.get("lookup") is not None:  # `self._tools[name]`: an item of the container
            return self._item_type(expr["lookup"], ctx, depth + 1)
        return None

    def _item_type(self, container: Expr, ctx: Ctx, depth: int) -> str | None:
        """The declared item type of a container (`tools: Mapping[str, ToolRoute]`), through
        the symbols it is copied from (`self._tools = tools`)."""
        sym = self.resolve_sym(container, ctx)
        for _ in range(4):
            decl = self.decls.get(sym or "")
            if decl is None:
                return None
            if decl.item_type:
                return decl.item_type
            bound = [b.expr for b, _ in self.bindings.get(sym, ())[:2]]
            sym = bound[0].get("sym") if len(bound) == 1 and bound[0].get("k") == "ref" else None
        return None

    def _result_type(self, fn_sym: str, depth: int) -> str | None:
        """A function's declared result type, else the one type its returns build
        (`def make(): return Client(…)`, a context-manager generator's yield)."""
        fn, path = self.functions[fn_sym]
        if fn.result_type or not fn.returns:
            return fn.result_type

        def built() -> str | None:
            types = {self.type_of(r, Ctx(path), depth + 1) for r in fn.returns[:4]}
            types.discard(None)
            return types.pop() if len(types) == 1 else None

        return self._once(("_result_type", fn_sym), depth, built)

    def _symbol_type(self, sym: str, depth: int) -> str | None:
        """A symbol's type: declared, or what its declaration or first bindings build."""
        def found() -> str | None:
            decl = self.decls.get(sym)
            if decl is not None and decl.type:
                return decl.type
            if decl is not None and decl.type_of:
                declared = self.type_of(decl.type_of, Ctx(self.decl_path[sym]), depth + 1)
                if declared is not None:
                    return declared
            for b, path in self.bindings.get(sym, ())[:8]:
                built = self.type_of(b.expr, Ctx(path), depth + 1)
                if built:
                    return built
            return None

        return self._once(("_type", sym), depth, found)

    def _once(self, key: tuple, depth: int, compute: Callable[[], Any]) -> Any:
        """`compute()` memoised under `key`; a key met again while it is being computed (a
        cycle, `a = b; b = a`) or too deep resolves to None."""
        if key in self._memo:
            return self._memo[key]
        if key in self._active or depth > 12:
            return None
        self._active.add(key)
        try:
            value = compute()
        finally:
            self._active.discard(key)
        self._memo[key] = value
        return value

    def resolve_field(self, expr: Expr, ctx: Ctx, depth: int = 0) -> str | None:
        owner = self.type_of(expr.get("x"), ctx, depth + 1)
        return self.member(owner, expr["name"], ctx.path)

    def resolve_sym(self, expr: Expr | None, ctx: Ctx) -> str | None:
        """The symbol an expr names (`ref`, or a `field` whose owner type is known)."""
        if not expr:
            return None
        if expr.get("k") == "ref":
            return expr["sym"]
        if expr.get("k") == "field":
            return self.resolve_field(expr, ctx)
        return None

    def resolve_callee(self, callee: Expr | None, ctx: Ctx, depth: int = 0) -> str | None:
        """The one function a call runs: a direct callee or a method of the receiver's
        own type, else the single target dispatch finds (see `resolve_callees`)."""
        if not callee or depth > 12:
            return None
        key = None
        if not ctx.subst and depth == 0:
            seen = self._callee_seen.get((id(callee), ctx.path))
            if seen is not None and seen[0] is callee:
                return seen[1]
            key = (repr(callee), ctx.path)
            if key in self._callee_cache:
                result = self._callee_cache[key]
                self._callee_seen[(id(callee), ctx.path)] = (callee, result)
                return result
        result = None
        if callee.get("k") == "method":
            sym = self.member(self.type_of(callee.get("x"), ctx, depth + 1), callee["name"], ctx.path)
            if sym in self.functions:
                result = sym
        if result is None:
            found = self.callgraph.targets(callee, ctx, depth)
            result = found[0] if len(found) == 1 else None
        if key is not None:  # by content: callers also pass exprs they build on the fly
            self._callee_cache[key] = result
            self._callee_seen[(id(callee), ctx.path)] = (callee, result)
        return result

    def resolve_callees(self, callee: Expr | None, ctx: Ctx) -> tuple[str, ...]:
        """Every function a call may run (interface and Protocol dispatch, function values)."""
        return self.callgraph.targets(callee, ctx)

    # -- values -----------------------------------------------------------------------
    def seconds(self, expr: Expr | None, ctx: Ctx, unit: str | None, scenario: str = "effective") -> float | None:
        value = self.value(expr, ctx, scenario)
        return to_seconds(value, unit)

    def value(self, expr: Expr | None, ctx: Ctx, scenario: str = "effective", depth: int = 0) -> Any:
        if expr is None or depth > _MAX_DEPTH:
            return None
        return evaluate(expr, lambda e: self._resolve(e, ctx, scenario, depth + 1))

    def _resolve(self, expr: Expr, ctx: Ctx, scenario: str, depth: int) -> Any:
        k = expr.get("k")
        if k == "ref":
            found = self._ref_value(expr["sym"], ctx, scenario, depth)
            if found is None:
                member = self._member_of_constant(expr["sym"], ctx)
                if member is not None:
                    return self.value(member[0], member[1], scenario, depth)
            return found
        if k == "field":
            sym = self.resolve_field(expr, ctx)
            if self._wrapped(sym):
                return self.value(expr.get("x"), ctx, scenario, depth)
            placed = self._config_read_at(sym, expr, ctx) if sym else None
            if placed is not None:
                return self.value(placed[0], placed[1], scenario, depth)
            found = self._ref_value(sym, ctx, scenario, depth) if sym else None
            if found is None and sym and sym not in ctx.subst and expr.get("x"):
                # a field whose objects disagree, read on one object whose construction is
                # visible (`policies.SUBMIT.start_to_close`, `SUBMIT = Policy(start_to_close=…)`)
                fields = object_fields(self, expr["x"], ctx)
                if sym in fields:
                    value, value_ctx = fields[sym]
                    return self.value(value, value_ctx, scenario, depth)
                if sym in self.functions:
                    # a Python property (`policy.ttl_ms` returning `int(self.ttl_s * 1000)`):
                    # its one return, with this object's fields when its construction is visible
                    fn, fn_path = self.functions[sym]
                    if not fn.params and len(fn.returns) == 1 and self.lang.get(fn_path) == "python":
                        return self.value(fn.returns[0], Ctx(fn_path, dict(fields)), scenario, depth)
            return found
        if k == "env":
            name = self.value(expr.get("name"), ctx, scenario, depth)
            if not isinstance(name, str):
                return None
            if scenario == "effective" and name in self.env:
                won = self.env[name].effective_raw()
                if won is not None:
                    return won[0]
            return self.value(expr.get("default"), ctx, scenario, depth)
        if k == "cfg":
            if scenario == "default" and expr.get("default") is not None and expr.get("compiled"):
                # the code's own default for the key, without what the file deploys
                return self.value(expr["default"], ctx, scenario, depth)
            values = self.config_values.get(expr.get("key", ""), [])
            if len(values) > 1 and expr.get("file"):  # the key in several files: this file's
                values = [v for v in values if v[0] == expr["file"]]
            if len(values) == 1:
                raw = values[0][1]
                return Quantity(float(raw.raw)) if raw.is_number else raw.raw
            return self.value(expr.get("default"), ctx, scenario, depth)
        if k in ("item", "call"):
            read = self.document_read(expr, ctx)
            if read is not None:
                return self._resolve(read, ctx, scenario, depth)
        if k == "call":
            return self._call_value(expr, ctx, scenario, depth)
        return None

    def _member_of_constant(self, sym: str, ctx: Ctx) -> tuple[Expr, Ctx] | None:
        """Python `policies.SUBMIT.start_to_close` (one dotted name): the keyword the
        module constant `SUBMIT = Policy(start_to_close=…)` was built with."""
        if not sym.startswith("sym:py:") or sym in self.bindings or sym in self.decls or sym in ctx.subst:
            return None
        base, _, name = sym.rpartition(".")
        if base not in self.bindings:
            return None
        for field_sym, found in object_fields(self, {"k": "ref", "sym": base}, Ctx(self.decl_path.get(base, ctx.path))).items():
            if field_sym and field_sym.rsplit(".", 1)[-1] == name:
                return found
        return None

    def _wrapped(self, sym: str | None) -> bool:
        """`cfg.Exec.Timeout.Duration`: the scalar a decoding wrapper embeds
        (`type Duration struct{ time.Duration }`) is the wrapper's own value."""
        decl = self.decls.get(sym) if sym else None
        return decl is not None and decl.embedded and decl.type in WRAPPED_SCALARS

    def _ref_value(self, sym: str, ctx: Ctx, scenario: str, depth: int) -> Any:
        if sym in ctx.subst:
            arg, arg_ctx = ctx.subst[sym]
            return self.value(arg, arg_ctx, scenario, depth)
        if ctx.local(sym):
            key = (sym, scenario, id(ctx.subst))
            if key in self._active:
                return None
            self._active.add(key)
            try:
                return _agree([self.value(b.expr, ctx, scenario, depth) for b, _ in self.bindings.get(sym, ())])
            finally:
                self._active.discard(key)
        key = (sym, scenario)
        if key in self._memo:
            return self._memo[key]
        if key in self._active:
            return None
        self._active.add(key)
        try:
            binds = self.bindings.get(sym, ())
            if scenario == "effective" and len(binds) > 1:
                # a field the loaded config file sets (config_tags.py): the deployed value wins
                # over the code's defaults for it (`if c.X <= 0 { c.X = D }`)
                deployed = [(b, path) for b, path in binds if self._from_config(b.expr, Ctx(path))]
                binds = deployed or binds
            candidates = [self.value(b.expr, Ctx(path), scenario, depth) for b, path in binds]
        finally:
            self._active.discard(key)
        result = _agree(candidates)
        self._memo[key] = result
        return result

    def string_transform(self, expr: Expr, ctx: Ctx) -> Expr | None:
        """The operand of a call that leaves a string's meaning alone (catalog
        `string_transforms`: `raw.strip()`, `strings.TrimSpace(raw)`), else None."""
        fn = expr.get("fn") or {}
        lang = self.lang.get(ctx.path)
        spec = self.catalog.table("go" if lang == "go" else "python", "string_transforms")
        if fn.get("k") == "method" and fn.get("name") in spec.get("methods", ()) and not expr.get("args"):
            return fn.get("x")
        if fn.get("k") == "ext" and fn.get("name") in spec.get("funcs", ()) and expr.get("args"):
            return expr["args"][0]
        return None

    def _call_value(self, expr: Expr, ctx: Ctx, scenario: str, depth: int) -> Any:
        inner_text = self.string_transform(expr, ctx)
        if inner_text is not None:
            return self.value(inner_text, ctx, scenario, depth)
        fn_expr = expr.get("fn") or {}
        converted = self.decls.get(fn_expr.get("sym") or "") if fn_expr.get("k") == "fnref" else None
        if converted is not None and converted.kind == "type" and converted.type in WRAPPED_SCALARS \
                and len(expr.get("args") or ()) == 1:
            # `Duration(15 * time.Second)` with `type Duration time.Duration`: the same value
            return self.value(expr["args"][0], ctx, scenario, depth)
        callee = self.resolve_callee(fn_expr, ctx)
        if callee is None or callee in self._calls_active or len(self._calls_active) > 12:
            return None  # a recursive function (or a chain this deep) has no static value
        fn, path = self.functions[callee]
        inner = self.call_ctx(callee, expr, ctx)
        env_values, plain = [], []
        summary = env_reader(self, callee)
        self._calls_active.add(callee)
        # a return on a failure path (`if err != nil { return 0 }`, `return 0, err`) is not
        # the value the call gives when it works
        working = [i for i, ret in enumerate(fn.returns) if not ret.get("error_path")] or range(len(fn.returns))
        try:
            for i in working:
                v = self.value(fn.returns[i], inner, scenario, depth)
                (env_values if summary is not None and summary.env_returns[i] else plain).append(v)
        finally:
            self._calls_active.discard(callee)
        # A helper "env value if set, else default" returns both: the env-derived return
        # wins when it resolves (the variable is set); else the others decide.
        chosen = [v for v in env_values if v is not None]
        return _agree(chosen) if chosen else _agree(plain)

    def call_ctx(self, callee: str, expr: Expr, ctx: Ctx) -> Ctx:
        """Where a summarised call's returns are evaluated: its arguments for the callee's
        parameters, and for a Go method called on a value (`c.Timeout.Std()`) that value
        for its receiver."""
        fn, path = self.functions[callee]
        inner = Ctx(path, self.call_subst(fn, expr, ctx), ctx.call_at or _at(expr, ctx), callee)
        fn_expr = expr.get("fn") or {}
        receiver = self.receiver_param(callee) if fn_expr.get("k") == "method" and fn_expr.get("x") else None
        if receiver is not None:
            inner.subst[receiver] = (fn_expr["x"], ctx)
        return inner

    def receiver_param(self, method: str) -> str | None:
        """A Go method's receiver (a parameter declared without a position)."""
        found = self._memo.get(("receivers",))
        if found is None:
            found = self._memo[("receivers",)] = {
                sym.rsplit(".", 1)[0]: sym for sym, d in self.decls.items()
                if d.kind == "param" and d.index is None and sym.startswith("sym:go:")}
        return found.get(method)

    def call_subst(self, fn: FunctionFact, call: Expr | CallFact, ctx: Ctx) -> dict[str, tuple[Expr, Ctx]]:
        args = call.args if isinstance(call, CallFact) else call.get("args", [])
        kw = call.kw if isinstance(call, CallFact) else call.get("kw", {})
        subst: dict[str, tuple[Expr, Ctx]] = {}
        for i, arg in enumerate(args):
            if i < len(fn.params):
                subst[fn.params[i]] = (arg, ctx)
        for name, arg in (kw or {}).items():
            if name in fn.param_names:
                subst[fn.params[fn.param_names.index(name)]] = (arg, ctx)
        for sym in fn.params:  # parameter defaults (Python) when the call leaves them out
            if sym not in subst:
                defaults = [b for b, _ in self.bindings.get(sym, ()) if b.is_default]
                if defaults:
                    subst[sym] = (defaults[0].expr, Ctx(self.functions[fn.sym][1]))
        return subst

    # -- sources and flows ------------------------------------------------------------
    def dep_summary(self, expr: Expr | None, ctx: Ctx) -> DepSummary:
        """What `link` (graph_build) needs from `deps(expr, ctx)`, without enumerating its
        duplicates: each node's first occurrence (env nodes: each distinct read) and
        transform of its last occurrence, in the orders `deps` would give them. Memoised
        per (expr, equivalent ctx, depth): helpers whose locals and returns share
        subexpressions made `deps` yield 108k tuples for 446 edges on river."""
        return self._dep_summary(expr, ctx, 0)

    def _dep_summary(self, expr: Expr | None, ctx: Ctx, depth: int) -> DepSummary:
        if not expr or depth > _MAX_DEPTH:
            return _EMPTY_SUMMARY
        key = (id(expr), _ctx_full_key(ctx), depth)
        entry = self._summaries.get(key)
        if entry is None:
            # the entry keeps `expr` and `ctx` (and the argument exprs its key names by id)
            # alive: an expression built during a check (a decoded value, a substituted
            # argument) dies after it, and a new one at the same address would read a
            # stale summary (a finding that came and went from run to run)
            entry = self._summaries[key] = (expr, ctx, self._compute_summary(expr, ctx, depth))
        return entry[2]

    def _compute_summary(self, expr: Expr, ctx: Ctx, depth: int) -> DepSummary:
        k = expr.get("k")
        if k == "ref":
            sym = expr["sym"]
            if sym in ctx.subst:
                arg, arg_ctx = ctx.subst[sym]
                return self._dep_summary(arg, arg_ctx, depth + 1)
            if ctx.local(sym):
                return DepSummary.concat(
                    [self._dep_summary(b.expr, ctx, depth + 1) for b, _ in self.bindings.get(sym, ())[:8]]
                )
            return DepSummary.one(sym, expr, ctx, None)
        if k == "field":
            sym = self.resolve_field(expr, ctx)
            if self._wrapped(sym):
                return self._dep_summary(expr.get("x"), ctx, depth + 1)
            placed = self._config_read_at(sym, expr, ctx) if sym else None
            if placed is not None:  # the one key this access path reads
                return self._dep_summary(placed[0], placed[1], depth + 1)
            return DepSummary.one(sym, expr, ctx, None) if sym else _EMPTY_SUMMARY
        if k == "env":
            name = self.value(expr.get("name"), ctx)
            return DepSummary.one(f"env:{name}", expr, ctx, "env_read") if isinstance(name, str) else _EMPTY_SUMMARY
        if k == "cfg":
            return DepSummary.one(f"cfg:{expr.get('file') or '*'}#{expr.get('key')}", expr, ctx, "config_read")
        if k in ("item", "call"):
            read = self.document_read(expr, ctx)
            if read is not None:
                return self._dep_summary(read, ctx, depth + 1)
        if k == "num" and expr.get("at"):
            line, col = expr["at"][:2]
            return DepSummary.one(f"lit:{ctx.path}:{line}:{col}", expr, ctx, None)
        if k == "call":
            operand = self.string_transform(expr, ctx)
            if operand is not None:
                return self._dep_summary(operand, ctx, depth + 1)
            callee = self.resolve_callee(expr.get("fn"), ctx)
            if callee is None or callee in self._deps_active or len(self._deps_active) > 12:
                return _EMPTY_SUMMARY  # unresolved, or a recursive helper: no static source
            fn, path = self.functions[callee]
            inner = self.call_ctx(callee, expr, ctx)
            self._deps_active.add(callee)
            try:
                inner_summary = DepSummary.concat([self._dep_summary(ret, inner, depth + 1) for ret in fn.returns])
            finally:
                self._deps_active.discard(callee)
            via = f"call {callee.rsplit('.', 1)[-1]}"
            fallback: dict[str, Any] = {}

            def default_of_call() -> Any:
                # a helper's default is its other return: what the call gives unset
                if "v" not in fallback:
                    fallback["v"] = self.value(expr, ctx, "default")
                return fallback["v"]

            return inner_summary.mapped(lambda t: via if t in (None, "env_read") else t, default_of_call)
        if k in ("op", "conv", "or", "choice"):
            transform = _transform_of(expr)
            children = expr.get("args") or ([expr["x"]] if "x" in expr else [])
            return DepSummary.concat(
                [self._dep_summary(child, ctx, depth + 1) for child in children]
            ).mapped(lambda t: t or transform, None)
        return _EMPTY_SUMMARY

    def deps(self, expr: Expr | None, ctx: Ctx, depth: int = 0) -> Iterator[tuple[str, Expr, Ctx, str | None]]:
        """Direct graph sources of `expr`: (node id, the expr that names it, its ctx,
        transform). Summarised calls are looked through, so a helper's env read shows as
        the env node itself. (`dep_summary` gives the same, deduplicated and memoised;
        keep the two in step.)"""
        if not expr or depth > _MAX_DEPTH:
            return
        k = expr.get("k")
        if k == "ref":
            sym = expr["sym"]
            if sym in ctx.subst:
                arg, arg_ctx = ctx.subst[sym]
                yield from self.deps(arg, arg_ctx, depth + 1)
            elif ctx.local(sym):
                for b, _ in self.bindings.get(sym, ())[:8]:
                    yield from self.deps(b.expr, ctx, depth + 1)
            else:
                yield sym, expr, ctx, None
        elif k == "field":
            sym = self.resolve_field(expr, ctx)
            placed = self._config_read_at(sym, expr, ctx) if sym else None
            if self._wrapped(sym):
                yield from self.deps(expr.get("x"), ctx, depth + 1)
            elif placed is not None:  # the one key this access path reads
                yield from self.deps(placed[0], placed[1], depth + 1)
            elif sym:
                yield sym, expr, ctx, None
        elif k == "env":
            name = self.value(expr.get("name"), ctx)
            if isinstance(name, str):
                yield f"env:{name}", expr, ctx, "env_read"
        elif k == "cfg":
            yield f"cfg:{expr.get('file') or '*'}#{expr.get('key')}", expr, ctx, "config_read"
        elif k in ("item", "call") and self.document_read(expr, ctx) is not None:
            yield from self.deps(self.document_read(expr, ctx), ctx, depth + 1)
        elif k == "num" and expr.get("at"):
            line, col = expr["at"][:2]
            yield f"lit:{ctx.path}:{line}:{col}", expr, ctx, None
        elif k == "call":
            operand = self.string_transform(expr, ctx)
            if operand is not None:
                yield from self.deps(operand, ctx, depth + 1)
                return
            callee = self.resolve_callee(expr.get("fn"), ctx)
            if callee is not None and callee not in self._deps_active and len(self._deps_active) <= 12:
                self._deps_active.add(callee)
                try:
                    yield from self._call_deps(expr, ctx, callee, depth)
                finally:
                    self._deps_active.discard(callee)
        elif k in ("op", "conv", "or", "choice"):
            transform = _transform_of(expr)
            children = expr.get("args") or ([expr["x"]] if "x" in expr else [])
            for child in children:
                for dep in self.deps(child, ctx, depth + 1):
                    yield dep[0], dep[1], dep[2], dep[3] or transform

    def _call_deps(self, expr: Expr, ctx: Ctx, callee: str, depth: int) -> Iterator[tuple[str, Expr, Ctx, str | None]]:
        """The sources of a summarised call: its returns, with the call's arguments."""
        fn, path = self.functions[callee]
        inner = self.call_ctx(callee, expr, ctx)
        fallback = None
        for ret in fn.returns:
            for dep in self.deps(ret, inner, depth + 1):
                named = dep[1]
                if dep[0].startswith("env:") and _no_default(named):
                    # a helper's default is its other return: what the call gives unset
                    if fallback is None:
                        fallback = {"v": self.value(expr, ctx, "default")}
                    named = {**named, "default_value": fallback["v"]}
                via = f"call {callee.rsplit('.', 1)[-1]}"
                yield dep[0], named, dep[2], via if dep[3] in (None, "env_read") else dep[3]

    def sources(self, node: str) -> set[str]:
        """Root nodes (no incoming flows) that feed `node`."""
        if node not in self.g:
            return set()
        return {n for n in nx.ancestors(self.g, node) if self.g.in_degree(n) == 0}

    def flow_path(self, source: str, target: str) -> list[str]:
        try:
            return nx.shortest_path(self.g, source, target)
        except (nx.NetworkXNoPath, nx.NodeNotFound):
            return [target]

    # -- call graph -------------------------------------------------------------------
    def enclosing_chain(self, function: str | None) -> list[str]:
        """The function, then the functions it is written in (closures), innermost first."""
        chain: list[str] = []
        while function is not None and function not in chain and len(chain) < 8:
            chain.append(function)
            entry = self.functions.get(function)
            function = entry[0].enclosing if entry else None
        return chain

    def callees(self, fn_sym: str) -> set[str]:
        return set(self.callgraph.callees(fn_sym))

    def reachable(self, roots: list[str], limit: int = 400) -> set[str]:
        return self.callgraph.reachable(roots, limit)

    def bindings_by_function(self) -> dict[str, list[tuple[str, Binding, str]]]:
        """Function -> the (symbol, binding, path) written in its body, in source order
        (parameter defaults left out), built once: what a constructor sets, the values of
        external calls the facts keep only as what they are bound to."""
        key = ("_bindings_by_function",)
        found = self._memo.get(key)
        if found is None:
            found = {}
            for sym, binds in self.bindings.items():
                for b, path in binds:
                    if b.function and not b.is_default:
                        found.setdefault(b.function, []).append((sym, b, path))
            for writes in found.values():
                writes.sort(key=lambda item: (item[1].span.line, item[1].span.column))
            self._memo[key] = found
        return found

    def used_symbols(self, fn_sym: str) -> set[str]:
        """Fields/variables a function reads (its own uses, call receivers and args)."""
        if fn_sym not in self.functions:
            return set()
        key = ("_used", fn_sym)
        if key not in self._memo:
            self._memo[key] = self._used_symbols(fn_sym)
        return self._memo[key]

    def _used_symbols(self, fn_sym: str) -> set[str]:
        fn, path = self.functions[fn_sym]
        ctx = Ctx(path)
        found: set[str] = set()
        exprs = list(fn.uses)
        for call, _ in self.calls_in.get(fn_sym, ()):
            exprs.append(call.callee)
            exprs.extend(call.args)
        for expr in exprs:
            for sub in _walk(expr):
                sym = self.resolve_sym(sub, ctx)
                if sym:
                    found.add(sym)
        return found

    def carriers(self, site: SiteFact, path: str) -> set[str]:
        """Symbols that hold the object a site configures (the client field it is stored
        in, through locals, returns and constructor results)."""
        ctx = Ctx(path)
        start = self.resolve_sym(site.stored_in, ctx)
        todo = [start] if start else []
        todo += self._parameters_given(site, path)
        if site.function and site.function in self.functions:
            fn = self.functions[site.function][0]
            if start is None or any(self.resolve_sym(r, ctx) == start for r in fn.returns):
                todo.append(f"return:{site.function}")
        flows = self._holder_flows()
        found: set[str] = set()
        while todo and len(found) < 64:
            holder = todo.pop()
            if holder in found:
                continue
            found.add(holder)
            todo.extend(flows.get(holder, ()))
        return {s for s in found if not s.startswith("return:")}

    def _parameters_given(self, site: SiteFact, path: str) -> list[str]:
        """A client built inline as an argument (`Summarizer(AsyncOpenAI(timeout=…))`):
        the parameters of the program function it is given to hold it."""
        calls = [(c, p) for c, p in self.calls_in.get(site.function, ()) if p == path
                 and (c.span.line, c.span.column) <= (site.span.line, site.span.column)
                 and (site.span.end_line, site.span.end_column) <= (c.span.end_line, c.span.end_column)]
        # the site's own call (`AsyncOpenAI(…)` around its `timeout=`), where it starts
        starts = [[site.span.line, site.span.column]] + [[c.span.line, c.span.column] for c, _ in calls]
        found = []
        for call, _ in calls:
            given = [(i, a) for i, a in enumerate(call.args)] + list(call.kw.items())
            hits = [key for key, a in given if isinstance(a, dict) and a.get("k") == "call" and a.get("at") in starts]
            if not hits:
                continue
            callee = self.resolve_callee(call.callee, Ctx(path))
            fn = self.functions[callee][0] if callee in self.functions else None
            for key in hits if fn is not None else ():
                index = key if isinstance(key, int) else (fn.param_names.index(key) if key in fn.param_names else None)
                if index is not None and index < len(fn.params):
                    found.append(fn.params[index])
        return found

    def _holder_flows(self) -> dict[str, set[str]]:
        """Reverse index, built once: holder -> symbols bound from it (`x = holder`,
        `T{F: holder}`, `x = f()` for holder `return:f`)."""
        if "_holder_flows" in self._memo:
            return self._memo["_holder_flows"]
        flows: dict[str, set[str]] = defaultdict(set)
        for sym, binds in self.bindings.items():
            for b, path in binds:
                k = b.expr.get("k")
                if k in ("ref", "field"):
                    source = self.resolve_sym(b.expr, Ctx(path))
                    if source:
                        flows[source].add(sym)
                elif k == "call":
                    callee = self.resolve_callee(b.expr.get("fn"), Ctx(path))
                    if callee:
                        flows[f"return:{callee}"].add(sym)
                    for source in self._built_from(b.expr, path):
                        flows[source].add(sym)
        for fn_sym, (fn, path) in self.functions.items():
            for ret in fn.returns:  # a function returning a holder passes it on
                source = self.resolve_sym(ret, Ctx(path))
                if source:
                    flows[source].add(f"return:{fn_sym}")
                for source in self._built_from(ret, path):
                    flows[source].add(f"return:{fn_sym}")
        self._memo["_holder_flows"] = flows
        return flows

    def _built_from(self, expr: Expr, path: str) -> list[str]:
        """A library constructor's arguments (`openai.NewClientWithConfig(cfg)`,
        `resty.NewWithClient(hc)`, `aiohttp.ClientSession(timeout=cfg.timeout)`): what they
        hold, the object built from them holds too.
        Which names build their result from their arguments is catalog data (`[builders]`)."""
        fn = (expr.get("fn") or {}) if expr.get("k") == "call" else {}
        name = fn.get("name") if fn.get("k") in ("ext", "method") else None
        if not name:
            return []
        lang = "go" if self.lang.get(path) == "go" else "python"
        builders = self._memo.get(("builders", lang))
        if builders is None:
            builders = self._memo[("builders", lang)] = tuple(self.catalog.table(lang, "builders").get("names", ()))
        last = str(name).rsplit(".", 1)[-1]
        if not any(fnmatchcase(last, pattern) for pattern in builders):
            return []
        found = []
        for arg in [*(expr.get("args") or ()), *(expr.get("kw") or {}).values()]:
            source = self.resolve_sym(arg, Ctx(path)) if isinstance(arg, dict) else None
            if source:
                found.append(source)
        return found

    def http_handlers(self) -> set[str]:
        """Go functions (closures included) whose parameters make them request handlers
        (catalog `http.handlers.go_param_sets`)."""
        key = ("_handlers",)
        if key in self._memo:
            return self._memo[key]
        sets = [set(group) for group in self.catalog.file("http").get("handlers", {}).get("go_param_sets", [])]
        found = set()
        for sym, (fn, path) in self.functions.items():
            if self.lang.get(path) != "go":
                continue
            types = {self.decls[p].type for p in fn.params if p in self.decls and self.decls[p].type}
            if any(group <= types for group in sets):
                found.add(sym)
        self._memo[key] = found
        return found

    def spec(self, site: SiteFact) -> SiteSpec | None:
        return self.catalog.site(site.api)

    def go_version(self, path: str) -> str | None:
        facts = self.files.get(path)
        if facts and facts.module:
            best = max((m for m in self.go_versions if facts.module.startswith(m)), key=len, default=None)
            return self.go_versions.get(best) if best else None
        return None


# -- helpers ------------------------------------------------------------------------

def _canonicalise_python_names(facts: list[FileFacts]) -> None:
    """Python imports name modules as the importer sees them (`svc.lease`); a module's own
    name depends on where packages start (`lease` in a namespace package, or
    `src.svc.lease`). Rewrite imported names whose module is unknown to the one known
    module they end with (or that ends with them), so both sides meet."""
    modules = {f.module for f in facts if f.kind == "python" and f.module}
    if not modules:
        return
    by_suffix: dict[str, set[str]] = defaultdict(set)  # "lease" -> {"svc.lease", …}
    for m in modules:
        parts = m.split(".")
        for i in range(1, len(parts)):
            by_suffix[".".join(parts[i:])].add(m)
    memo: dict[str, str] = {}

    def canon_dotted(dotted: str) -> str:
        if dotted in memo:
            return memo[dotted]
        parts = dotted.split(".")
        result = dotted
        if not any(".".join(parts[:i]) in modules for i in range(len(parts), 0, -1)):
            for i in range(len(parts), 0, -1):
                mod = ".".join(parts[:i])
                hits = set(by_suffix.get(mod, ()))  # known modules that end with `mod`
                mod_parts = mod.split(".")
                hits.update(tail for tail in (".".join(mod_parts[j:]) for j in range(1, len(mod_parts)))
                            if tail in modules)  # known modules that `mod` ends with
                if len(hits) == 1:
                    result = ".".join([hits.pop(), *parts[i:]])
                    break
        memo[dotted] = result
        return result

    # A package re-exports a submodule's name (`from pkg.sub import X` in pkg/__init__.py):
    # `pkg.X` stands for the one module-level `pkg.<…>.X` defined below it.
    defined = {d.sym[7:] for f in facts if f.kind == "python" for d in f.decls
               if d.kind in ("class", "func", "var", "const") and d.sym.startswith("sym:py:")}
    below: dict[tuple[str, str], set[str]] = defaultdict(set)
    for full in defined:
        mod, _, name = full.rpartition(".")
        if mod in modules:
            parts = mod.split(".")
            for i in range(1, len(parts)):
                below[(".".join(parts[:i]), name)].add(full)

    def reexported(dotted: str) -> str:
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            mod = ".".join(parts[:i])
            if mod in modules:
                head = f"{mod}.{parts[i]}"
                hits = below.get((mod, parts[i]), ())
                if head not in defined and len(hits) == 1:
                    return ".".join([next(iter(hits)), *parts[i + 1:]])
                break
        return dotted

    canonical: dict[str, str] = {}  # the same few thousand names recur across all exprs

    def canon(value: str) -> str:
        found = canonical.get(value)
        if found is None:
            if value.startswith("sym:py:"):
                found = "sym:py:" + reexported(canon_dotted(value[7:]))
            elif value.startswith("py:"):
                found = "py:" + reexported(canon_dotted(value[3:]))
            else:
                found = value
            canonical[value] = found
        return found

    def fix(expr) -> None:
        # iterative: one pass over every expression of the tree, nested to any depth
        stack = [expr]
        pop, push = stack.pop, stack.append
        while stack:
            item = pop()
            if item.__class__ is dict:
                for key, value in item.items():
                    cls = value.__class__
                    if cls is str:
                        if key == "sym" or key == "type":
                            fixed = canon(value)
                            if fixed is not value:
                                item[key] = fixed
                    elif cls is dict or cls is list:
                        push(value)
            elif item.__class__ is list:
                for value in item:
                    if value.__class__ is dict or value.__class__ is list:
                        push(value)

    for f in facts:
        if f.kind != "python":
            continue
        for d in f.decls:
            if d.type:
                d.type = canon(d.type)
            fix(d.type_of)
        for b in f.bindings:
            b.sym = canon(b.sym)
            fix(b.expr)
        for fn in f.functions:
            fn.receiver_type = canon(fn.receiver_type) if fn.receiver_type else None
            fn.result_type = canon(fn.result_type) if fn.result_type else None
            fix(fn.returns)
            fix(fn.uses)
            fix([m for m in fn.markers if m.get("m") == "streams_body_of"])
        for c in f.calls:
            fix(c.callee)
            fix(c.args)
            fix(c.kw)
        for site in f.sites:
            fix(site.value)
            fix(site.stored_in)


def to_seconds(value: Any, unit: str | None) -> float | None:
    if isinstance(value, Quantity):
        return value.to_seconds(unit)
    if isinstance(value, str):
        return parse_duration_text(value, default_unit=unit if unit == "s" else None)
    return None


def _agree(values: list[Any]) -> Any:
    known = [v for v in values if v is not None]
    if not known:
        return None
    first = known[0]
    for v in known[1:]:
        if isinstance(v, Quantity) and isinstance(first, Quantity):
            if v.unit != first.unit or abs(v.value - first.value) > 1e-9 * max(1.0, abs(first.value)):
                return None
        elif v != first:
            return None
    return first


def _at(expr: Expr, ctx: Ctx) -> tuple[str, int, int] | None:
    at = expr.get("at")
    return (ctx.path, at[0], at[1]) if at else None


def _ctx_key(ctx: Ctx) -> tuple:
    """What `deps` results depend on in a ctx: its file, its summarised function and its
    argument expressions with their own ctxs (exprs live as long as the facts; the key is
    kept on the ctx, which is never changed after it is made)."""
    key = ctx.__dict__.get("_deps_key")
    if key is None:
        key = (ctx.path, ctx.fn, tuple(sorted((k, id(e), _ctx_key(c)) for k, (e, c) in ctx.subst.items())))
        ctx.__dict__["_deps_key"] = key
    return key


def _ctx_full_key(ctx: Ctx) -> tuple:
    """Everything in a ctx that `deps` output depends on, `call_at` included."""
    key = ctx.__dict__.get("_full_key")
    if key is None:
        key = (ctx.path, ctx.fn, ctx.call_at,
               tuple(sorted((k, id(e), _ctx_full_key(c)) for k, (e, c) in ctx.subst.items())))
        ctx.__dict__["_full_key"] = key
    return key


@dataclass(frozen=True)
class DepSummary:
    """`deps` output, deduplicated the way `link` consumes it (graph_build.populate):
    `items` - occurrence key -> (node, named expr, ctx), first occurrences in order; an
    env node has one entry per distinct read (named expr, its default, ctx), any other
    node one entry; `last` - node -> transform of its last occurrence, in the order of
    last occurrences."""

    items: dict[tuple, tuple[str, Expr, Ctx]]
    last: dict[str, str | None]

    @staticmethod
    def one(node: str, named: Expr, ctx: Ctx, transform: str | None) -> DepSummary:
        return DepSummary({_occurrence(node, named, ctx): (node, named, ctx)}, {node: transform})

    @staticmethod
    def concat(parts: list[DepSummary]) -> DepSummary:
        parts = [p for p in parts if p.last]
        if len(parts) <= 1:
            return parts[0] if parts else _EMPTY_SUMMARY
        items: dict[tuple, tuple[str, Expr, Ctx]] = {}
        last: dict[str, str | None] = {}
        for part in parts:
            for key, item in part.items.items():
                items.setdefault(key, item)
            for node, transform in part.last.items():
                last.pop(node, None)  # moves to the end: the later occurrence
                last[node] = transform
        return DepSummary(items, last)

    def mapped(self, transform: Any, env_default: Any) -> DepSummary:
        """Each occurrence's transform through `transform`; with `env_default` (a call
        looked through), env reads without a default of their own get the call's."""
        if not self.last:
            return self
        items = self.items
        if env_default is not None:
            items = {}
            for key, (node, named, ctx) in self.items.items():
                if node.startswith("env:") and _no_default(named):
                    named = {**named, "default_value": env_default(), "_base": named.get("_base", named)}
                    key = _occurrence(node, named, ctx)
                items.setdefault(key, (node, named, ctx))
        return DepSummary(items, {node: transform(t) for node, t in self.last.items()})


def _no_default(named: Expr) -> bool:
    """An env read with no default of its own: none given, or an empty one
    (`os.getenv(name, "").strip()`, which a helper then tests and replaces)."""
    default = named.get("default")
    return default is None or (default.get("k") == "str" and not default.get("v")) or default.get("k") == "none"


def _occurrence(node: str, named: Expr, ctx: Ctx) -> tuple:
    if not node.startswith("env:"):
        return (node,)
    base = named.get("_base", named)
    default = id(named["default_value"]) if "default_value" in named else None
    return (node, id(base), default, _ctx_full_key(ctx))


_EMPTY_SUMMARY = DepSummary({}, {})




def _transform_of(expr: Expr) -> str:
    transform = expr.get("op") or expr.get("t") or ("choice" if expr.get("k") == "choice" else "or")
    args = expr.get("args") or []
    if transform == "div" and len(args) == 2 and (args[1] or {}).get("k") == "num" and (args[1] or {}).get("u") == "ns":
        return "unit_count"  # a Duration counted in a unit (`d / time.Second`): the same duration
    return transform


def _type_of_sym(sym: str) -> str:
    body = sym.split(":", 2)
    return f"py:{body[2]}" if body[1] == "py" else body[2]
