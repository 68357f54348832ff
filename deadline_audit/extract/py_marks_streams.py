"""DA102 marks on Python files: which requests are consumed as streams, and which
deadline scopes (`async with asyncio.timeout(…)`) hold a streamed read.

- `CallFact.extra["stream_read"] = {"how", "line", "col"}` on the request call whose
  response is consumed incrementally in the same function (`async for x in resp.content`,
  `resp.content.iter_chunked(…)`, `resp.aiter_lines()`, a `stream=True` call iterated,
  `resp.content` handed to a reader);
- `FunctionFact.markers` `{"m": "stream_read", "how", "line", "col", "client": None,
  "resp": ref}` when the response read is a parameter (handed in by a caller);
- `SiteFact.extra["covers_stream"] = {"how", "line", "col"}` on a `context_deadline` site
  of a `with` statement whose body holds such a read.
Names come from `rules/catalog/streams.toml` (`[python]`). Only files with a candidate
call are hooked into the shared walk (py_marks.py); each function is examined when the walk
leaves it, over its own nodes (not those of nested functions, classes or lambdas).
"""

from __future__ import annotations

import ast

from deadline_audit.catalog import Catalog
from deadline_audit.extract.py_marks import MarkContext, Walker, run_marker_passes
from deadline_audit.facts import FileFacts, FunctionFact

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def run(tree: ast.Module, facts: FileFacts, catalog: Catalog) -> None:
    run_marker_passes(tree, facts, catalog, ("py_marks_streams",))


def register(ctx: MarkContext, walker: Walker):
    facts = ctx.facts
    spec = ctx.catalog.file("streams").get("python", {})
    methods = set(spec.get("stream_methods", ())) | set(spec.get("stream_calls", ()))
    names = methods | set(spec.get("request_methods", ()))
    if not any(c.callee.get("name") in names for c in facts.calls):
        return None
    calls = {}
    for c in facts.calls:
        if c.callee.get("k") == "method":
            calls.setdefault((c.span.line, c.callee["name"]), c)
    scopes = ctx.deadline_sites
    own: list[list | None] = [None]  # per open function: its own relevant nodes, post-order
    by_line: dict[tuple[int, str], FunctionFact] = {
        (f.span.line, f.sym.rsplit(".", 1)[-1]): f for f in facts.functions}

    def enter_function(node: ast.AST) -> None:
        own.append([])

    def leave_function(node: ast.AST) -> None:
        nodes = own.pop()
        if nodes:
            nodes.reverse()  # reversed post-order = the right-to-left pre-order of `_own_nodes`
            function = _Function(spec, calls, scopes)
            function.fact = by_line.get((node.lineno, node.name))
            function.params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
            function.run_nodes(nodes)

    def enter_opaque(node: ast.AST) -> None:
        own.append(None)

    def leave_opaque(node: ast.AST) -> None:
        own.pop()

    def collect(node: ast.AST) -> None:
        nodes = own[-1]
        if nodes is not None:
            nodes.append(node)

    walker.enter(_FUNCS, enter_function)
    walker.leave(_FUNCS, leave_function)
    walker.enter((ast.ClassDef, ast.Lambda), enter_opaque)
    walker.leave((ast.ClassDef, ast.Lambda), leave_opaque)
    walker.leave(_RELEVANT, collect)
    return None


# the only node types `_Function.run` acts on
_RELEVANT = (ast.With, ast.AsyncWith, ast.Assign, ast.For, ast.AsyncFor, ast.Call)


class _Function:
    """One function body: responses bound to request calls, then the reads over them."""

    def __init__(self, spec: dict, calls: dict, scopes: list) -> None:
        self.spec = spec
        self.calls = calls
        self.scopes = scopes
        self.producers: dict[str, ast.Call] = {}  # response name → the request call
        self.withs: list[tuple[ast.AST, list]] = []  # deadline `with` statements and their sites
        self.fact: FunctionFact | None = None  # the function, for reads of a handed-in response
        self.params: set[str] = set()
        self.aliases: dict[str, str] = {}  # `async with param as x`: x -> param

    def run(self, fn: ast.AST) -> None:
        self.run_nodes(list(_own_nodes(fn)))

    def run_nodes(self, body: list) -> None:
        for node in body:
            if isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    call = item.context_expr
                    if isinstance(item.optional_vars, ast.Name) and _is_request(call, self.spec):
                        self.producers[item.optional_vars.id] = call
                    elif isinstance(item.optional_vars, ast.Name) and isinstance(call, ast.Name) \
                            and call.id in self.params:
                        # `async with stream_cm as stream:` over a parameter: reading `stream`
                        # reads what the caller handed in
                        self.aliases[item.optional_vars.id] = call.id
                    sites = [s for s in self.scopes if s.span.line == getattr(call, "lineno", -1)]
                    if sites:
                        self.withs.append((node, sites))
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = node.value.value if isinstance(node.value, ast.Await) else node.value
                if _is_request(value, self.spec):
                    self.producers[node.targets[0].id] = value
        for node in body:
            read = self.read_of(node)
            if read is None:
                self._param_read(node)
                continue
            producer, how = read
            mark = {"how": how, "line": node.lineno, "col": node.col_offset + 1}
            fact = self.calls.get((producer.lineno, _method_name(producer)))
            if fact is not None:
                fact.extra["stream_read"] = mark
            for with_node, sites in self.withs:
                if with_node.lineno < node.lineno <= (with_node.end_lineno or with_node.lineno):
                    for site in sites:
                        site.extra.setdefault("covers_stream", mark)

    def read_of(self, node: ast.AST) -> tuple[ast.Call, str] | None:
        """A streamed read: iterating a response's body, or a chunk method on it."""
        if isinstance(node, (ast.For, ast.AsyncFor)):
            target = node.iter
            if isinstance(target, ast.Name) and target.id in self.producers:
                call = self.producers[target.id]
                if _streamed_call(call, self.spec):
                    return call, f"iterating {target.id}"
            if isinstance(target, ast.Attribute) and target.attr in self.spec.get("stream_attrs", ()):
                return self._response(target.value, f"iterating .{target.attr}")
            if isinstance(target, ast.Call):
                return self.read_of(target)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in self.spec.get("stream_methods", ()):
            inner = node.func.value
            if isinstance(inner, ast.Attribute) and inner.attr in self.spec.get("stream_attrs", ()):
                inner = inner.value
            return self._response(inner, f".{node.func.attr}()")
        if isinstance(node, ast.Call):
            # the body's stream handed to a reader (`async for ev in parse_sse(resp.content)`)
            for arg in node.args:
                if isinstance(arg, ast.Attribute) and arg.attr in self.spec.get("stream_attrs", ()):
                    found = self._response(arg.value, f".{arg.attr} handed to a reader")
                    if found is not None:
                        return found
        return None

    def _param_read(self, node: ast.AST) -> None:
        """A response handed in as a parameter and read as a stream here: a function
        marker `{"m": "stream_read", "how", "line", "col", "client": None, "resp": ref}`;
        the graph finds the request that produced it through the callers' arguments."""
        if self.fact is None:
            return
        target, how = None, None
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.iter, ast.Attribute) \
                and node.iter.attr in self.spec.get("stream_attrs", ()):
            target, how = node.iter.value, f"iterating .{node.iter.attr}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in self.spec.get("stream_methods", ()):
            target, how = node.func.value, f".{node.func.attr}()"
            if isinstance(target, ast.Attribute) and target.attr in self.spec.get("stream_attrs", ()):
                target = target.value
        name = self.aliases.get(target.id, target.id) if isinstance(target, ast.Name) else None
        if name is not None and name in self.params and name not in ("self", "cls"):
            self.fact.markers.append({"m": "stream_read", "how": how, "line": node.lineno, "col": node.col_offset + 1,
                                      "client": None, "resp": {"k": "ref", "sym": f"{self.fact.sym}.{name}"}})

    def _response(self, node: ast.AST, how: str) -> tuple[ast.Call, str] | None:
        if isinstance(node, ast.Name) and node.id in self.producers:
            return self.producers[node.id], how
        return None


def _own_nodes(fn: ast.AST):
    """Nodes of a function body, not descending into nested functions or classes."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, (*_FUNCS, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _method_name(call: ast.AST) -> str | None:
    return call.func.attr if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) else None


def _is_request(call: ast.AST, spec: dict) -> bool:
    name = _method_name(call)
    return name is not None and (name in spec.get("request_methods", ()) or name in spec.get("stream_calls", ()))


def _streamed_call(call: ast.Call, spec: dict) -> bool:
    if _method_name(call) in spec.get("stream_calls", ()):
        return True
    return any(kw.arg in spec.get("stream_kw", ()) and not (isinstance(kw.value, ast.Constant) and not kw.value.value)
               for kw in call.keywords)
