"""DA102 links: from a deadline site to the streams it covers (graph queries only).

Server → handlers: the `http.Server` literal the WriteTimeout belongs to gives its
`Handler`; a mux gives the handlers registered on it (`route` markers); calls are looked
through (a router built by a function, a handler returned by a factory, a middleware
wrapping the mux). Unresolved → the one-server-per-module fallback (SPEC §4).
"""

from __future__ import annotations

from dataclasses import dataclass

from deadline_audit.analysis.instances import object_fields
from deadline_audit.facts import Expr, SiteFact, receiver_chain
from deadline_audit.graph import Ctx, TimeoutGraph



@dataclass
class Stream:
    name: str  # the handler / call that streams, short
    note: str  # related-location message
    path: str
    line: int
    col: int


# -- server write deadline -------------------------------------------------------------

def streaming_handlers(graph: TimeoutGraph, site: SiteFact, path: str) -> list[Stream]:
    handlers = served_handlers(graph, site, path)
    if handlers is None:
        module = _module_of(graph, path)
        if _servers(graph).get(module, 0) != 1:
            return []  # several servers and no resolvable mux: no link, no finding
        handlers = {h for h in graph.http_handlers() if _module_of(graph, graph.functions[h][1]) == module}
    found = []
    for handler in sorted(handlers):
        reach = graph.reachable([handler])
        marks = [(m, graph.functions[f][1]) for f in sorted(reach) for m in graph.functions[f][0].markers]
        writes = [(m, p) for m, p in marks if m.get("m") == "stream_write"]
        if writes and not any(m.get("m") == "write_deadline_lift" for m, _ in marks):
            m, p = writes[0]
            name = _short(handler)
            found.append(Stream(name, f"{name} streams here ({m.get('how')}) without lifting the write deadline",
                                p, m["line"], m["col"]))
    return found


def served_handlers(graph: TimeoutGraph, site: SiteFact, path: str) -> set[str] | None:
    literal = _server_literal(graph, site, path)
    assigned = _assigned_handlers(graph, site, path)
    if literal is None and not assigned:
        return None
    handler = literal.get("fields", {}).get("Handler") if literal is not None else None
    if (handler is None or handler.get("k") == "none") and assigned:
        return _union(handlers_of(graph, h, Ctx(p), 0) for h, p in assigned)
    if handler is None or handler.get("k") == "none":
        handler = {"k": "ref", "sym": f"sym:go:{_default_mux(graph)}"}
    return handlers_of(graph, handler, Ctx(path), 0)


def _assigned_handlers(graph: TimeoutGraph, site: SiteFact, path: str) -> list[tuple[Expr, str]]:
    """`srv.Handler = h` written after the literal (`server_handler` markers) on the
    variable or field the server is stored in."""
    holder = graph.resolve_sym(site.stored_in, Ctx(path))
    if holder is None:
        return []
    key = ("_da102_assigned",)
    if key not in graph._memo:
        index: dict[str, list[tuple[Expr, str]]] = {}
        for fn, fpath in graph.functions.values():
            for m in fn.markers:
                if m.get("m") == "server_handler":
                    server = graph.resolve_sym(m["server"], Ctx(fpath))
                    if server is not None:
                        index.setdefault(server, []).append((m["handler"], fpath))
        graph._memo[key] = index
    return list(graph._memo[key].get(holder, ()))


def handlers_of(graph: TimeoutGraph, expr: Expr | None, ctx: Ctx, depth: int) -> set[str] | None:
    """Handler functions an expression stands for; None when it cannot be resolved."""
    if not expr or depth > 8:
        return None
    k = expr.get("k")
    if k in ("ref", "field", "fnref", "method"):
        target = graph.resolve_callee(expr if k != "field" else {**expr, "k": "method"}, ctx)
        if target is not None:
            return {target}
        sym = graph.resolve_sym(expr, ctx) if k in ("ref", "field") else None
        if sym is None:
            return None
        served = _serving_methods(graph, graph.type_of(expr, ctx))  # a handler object (`relay := NewSSERelay(…)`)
        if served:
            return served
        if sym == f"sym:go:{_default_mux(graph)}":
            routes = _default_routes(graph, ctx.path)
            return _union(handlers_of(graph, h, Ctx(p), depth + 1) for h, p in routes) if routes else None
        routes = _routes(graph).get(sym)
        if routes:
            return _union(handlers_of(graph, h, Ctx(p), depth + 1) for h, p in routes)
        binds = graph.bindings.get(sym, ())[:4]
        return _union(handlers_of(graph, b.expr, Ctx(p), depth + 1) for b, p in binds) if binds else None
    if k == "obj":  # `&SSERelay{…}`: a value whose type serves HTTP itself
        return _serving_methods(graph, expr.get("type")) or None
    if k == "call":
        callee = expr.get("fn") or {}
        target = graph.resolve_callee(callee, ctx)
        parts = [handlers_of(graph, a, ctx, depth + 1) for a in expr.get("args", ())]
        if target is not None:  # a router builder, a handler factory, a middleware
            fn, fpath = graph.functions[target]
            inner = Ctx(fpath, graph.call_subst(fn, expr, ctx), None, target)
            parts += [handlers_of(graph, r, inner, depth + 1) for r in fn.returns]
        elif not _is_wrapper(graph, callee):
            return None
        return _union(parts)
    return None


def _serving_methods(graph: TimeoutGraph, type_name: str | None) -> set[str]:
    """The methods by which a value of `type_name` serves a route (catalog streams.toml
    `handler_methods`)."""
    if not type_name:
        return set()
    names = graph.catalog.file("streams").get("go", {}).get("handler_methods", ())
    return {m for m in (f"sym:go:{type_name}.{n}" for n in names) if m in graph.functions}


def _union(parts) -> set[str] | None:
    found, resolved = set(), False
    for part in parts:
        if part is not None:
            resolved = True
            found |= part
    return found if resolved else None


def _is_wrapper(graph: TimeoutGraph, callee: Expr) -> bool:
    wrappers = graph.catalog.file("streams").get("go", {}).get("handler_wrappers", ())
    name = callee.get("name") or callee.get("sym", "").removeprefix("sym:go:")
    return name in wrappers


def _server_literal(graph: TimeoutGraph, site: SiteFact, path: str) -> Expr | None:
    """The `http.Server{…}` literal whose WriteTimeout this site is."""
    ctx = Ctx(path)
    candidates = []
    holder = graph.resolve_sym(site.stored_in, ctx)
    if holder:
        candidates += [b.expr for b, _ in graph.bindings.get(holder, ())]
    if site.function in graph.functions:
        candidates += graph.functions[site.function][0].returns
    spec = graph.spec(site)
    if spec is None:
        return None
    for expr in candidates:
        if expr.get("k") == "obj" and expr.get("type") == spec.type and \
                expr.get("fields", {}).get(spec.field) == site.value:
            return expr
    return None


def _routes(graph: TimeoutGraph) -> dict[str, list[tuple[Expr, str]]]:
    """mux symbol → [(handler expr, path)], built once from the `route` markers."""
    key = ("_da102_routes",)
    if key not in graph._memo:
        routes: dict[str, list[tuple[Expr, str]]] = {}
        default = f"sym:go:{_default_mux(graph)}"
        parent: dict[str, str] = {}  # sub-router parameter → the mux it registers on
        for fn, path in graph.functions.values():
            for m in fn.markers:
                if m.get("m") == "mux_alias":
                    mux = graph.resolve_sym(m["mux"], Ctx(path))
                    if mux is not None:
                        parent[m["alias"]["sym"]] = mux

        factories = set(graph.catalog.file("streams").get("go", {}).get("subrouter_factories", ()))

        def strip(expr: Expr | None) -> Expr | None:
            """`r.PathPrefix("/api").Subrouter()`, `r.With(mw)` → `r`."""
            for _ in range(8):
                fn = (expr or {}).get("fn") or {}
                if not (isinstance(expr, dict) and expr.get("k") == "call" and fn.get("k") == "method"
                        and fn.get("name") in factories):
                    break
                expr = fn.get("x")
            return expr

        def root(mux: str | None) -> str | None:
            for _ in range(8):
                if mux is not None and mux not in parent:
                    for b, bpath in graph.bindings.get(mux, ())[:2]:  # api := r.PathPrefix(…).Subrouter()
                        base = strip(b.expr)
                        if base is not b.expr:
                            found = graph.resolve_sym(base, Ctx(bpath))
                            if found is not None and found != mux:
                                parent[mux] = found
                                break
                if mux not in parent:
                    break
                mux = parent[mux]
            return mux

        for fn, path in graph.functions.values():
            for m in fn.markers:
                if m.get("m") == "route":
                    mux = root(graph.resolve_sym(strip(m["mux"]), Ctx(path)))
                    if mux == default:
                        mux = _default_key(graph, path)
                    if mux:
                        routes.setdefault(mux, []).append((m["handler"], path))
        _through_registrars(graph, routes, strip, root, default)
        graph._memo[key] = routes
    return graph._memo[key]


def _through_registrars(graph: TimeoutGraph, routes: dict[str, list[tuple[Expr, str]]],
                        strip, root, default: str) -> None:
    """A function that registers routes on its mux parameter (`api.Routes(r)`,
    `RegisterHandlers(e, svc)`): its routes belong to the mux each call passes."""
    params: dict[str, tuple[int, str]] = {}
    for mux in list(routes):
        owner = graph.functions.get(mux.rsplit(".", 1)[0])
        if owner is not None and mux in owner[0].params:
            params[mux.rsplit(".", 1)[0]] = (owner[0].params.index(mux), mux)
    if not params:
        return
    names = {fn.rsplit(".", 1)[-1] for fn in params}
    for calls in graph.calls_in.values():
        for call, cpath in calls:
            name = call.callee.get("name") or call.callee.get("sym", "").rsplit(".", 1)[-1]
            if name not in names:
                continue
            target = graph.resolve_callee(call.callee, Ctx(cpath))
            if target not in params or params[target][0] >= len(call.args):
                continue
            index, inner = params[target]
            outer = root(graph.resolve_sym(strip(call.args[index]), Ctx(cpath)))
            if outer == default:
                outer = _default_key(graph, cpath)
            if outer and outer != inner:
                routes.setdefault(outer, []).extend(routes[inner])


def _servers(graph: TimeoutGraph) -> dict[str, int]:
    """Go module → how many `http.Server{…}` literals are written in it."""
    key = ("_da102_servers",)
    if key not in graph._memo:
        # server types are those the catalog gives a write deadline (net/http.Server)
        server_types = {s.type for s in graph.catalog.sites
                        if s.role == "server_write_deadline" and s.kind == "field" and s.type}
        literals: dict[str, set[str]] = {}
        exprs = [(b.expr, p) for binds in graph.bindings.values() for b, p in binds]
        exprs += [(r, p) for fn, p in graph.functions.values() for r in fn.returns]
        for expr, path in exprs:
            if expr.get("k") == "obj" and expr.get("type") in server_types:
                literals.setdefault(_module_of(graph, path), set()).add(f"{path}:{_literal_key(expr)}")
        graph._memo[key] = {module: len(found) for module, found in literals.items()}
    return graph._memo[key]


def _literal_key(expr: Expr) -> str:
    """Literals carry no position; the positions of their field values tell them apart."""
    ats = sorted(tuple(v.get("at", ())) for v in expr.get("fields", {}).values() if isinstance(v, dict))
    return str(ats[0]) if ats else "empty"


def _module_of(graph: TimeoutGraph, path: str) -> str:
    facts = graph.files.get(path)
    ip = facts.module if facts and facts.module else ""
    return max((m for m in graph.go_versions if ip == m or ip.startswith(m + "/")), key=len, default="")


def _default_key(graph: TimeoutGraph, path: str) -> str:
    """Which default mux a registration in `path` lands on. `http.DefaultServeMux` is one per
    process: a main package (one with `func main`) is a program of its own, so what it
    registers is served by its own servers only; a library package registers on the mux of
    whichever program of the module imports it."""
    key = f"sym:go:{_default_mux(graph)}@{_module_of(graph, path)}"
    facts = graph.files.get(path)
    package = facts.module if facts is not None else None
    return f"{key}#{package}" if package and f"sym:go:{package}.main" in graph.functions else key


def _default_routes(graph: TimeoutGraph, path: str) -> list[tuple[Expr, str]]:
    """The routes a server in `path` with no handler of its own (the default mux) serves:
    its program's and its libraries'; for a server written in a library, any program's
    of the module."""
    routes = _routes(graph)
    own = _default_key(graph, path)
    library = f"sym:go:{_default_mux(graph)}@{_module_of(graph, path)}"
    keys = [own, library] if own != library else \
        [library, *sorted(k for k in routes if k.startswith(library + "#"))]
    return [route for key in keys for route in routes.get(key, ())]


def _default_mux(graph: TimeoutGraph) -> str:
    return graph.catalog.file("streams").get("go", {}).get("default_mux", "net/http.DefaultServeMux")


def _short(sym: str) -> str:
    body = sym.split(":", 2)[-1]
    return body.rsplit("/", 1)[-1]


# -- client-wide total deadlines -----------------------------------------------------

def streamed_client_reads(graph: TimeoutGraph, site: SiteFact, path: str) -> list[Stream]:
    carriers = graph.carriers(site, path)
    if site.api.startswith("py:"):
        carriers |= _sessions_configured_by(graph, site, path, carriers)
    if not carriers:
        return []
    by_client = _stream_reads_by_client(graph)
    found = []
    for holder in sorted(carriers):
        for stream, own_timeout, read_path, reader in by_client.get(holder, ()):
            if own_timeout is not None and not _is_this_timeout(graph, site, path, own_timeout, read_path):
                continue  # a per-request timeout replaces the client's for this request
            if _objects_built_without(graph, site, path, holder, reader):
                continue
            found.append(stream)
        found.extend(_streamed_calls_by_client(graph).get(holder, ()))
        # `session.get(url, timeout=SITEMAP_TIMEOUT)`: this timeout given to the request itself
        found.extend(s for s in _stream_reads_by_own_timeout(graph).get(holder, ()) if s not in found)
    return found


def _stream_reads_by_own_timeout(graph: TimeoutGraph) -> dict[str, list[Stream]]:
    """Stream reads whose request was given its own `timeout=`, by the symbol it names."""
    key = ("_da102_reads_by_own_timeout",)
    if key not in graph._memo:
        index: dict[str, list[Stream]] = {}
        for entries in _stream_reads_by_client(graph).values():
            for stream, own, own_path, _ in entries:
                held = graph.resolve_sym(own, Ctx(own_path)) if isinstance(own, dict) else None
                if held and stream not in index.setdefault(held, []):
                    index[held].append(stream)
        graph._memo[key] = index
    return graph._memo[key]


def _streamed_calls_by_client(graph: TimeoutGraph) -> dict[str, list[Stream]]:
    """Go: streamed calls (catalog `streaming.methods`: an SDK's streaming endpoint such as
    `c.CreateChatCompletionStream(ctx, req)`) by the symbols on their receiver chain, built
    once per graph."""
    key = ("_da102_streamed_calls",)
    if key not in graph._memo:
        methods = set(graph.catalog.table("go", "streaming").get("methods", ()))
        index: dict[str, list[Stream]] = {}
        seen: set[tuple[str, int, int]] = set()  # a call given a context is a fact and a binding

        def add(callee: Expr, fn_sym: str | None, path: str, line: int, col: int) -> None:
            name = callee.get("name")
            if callee.get("k") != "method" or name not in methods or graph.lang.get(path) != "go" \
                    or (path, line, col) in seen:
                return
            seen.add((path, line, col))
            stream = Stream(_short(fn_sym or ""), f"a streamed call ({name}) through this client", path, line, col)
            for x in receiver_chain(callee):
                holder = graph.resolve_sym(x, Ctx(path))
                if holder:
                    index.setdefault(holder, []).append(stream)

        for fn_sym, calls in graph.calls_in.items():
            for call, path in calls:
                add(call.callee, fn_sym, path, call.span.line, call.span.column)
        # a call on an external type is no call fact, only the value of what it is bound to
        # (`stream, err := c.CreateChatCompletionStream(ctx, req)`)
        for fn_sym, writes in graph.bindings_by_function().items():
            for _, b, path in writes:
                if b.expr.get("k") == "call":
                    at = b.expr.get("at") or [b.span.line, b.span.column]
                    add(b.expr.get("fn") or {}, fn_sym, path, at[0], at[1])
        graph._memo[key] = index
    return graph._memo[key]


def _objects_built_without(graph: TimeoutGraph, site: SiteFact, path: str, holder: str, reader: str) -> bool:
    """Go: the stream is read through a field of the reading method's receiver
    (`c.http.Do(req)` in `Client.Scroll`), the site builds that field in one constructor
    (`New`: `http: &http.Client{Timeout: …}`), and every object the method is called on was
    built by another (`NewLongRunning`: no Timeout). Unknown objects: it may apply."""
    fn = graph.functions.get(reader)
    if fn is None or not fn[0].receiver_type or not holder.startswith(f"sym:go:{fn[0].receiver_type}."):
        return False
    built = [b.expr.get("at") for b, p in graph.bindings.get(holder, ())
             if p == path and b.function == site.function and b.expr.get("at")]
    if not built:
        return False
    calls = [(c, p) for c, p, caller in _method_calls(graph).get(reader, ())
             if c.callee.get("k") == "method" and caller.rsplit(".", 1)[0] != reader.rsplit(".", 1)[0]]
    if not calls:
        return False
    for call, call_path in calls:
        fields = object_fields(graph, call.callee.get("x"), Ctx(call_path))
        value = (fields or {}).get(holder)
        if value is None or value[0].get("at") in built:
            return False
    return True


def _method_calls(graph: TimeoutGraph) -> dict[str, list[tuple]]:
    """Go method -> (call, path, caller) of the calls that resolve to it."""
    key = ("_da102_method_calls",)
    if key not in graph._memo:
        index: dict[str, list[tuple]] = {}
        for caller, calls in graph.calls_in.items():
            for call, path in calls:
                if caller and call.callee.get("k") == "method" and graph.lang.get(path) == "go":
                    target = graph.resolve_callee(call.callee, Ctx(path))
                    if target is not None:
                        index.setdefault(target, []).append((call, path, caller))
        graph._memo[key] = index
    return graph._memo[key]


def _is_this_timeout(graph: TimeoutGraph, site: SiteFact, path: str, expr: Expr, read_path: str) -> bool:
    """Does a request's own `timeout=` argument hold this site's value (inline, or through
    the symbol the site's object is stored in)?"""
    if expr.get("k") == "call" and read_path == path:
        return site.value is not None and site.value in (expr.get("kw") or {}).values()
    holder = graph.resolve_sym(expr, Ctx(read_path))
    return holder is not None and holder in graph.carriers(site, path)


def _stream_reads_by_client(graph: TimeoutGraph) -> dict[str, list[Stream]]:
    """Stream reads indexed by the symbol holding their client, built once per graph (a
    scan of every read per deadline site grew quadratically with the tree)."""
    key = ("_da102_reads_by_client",)
    if key not in graph._memo:
        index: dict[str, list[Stream]] = {}
        for fn_sym, fn_path, mark in _stream_reads(graph):
            client = mark.get("client")
            holders = []
            if client is not None:
                holder = graph.resolve_sym(client, Ctx(fn_path))
                if holder is None and client.get("k") == "call" and not client.get("args"):
                    # `self._media().get(url)`: the accessor (`_through_accessor` below)
                    holder = graph.resolve_callee(client.get("fn"), Ctx(fn_path))
                holders.append(holder)
                timeouts = {holders[0]: (mark.get("timeout"), fn_path)}
            else:  # a response handed over: returned by a helper, or passed in by a caller
                timeouts = {}
                for c, p, _, own in response_origins(graph, fn_sym, fn_path, mark):
                    holder = graph.resolve_sym(c, Ctx(p))
                    holders.append(holder)
                    timeouts.setdefault(holder, (own, p))
            for holder in dict.fromkeys(holders):
                own, own_path = timeouts.get(holder, (None, fn_path))
                for h in _through_accessor(graph, holder):
                    index.setdefault(h, []).append(
                        (Stream(_short(fn_sym), f"the response is read as a stream here ({mark.get('how')})",
                                fn_path, mark["line"], mark["col"]), own, own_path, fn_sym))
        graph._memo[key] = index
    return graph._memo[key]


def response_origins(graph: TimeoutGraph, fn_sym: str, fn_path: str,
                     mark: dict) -> list[tuple[Expr, str, str | None, Expr | None]]:
    """Where a streamed response was produced, across functions: (client expr, its path,
    the function that made the request, the request's own `timeout=` argument) for each
    `Do`/`Get`/`Post` (Python: request method) it may come from —
    through locals, the returns of helpers ("response producer") and the arguments of the
    callers that handed it in. Memoised per read."""
    key = ("_da102_origins", fn_sym, mark.get("line"), mark.get("col"))
    if key not in graph._memo:
        start = mark.get("resp") or mark.get("producer")
        found: list[tuple[Expr, str, str | None]] = []
        if start is not None:
            _origins(graph, start, fn_path, fn_sym, found, 0, set())
        graph._memo[key] = found
    return graph._memo[key]


def _origins(graph: TimeoutGraph, expr: Expr | None, path: str, fn: str | None,
             found: list, depth: int, seen: set, given: dict | None = None) -> None:
    """`given`: inside a helper reached through one call, its parameters -> the arguments
    of that call (`e.post(ctx, e.streamClient, …)` with `c.Do(req)` inside: the stream's
    client is `e.streamClient`, not every client `post` is ever given)."""
    if not isinstance(expr, dict) or depth > 8 or len(found) > 8:
        return
    given = given or {}
    k = expr.get("k")
    if k in ("ref", "field"):  # a variable, a parameter, or a struct field it was stored in
        sym = graph.resolve_sym(expr, Ctx(path))
        decl = graph.decls.get(sym) if sym else None
        if sym in seen or decl is None or decl.kind not in ("local", "param", "field", "var"):
            return
        for b, p in graph.bindings.get(sym, ())[:8]:
            _origins(graph, b.expr, p, b.function, found, depth + 1, seen | {sym}, given)
    elif k == "call":
        callee = expr.get("fn") or {}
        streams = graph.catalog.file("streams")
        methods = streams.get("go", {}).get("client_methods", ()) if graph.lang.get(path) == "go" else \
            streams.get("python", {}).get("request_methods", ())
        if callee.get("k") == "method" and callee.get("name") in methods:
            client, client_path = callee.get("x"), path
            held = given.get(graph.resolve_sym(client, Ctx(path)) or "") if isinstance(client, dict) else None
            if held is not None:
                client, client_path = held
            found.append((client, client_path, fn, (expr.get("kw") or {}).get("timeout")))
            return
        target = graph.resolve_callee(callee, Ctx(path))
        if target is not None and target not in seen:
            tfn, tpath = graph.functions[target]
            inner = {param: (arg, path) for param, (arg, _) in graph.call_subst(tfn, expr, Ctx(path)).items()
                     if isinstance(arg, dict) and arg.get("k") in ("ref", "field")}
            for r in tfn.returns:
                _origins(graph, r, tpath, target, found, depth + 1, seen | {target}, inner)


def _through_accessor(graph: TimeoutGraph, holder: str | None) -> list[str]:
    """The client a read goes through: a symbol, or the fields an accessor (a property or
    getter without parameters) returns."""
    if holder is None:
        return []
    entry = graph.functions.get(holder)
    if entry is None or entry[0].params:
        return [holder]
    fn, fpath = entry
    found = [s for s in (graph.resolve_sym(r, Ctx(fpath)) for r in fn.returns) if s]
    return found or [holder]


def _sessions_configured_by(graph: TimeoutGraph, site: SiteFact, path: str, carriers: set[str]) -> set[str]:
    """aiohttp: the sessions (and per-request timeouts) whose `timeout=` is this ClientTimeout."""
    key = ("_da102_sessions",)
    if key not in graph._memo:
        graph._memo[key] = [(o, p) for o, p in graph.sites
                            if o.api == "py:aiohttp.ClientSession.timeout" and o.value is not None]
    found: set[str] = set()
    for other, other_path in graph._memo[key]:
        value = other.value
        # `ClientSession(timeout=ClientTimeout(total=…))`: the session whose keyword holds this very site
        inline = value.get("k") == "call" and (value.get("kw") or {}).get("total") == site.value \
            and other_path == path and _encloses(other.span, site.span)
        if inline or graph.resolve_sym(value, Ctx(other_path)) in carriers:
            found |= graph.carriers(other, other_path)
    return found


def _encloses(outer, inner) -> bool:
    return (outer.line, outer.column) <= (inner.line, inner.column) and \
        (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column)


def _stream_reads(graph: TimeoutGraph) -> list[tuple[str, str, dict]]:
    """Every `stream_read` marker: (function, path, marker); Python calls marked by the
    stream pass count too (their client is the callee's receiver)."""
    key = ("_da102_reads",)
    if key not in graph._memo:
        reads = []
        for sym, (fn, path) in graph.functions.items():
            reads += [(sym, path, m) for m in fn.markers if m.get("m") == "stream_read"]
        for caller, calls in graph.calls_in.items():
            for call, path in calls:
                mark = call.extra.get("stream_read")
                if mark and caller:
                    reads.append((caller, path, {**mark, "client": call.callee.get("x"),
                                                 "timeout": call.kw.get("timeout")}))
        graph._memo[key] = reads
    return graph._memo[key]


# -- context deadlines -----------------------------------------------------------------

def streamed_reads_in_scope(graph: TimeoutGraph, site: SiteFact, path: str) -> list[Stream]:
    covered = site.extra.get("covers_stream")
    if covered:  # Python: the marker pass saw the stream inside the deadline's scope
        return [Stream(covered["how"], f"streamed inside this deadline's scope ({covered['how']})",
                       path, covered["line"], covered["col"])]
    if site.api == "py:asyncio.wait_for" and site.function is not None:
        return _streams_awaited_by(graph, site, path)
    if site.api.startswith("py:") and site.function is not None:
        return _streams_called_in_scope(graph, site, path)
    if not site.api.startswith("go:") or site.function is None:
        return []
    found = []
    for fn_sym, fn_path, mark in _stream_reads(graph):
        if fn_sym == site.function:
            found.append(Stream(_short(fn_sym), f"the response is read as a stream here ({mark.get('how')})",
                                fn_path, mark["line"], mark["col"]))
        elif mark.get("client") is None and fn_path.endswith(".go") and \
                any(made_in == site.function for _, _, made_in, _ in response_origins(graph, fn_sym, fn_path, mark)):
            # requested under this deadline, read where the response was handed
            found.append(Stream(_short(fn_sym), f"the response requested under this deadline is read as a stream "
                                                f"here ({mark.get('how')})", fn_path, mark["line"], mark["col"]))
    methods = set(graph.catalog.table("go", "streaming").get("methods", ()))
    for call, call_path in graph.calls_in.get(site.function, ()):
        name = call.callee.get("name")
        # a read made before the deadline exists is not under it
        after = (call.span.line, call.span.column) > (site.span.line, site.span.column)
        if call.callee.get("k") == "method" and name in methods and after:
            found.append(Stream(name, f"a streamed call ({name}) in the same function", call_path,
                                call.span.line, call.span.column))
    return found


def _streams_called_in_scope(graph: TimeoutGraph, site: SiteFact, path: str) -> list[Stream]:
    """`with anyio.fail_after(t): … async for e in events(resp)`: the streamed reads of the
    functions called inside the deadline's scope (a helper consuming the response). Only
    those called there directly: a budget around a whole job that somewhere deep inside
    streams a request bounds the job, not that stream."""
    scope = f"with:{site.id}"
    # a Protocol's method (`provider.stream(…)`): what its implementations read
    targets = {t for call, call_path in graph.calls_in.get(site.function, ())
               if call_path == path and scope in call.scopes
               for t in [graph.resolve_callee(call.callee, Ctx(path)),
                         *graph.resolve_callees(call.callee, Ctx(path))] if t is not None}
    return [Stream(_short(fn_sym), f"a function called under this deadline reads a stream here ({mark.get('how')})",
                   fn_path, mark["line"], mark["col"])
            for fn_sym, fn_path, mark in _stream_reads(graph) if fn_sym in targets]


def _streams_awaited_by(graph: TimeoutGraph, site: SiteFact, path: str) -> list[Stream]:
    """`asyncio.wait_for(coro(...), t)`: the streamed reads in the coroutine's function and
    in what it calls (the whole coroutine runs under the one deadline)."""
    names = set(graph.catalog.file("streams").get("python", {}).get("deadline_wrappers", ("asyncio.wait_for",)))
    found = []
    for call, call_path in graph.calls_in.get(site.function, ()):
        if call_path != path or call.callee.get("k") != "ext" or call.callee.get("name") not in names:
            continue
        if not call.span.line <= site.span.line <= call.span.end_line or not call.args:
            continue
        coro = call.args[0]
        target = graph.resolve_callee(coro.get("fn"), Ctx(path)) if coro.get("k") == "call" else None
        if target is None:
            continue
        reach = graph.reachable([target], limit=40)
        for fn_sym, fn_path, mark in _stream_reads(graph):
            if fn_sym in reach:
                found.append(Stream(_short(fn_sym), f"the awaited coroutine reads a stream here ({mark.get('how')})",
                                    fn_path, mark["line"], mark["col"]))
    return found
