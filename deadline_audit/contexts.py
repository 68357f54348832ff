"""Go context derivation (SPEC §2 `ctx:` nodes, `derives` edges), shared by DA201/DA202.

`ContextFlow.origin(expr, …)` follows a context value backwards — assignments (the last
binding before the use), `context.With*`, struct fields, closures, parameters across calls
and packages, functions that return a context — to its root:

- `request`: cancelled by the client or the end of the response (`r.Context()`, gin/echo
  request contexts, a gRPC handler's `ctx`; catalog `terminal_writes.go.request_contexts`);
- `deadline`: a `context.WithTimeout/WithDeadline` whose parent never cancels (or is
  unknown): it bounds whatever uses it, so the check asks whether it also bounds work;
- `detached`: a detaching step is on the path (`context.WithoutCancel`, `Background`,
  `TODO`, a value of a type whose `Done()` returns nil — found structurally);
- `unknown`: anything else. Unknown means no link, and no link means no finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any

from deadline_audit.facts import Expr
from deadline_audit.findings import Location
from deadline_audit.graph import Ctx, TimeoutGraph, _walk

_MAX_DEPTH = 24


@dataclass(frozen=True)
class Step:
    """One derivation step, root first: what happened to the context and where."""

    label: str
    location: Location | None


@dataclass(frozen=True)
class Origin:
    kind: str  # request | deadline | detached | unknown
    root: str = ""  # "r.Context()", "context.WithTimeout", …
    steps: tuple[Step, ...] = ()  # root first
    deadlines: tuple[str, ...] = ()  # site ids of context deadlines on the path, root first
    bound_sym: str | None = None  # deadline roots: the variable holding the deadline context
    bound_in: str | None = None  # …and the function that created it
    bound_line: int = 0  # …and the last line of the statement that bound it there
    via: tuple[tuple[str, int, int], ...] = ()  # calls whose argument carried the context

    def then(self, label: str, location: Location | None) -> "Origin":
        return replace(self, steps=self.steps + (Step(label, location),))


UNKNOWN = Origin("unknown")
_SYMBOL_BUDGET = 4000  # symbols one origin query may look at
_RANK = {"request": 3, "deadline": 2, "detached": 1, "unknown": 0}


@dataclass
class _Use:
    path: str
    fn: str | None  # function where the expression is evaluated
    line: int  # line of the use (bindings after it do not apply)
    subst: dict[str, "_Use | tuple"] = field(default_factory=dict)


class ContextFlow:
    def __init__(self, graph: TimeoutGraph) -> None:
        self._budget = _SYMBOL_BUDGET
        self.graph = graph
        k = graph.catalog.file("terminal_writes").get("go", {})
        self.request_contexts = [(e["type"], tuple(e["chain"])) for e in k.get("request_contexts", ())]
        self.detaching = set(k.get("detaching", ()))
        self.deadline_calls = set(k.get("deadline_derivations", ()))
        self.plain_calls = set(k.get("plain_derivations", ()))
        self.plain_methods = {e["method"]: tuple(w.lower() for w in e.get("receiver_words", ()))
                              for e in k.get("plain_derivation_methods", ())}
        self.nil_done = self._nil_done_types()
        self.grpc = self._grpc_receivers(k.get("grpc_server_embeds", ()))
        self.resolvers = tuple(k.get("graphql_resolver_types", ()))
        self.grpc_streams = tuple(k.get("grpc_stream_types", ()))
        self._sites_by_line: dict[tuple[str, int], list] = {}
        for site, path in graph.sites:
            if site.role == "context_deadline":
                self._sites_by_line.setdefault((path, site.span.line), []).append(site)

    @classmethod
    def of(cls, graph: TimeoutGraph) -> "ContextFlow":
        """The graph's one instance (origins are memoised; the graph build and the DA20x
        checks follow the same contexts)."""
        key = ("_context_flow",)
        found = graph._memo.get(key)
        if found is None:
            found = graph._memo[key] = cls(graph)
        return found

    # -- structure found once ---------------------------------------------------------
    def _nil_done_types(self) -> set[str]:
        """Types whose `Done()` returns nil: the hand-written WithoutCancel (Go < 1.21)."""
        found = set()
        for sym, (fn, _) in self.graph.functions.items():
            if sym.endswith(".Done") and fn.receiver_type and fn.returns \
                    and all(r.get("k") == "none" for r in fn.returns):
                found.add(fn.receiver_type)
        return found

    def _grpc_receivers(self, patterns: Any) -> set[str]:
        found = set()
        for sym, decl in self.graph.decls.items():
            if decl.kind == "field" and decl.embedded and decl.type \
                    and any(fnmatchcase(decl.type, p) for p in patterns):
                found.add(sym.split(":", 2)[-1].rsplit(".", 1)[0])
        return found

    def is_grpc_handler(self, fn_sym: str) -> bool:
        """A method of a gRPC server type with a handler's shape: `(ctx, *pb.Request)` for
        a unary call, answering a message (a stream handler has no ctx parameter). A method of that type taking
        something else (`IngestResult(ctx, data []byte)`) is the program's own, called
        with the program's contexts."""
        entry = self.graph.functions.get(fn_sym)
        if not entry or entry[0].receiver_type not in self.grpc or len(entry[0].params) != 2:
            return False
        ctx, req = (self.graph.decls.get(p) for p in entry[0].params)
        request = (req.type or "") if req else ""
        return bool(ctx and ctx.type == "context.Context" and "." in request
                    and not request.startswith(("[", "map[", "func", "chan")) and entry[0].result_type != "error")

    def is_resolver(self, fn_sym: str) -> bool:
        """A method of a generated GraphQL resolver type (catalog `graphql_resolver_types`)."""
        entry = self.graph.functions.get(fn_sym)
        owner = entry[0].receiver_type if entry else None
        return bool(owner) and any(fnmatchcase(owner, p) for p in self.resolvers)

    # -- the query --------------------------------------------------------------------
    def origin(self, expr: Expr | None, path: str, fn: str | None, line: int) -> Origin:
        self._budget = _SYMBOL_BUDGET
        return self._origin(expr, _Use(path, fn, line), 0, frozenset())

    def origin_in_callee(self, expr: Expr | None, callee: str, line: int, args: list[Expr],
                         caller_path: str, caller_fn: str | None, caller_line: int,
                         within: str | None = None) -> Origin:
        """The origin of `expr`, evaluated at `line` inside `callee` (or a closure of it,
        `within`), whose parameters are the `args` of one call (a `go f(job)` statement):
        that call's values only."""
        fn, path = self.graph.functions[callee]
        caller = _Use(caller_path, caller_fn, caller_line)
        subst = {p: (a, caller) for p, a in zip(fn.params, args)}
        self._budget = _SYMBOL_BUDGET
        return self._origin(expr, _Use(path, within or callee, line, subst), 0, frozenset())

    def _origin(self, expr: Expr | None, use: _Use, depth: int, seen: frozenset) -> Origin:
        if not expr or depth > _MAX_DEPTH:
            return UNKNOWN
        k = expr.get("k")
        at = _loc(use.path, expr)
        if k == "call":
            return self._call(expr, use, depth, seen, at)
        if k == "obj":
            if expr.get("type") in self.nil_done:
                return Origin("detached", _short(expr["type"]) + "{…}", (Step(f"{_short(expr['type'])} (Done() returns nil)", at),))
            return UNKNOWN
        if k == "field":
            literal = self._literal(expr.get("x"), use, depth)
            if literal is not None and expr["name"] in literal[0].get("fields", {}):
                obj, where = literal
                found = self._origin(obj["fields"][expr["name"]], where, depth + 1, seen)
                return found.then(f"carried in {_short(obj.get('type') or '')}.{expr['name']}", at) \
                    if found.kind != "unknown" else found
            sym = self.graph.resolve_sym(expr, Ctx(use.path))
            return self._symbol(sym, use, depth, seen) if sym else UNKNOWN
        if k == "ref":
            return self._symbol(expr["sym"], use, depth, seen)
        return UNKNOWN

    def _call(self, expr: Expr, use: _Use, depth: int, seen: frozenset, at: Location | None) -> Origin:
        callee = expr.get("fn") or {}
        args = expr.get("args") or []
        if callee.get("k") == "ext":
            name = callee["name"]
            if name in self.detaching:
                return Origin("detached", f"{name}()", (Step(f"{name}()", at),))
            if name in self.deadline_calls and args:
                parent = self._origin(args[0], use, depth + 1, seen)
                site = self._deadline_site(use.path, expr, args)
                deadlines = parent.deadlines + ((site,) if site else ())
                if parent.kind == "request":
                    return replace(parent, deadlines=deadlines).then(name, at)
                # a deadline on a parent of unknown origin starts the flow afresh
                before = parent.steps if parent.kind != "unknown" else ()
                return Origin("deadline", name, before + (Step(name, at),), deadlines, via=parent.via)
            if name in self.plain_calls and args:
                return self._origin(args[0], use, depth + 1, seen).then(name, at)
            return UNKNOWN
        root = self._request_root(expr, use.path)
        if root is not None:
            return Origin("request", root, (Step(root, at),))
        if args and self._plain_method(callee):
            return self._origin(args[0], use, depth + 1, seen).then(f"{callee['name']}(ctx, …)", at)
        target = self.graph.resolve_callee(callee, Ctx(use.path))
        if target and target not in seen:
            fn, path = self.graph.functions[target]
            subst = {p: (a, use) for p, a in zip(fn.params, args)}
            inner = _Use(path, target, 10**9, subst)
            found = [self._origin(r, inner, depth + 1, seen | {target}) for r in fn.returns]
            best = _worst(found)
            return best.then(f"returned by {_short(target)}", at) if best.kind != "unknown" else best
        return UNKNOWN

    def _plain_method(self, callee: Expr) -> bool:
        """A method that returns its first argument's context, derived (catalog
        `plain_derivation_methods`): named so, on a receiver whose name holds the word."""
        words = self.plain_methods.get(callee.get("name", "")) if callee.get("k") == "method" else None
        if not words:
            return False
        x, names = callee.get("x"), []
        for _ in range(4):  # `tracer`, `s.tracer`, `otel.Tracer("svc")`
            if not isinstance(x, dict):
                break
            fn = x.get("fn") or {}
            names.append(str(x.get("name") or x.get("sym") or fn.get("name") or fn.get("sym") or ""))
            x = x.get("x") if x.get("k") != "call" else fn.get("x")
        return any(w in n.rsplit("/", 1)[-1].lower() for n in names for w in words)

    def _literal(self, expr: Expr | None, use: _Use, depth: int) -> tuple[Expr, _Use] | None:
        """The struct literal a value is, when this very value is known: the argument a
        parameter was given, or a local's last binding before the use."""
        for _ in range(4):
            if not isinstance(expr, dict):
                return None
            if expr.get("k") == "obj":
                return expr, use
            if expr.get("k") != "ref":
                return None
            sym = expr["sym"]
            if sym in use.subst:
                expr, use = use.subst[sym]
                continue
            decl = self.graph.decls.get(sym)
            if decl is None or decl.kind != "local" or not use.fn:
                return None
            mine = [(b, p) for b, p in self.graph.bindings.get(sym, ()) if b.function and _inside(use.fn, b.function)
                    and b.span.line <= use.line]
            if not mine:
                return None
            b, p = max(mine, key=lambda bp: (bp[0].span.line, bp[0].span.column))
            expr, use = b.expr, _Use(p, b.function, b.span.line, use.subst)
        return None

    def _deadline_site(self, path: str, call: Expr, args: list[Expr]) -> str | None:
        """The context_deadline site of a `WithTimeout` call: at its duration argument."""
        if len(args) > 1 and args[1].get("at"):
            return _site_id(path, args[1])
        at = call.get("at")
        if not at:
            return None
        on_line = [s for s in self._sites_by_line.get((path, at[0]), ()) if s.span.column >= at[1]]
        return min(on_line, key=lambda s: s.span.column).id if on_line else None

    def _request_root(self, expr: Expr, path: str) -> str | None:
        """`r.Context()`, `c.Request.Context()`, `c.Request().Context()` on a request type."""
        names: list[str] = []
        x: Any = expr
        while isinstance(x, dict):
            if x.get("k") == "call" and (x.get("fn") or {}).get("k") == "method":
                names.insert(0, x["fn"]["name"])
                x = x["fn"].get("x")
            elif x.get("k") == "field":
                names.insert(0, x["name"])
                x = x.get("x")
            else:
                break
        if not names or not isinstance(x, dict) or x.get("k") != "ref":
            return None
        sym = x["sym"]
        candidates = [(self.graph.type_of(x, Ctx(path)), names, sym.rsplit(".", 1)[-1])]
        if sym not in self.graph.decls and sym.startswith("sym:go:"):
            owner, _, member = sym[7:].rpartition(".")  # a field of an external type
            candidates.append((owner, [member, *names], _short(owner)))
        for type_name, chain, base in candidates:
            if type_name and (type_name, tuple(chain)) in self.request_contexts:
                return f"{base}.{'.'.join(chain)}()"
        if names == ["Context"] and self._grpc_stream(sym):
            return f"gRPC stream {sym.rsplit('.', 1)[-1]}.Context()"
        return None

    def _grpc_stream(self, sym: str) -> bool:
        """A streaming RPC's stream parameter (`stream pb.Gateway_ConnectServer`, catalog
        `grpc_stream_types`) of a method of a gRPC server: its Context() ends with the call."""
        decl = self.graph.decls.get(sym)
        if decl is None or decl.kind != "param" or not decl.type:
            return False
        owner = sym.rsplit(".", 1)[0]
        entry = self.graph.functions.get(owner)
        return bool(entry and entry[0].receiver_type in self.grpc
                    and any(fnmatchcase(decl.type.lstrip("*"), p) for p in self.grpc_streams))

    def _symbol(self, sym: str, use: _Use, depth: int, seen: frozenset) -> Origin:
        if sym in use.subst:
            arg, caller = use.subst[sym]
            return self._origin(arg, caller, depth + 1, seen)
        # `ctx, cancel = context.WithTimeout(ctx, d)` reads the binding before it, which is no
        # cycle: a symbol is met again only at a strictly earlier line (so the walk ends), and
        # within a budget of symbols per query (so a long function of rebindings stays cheap)
        earlier = [e[1] for e in seen if e.__class__ is tuple and e[0] == sym]
        self._budget -= 1
        if earlier and use.line >= min(earlier) or self._budget < 0:
            return UNKNOWN
        seen = seen | {(sym, use.line)}
        graph = self.graph
        decl = graph.decls.get(sym)
        if decl is not None and decl.type in self.nil_done:
            return Origin("detached", _short(decl.type), (Step(f"{_short(decl.type)} (Done() returns nil)", None),))
        binds = graph.bindings.get(sym, ())
        owner = sym.rsplit(".", 1)[0] if decl is not None and decl.kind in ("param", "local") else None
        if owner is not None and owner in graph.functions:
            mine = [(b, p) for b, p in binds if b.function and _inside(b.function, owner)
                    and (b.span.line < use.line or not (use.fn and _inside(use.fn, owner)))]
            if mine:
                b, p = max(mine, key=lambda bp: (bp[0].span.line, bp[0].span.column))
                # (the same call's arguments still stand for the function's parameters:
                # `ctx, cancel := context.WithTimeout(ctx, d)` inside a `go f(detached)`)
                found = self._origin(b.expr, _Use(p, b.function, b.span.line, use.subst), depth + 1, seen)
                if found.kind == "deadline" and found.bound_sym is None:
                    found = replace(found, bound_sym=sym, bound_in=owner, bound_line=b.span.end_line)
                return found.then(f"{_short(sym)} :=", Location(p, b.span.line, b.span.column))
            if decl.kind != "param":
                return UNKNOWN
            if self.is_grpc_handler(owner) and decl.type == "context.Context":
                where = Location(graph.decl_path[sym], decl.span.line, decl.span.column)
                return Origin("request", f"gRPC ctx of {_short(owner)}", (Step(f"gRPC handler ctx ({_short(owner)})", where),))
            if decl.type == "context.Context" and self.is_resolver(owner):
                where = Location(graph.decl_path[sym], decl.span.line, decl.span.column)
                return Origin("request", f"GraphQL resolver ctx of {_short(owner)}",
                              (Step(f"GraphQL resolver ctx ({_short(owner)})", where),))
            callers = [(b, p) for b, p in binds if not (b.function and _inside(b.function, owner))]
            found = []
            for b, p in callers[:16]:
                o = self._origin(b.expr, _Use(p, b.function, b.span.line), depth + 1, seen)
                found.append(replace(o, via=o.via + ((p, b.span.line, b.span.column),)).then(
                    f"passed as {sym.rsplit('.', 1)[-1]} to {_short(owner)}", Location(p, b.span.line, b.span.column)))
            return _worst(found)
        found = []  # a struct field or package variable: every binding is a way in
        for b, p in binds[:16]:
            o = self._origin(b.expr, _Use(p, b.function, b.span.line), depth + 1, seen)
            found.append(o.then(f"stored in {_short(sym)}", Location(p, b.span.line, b.span.column)))
        return _worst(found)


def _worst(found: list[Origin]) -> Origin:
    """The most dangerous way in (precision: each one is a real path of the program)."""
    return max(found, key=lambda o: _RANK[o.kind], default=UNKNOWN)


def _inside(fn: str, owner: str) -> bool:
    return fn == owner or fn.startswith(owner + ".func@")


def _site_id(path: str, expr: Expr) -> str | None:
    at = expr.get("at") if isinstance(expr, dict) else None
    return f"site:{path}:{at[0]}:{at[1]}" if at else None


def _loc(path: str, expr: Expr) -> Location | None:
    at = expr.get("at")
    return Location(path, at[0], at[1]) if at else None


def _short(sym: str) -> str:
    body = sym.split(":", 2)[-1]
    return body.rsplit("/", 1)[-1]


def uses_symbol(expr: Expr, sym: str) -> bool:
    return any(e.get("k") == "ref" and e.get("sym") == sym for e in _walk(expr))
