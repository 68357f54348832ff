"""DA102 marks on Go files: which functions stream a response, lift the write deadline,
register handlers on a mux, or read a response body as a stream.

Markers added to `FunctionFact.markers` (positions 1-based, code points):
- `{"m": "stream_write", "how", "line", "col"}`: the function streams its response (a
  streaming content type it may answer with, an `http.Flusher` assertion, a
  ResponseController flush); a streaming type it asks for (`Accept`) or checks on a
  response only makes a copy of that response's body a stream read;
- `{"m": "write_deadline_lift", "line", "col"}`: it calls `SetWriteDeadline`;
- `{"m": "server_handler", "server": Expr, "handler": Expr, "line", "col"}`:
  `srv.Handler = h` written after the server literal;
- `{"m": "route", "mux": Expr, "handler": Expr, "line", "col"}`: `mux.HandleFunc(p, h)`,
  `mux.Handle(p, h)`; on `net/http` itself the mux is `ref net/http.DefaultServeMux`;
- `{"m": "mux_alias", "mux": Expr, "alias": Expr, "line", "col"}`: `mux.Route(p, func(r Router) {…})`
  or `mux.Group(func(r Router) {…})`: routes registered on `alias` are routes of `mux`;
  `mux.Get(pattern, h)` and the other verb routes of `verb_route_methods` are `route`s;
- `{"m": "stream_read", "how", "line", "col", "client": Expr | None, "producer": Expr | None}`:
  a response body read as a stream; `client` is the receiver of the `Do`/`Get`/`Post`
  that produced the response in the same function, else `producer` is that call; `resp`
  is the response variable (a parameter when the response was handed in by a caller).
Names and strings come from `rules/catalog/streams.toml` (`[go]`).
"""

from __future__ import annotations

from typing import Any

from deadline_audit.catalog import Catalog
from deadline_audit.extract.go_marks_common import GoMarkContext
from deadline_audit.extract.go_text import unquote
from deadline_audit.facts import FileFacts

_PREFILTER = (b"Flush", b"event-stream", b"Handle", b"SetWriteDeadline", b".Body", b'("/', b"Route(", b"Group(")


def _call_names(spec: dict) -> tuple[str, ...]:
    return tuple(sorted({*spec.get("route_methods", ()), *spec.get("verb_route_methods", ()),
                         *spec.get("subrouter_methods", ()), *spec.get("flush_methods", ()),
                         *spec.get("lift_methods", ()), *spec.get("response_controller_funcs", ()),
                         *spec.get("body_readers", ()), *spec.get("body_read_methods", ()),
                         *spec.get("body_copy_funcs", ())}))


def queries(catalog: Catalog) -> dict[str, str]:
    any_of = " ".join(f'"{n}"' for n in _call_names(catalog.file("streams").get("go", {})))
    calls = f"""
        ((call_expression
           function: (selector_expression operand: (_) @recv field: (field_identifier) @meth)
           arguments: (argument_list) @args) @call
         (#any-of? @meth {any_of}))
    """
    other = """
        (type_assertion_expression type: (_) @atype) @assert
        ((interpreted_string_literal) @str (#match? @str "stream"))
        (short_var_declaration left: (expression_list . (identifier) @lhs)
                               right: (expression_list . (call_expression) @rhs))
        (assignment_statement left: (expression_list . (identifier) @lhs)
                              right: (expression_list . (call_expression) @rhs))
        ((assignment_statement
           left: (expression_list . (selector_expression operand: (_) @srv field: (field_identifier) @hfield))
           right: (expression_list . (_) @hval)) @hassign
         (#eq? @hfield "Handler"))
    """
    return {"http.calls": calls, "http.other": other}


def run(tree: Any, source: bytes, facts: FileFacts, catalog: Catalog) -> None:
    if not any(word in source for word in _PREFILTER):
        return
    spec = catalog.file("streams").get("go", {})
    verb_routes, subrouters = set(spec.get("verb_route_methods", ())), set(spec.get("subrouter_methods", ()))
    ctx = tree.context()
    per_fn: dict[str, dict[str, Any]] = {}

    def state(fn) -> dict[str, Any]:
        return per_fn.setdefault(fn.sym, {"fn": fn, "flush": None, "rc": False, "reads": [], "asks": False})

    producers: dict[tuple[str, str], Any] = {}
    for caps in tree.matches("http.other"):
        if "assert" in caps:
            node = caps["assert"][0]
            if ctx.text(caps["atype"][0]) in spec.get("flusher_types", ()):
                _stream_write(ctx, node, "http.Flusher")
        elif "str" in caps:
            node = caps["str"][0]
            if unquote(ctx.text(node)) in spec.get("stream_content_types", ()):
                if _sets_response_type(ctx, node, spec):
                    _stream_write(ctx, node, unquote(ctx.text(node)))
                elif (fn := ctx.function_at(node)) is not None:
                    state(fn)["asks"] = True  # asked of or checked on a response: its body is a stream
        elif "hassign" in caps:
            node = caps["hassign"][0]
            fn = ctx.function_at(node)
            if fn is not None:
                line, col = ctx.at(node)
                fn.markers.append({"m": "server_handler", "server": ctx.expr(caps["srv"][0], fn),
                                   "handler": ctx.expr(caps["hval"][0], fn), "line": line, "col": col})
        elif "lhs" in caps:
            fn = ctx.function_at(caps["lhs"][0])
            if fn is not None:
                producers[(fn.sym, ctx.text(caps["lhs"][0]))] = caps["rhs"][0]

    for caps in tree.matches("http.calls"):
        call, recv, meth = caps["call"][0], caps["recv"][0], ctx.text(caps["meth"][0])
        fn = ctx.function_at(call)
        if fn is None:
            continue
        args = [a for a in caps["args"][0].named_children if a.type != "comment"]
        line, col = ctx.at(call)
        recv_text = ctx.text(recv)
        if meth in spec.get("route_methods", ()) and len(args) == 2:
            mux = ({"k": "ref", "sym": f"sym:go:{spec.get('default_mux', 'net/http.DefaultServeMux')}"}
                   if ctx.imports.get(recv_text) == "net/http" else ctx.expr(recv, fn))
            fn.markers.append({"m": "route", "mux": mux, "handler": ctx.expr(args[1], fn), "line": line, "col": col})
        elif meth in verb_routes and len(args) >= 2 and \
                any(a.type in ("interpreted_string_literal", "raw_string_literal") for a in args[:-1]):
            fn.markers.append({"m": "route", "mux": ctx.expr(recv, fn), "handler": ctx.expr(args[-1], fn),
                               "line": line, "col": col})
        elif meth in subrouters and args and args[-1].type == "func_literal":
            lit = ctx.by_start.get(tuple(ctx.at(args[-1])))
            if lit is not None and lit.params:
                fn.markers.append({"m": "mux_alias", "mux": ctx.expr(recv, fn),
                                   "alias": {"k": "ref", "sym": lit.params[0]}, "line": line, "col": col})
        elif meth in spec.get("lift_methods", ()):
            fn.markers.append({"m": "write_deadline_lift", "line": line, "col": col})
        elif meth in spec.get("flush_methods", ()):
            state(fn)["flush"] = state(fn)["flush"] or call
        elif meth in spec.get("response_controller_funcs", ()) and ctx.imports.get(recv_text) == "net/http":
            state(fn)["rc"] = True
        elif meth in spec.get("body_readers", ()) and args and _is_body(ctx, args[0]):
            state(fn)["reads"].append((call, args[0].child_by_field_name("operand"), f"{recv_text}.{meth} over the body"))
        elif meth in spec.get("body_read_methods", ()) and _is_body(ctx, recv) and _in_loop(call, fn, ctx):
            state(fn)["reads"].append((call, recv.child_by_field_name("operand"), "the body read in a loop"))
        elif meth in spec.get("body_copy_funcs", ()) and len(args) >= 2 and _is_body(ctx, args[-1]):
            state(fn)["reads"].append((call, args[-1].child_by_field_name("operand"), "the body copied to a flushed writer"))

    for st in per_fn.values():
        fn = st["fn"]
        if st["flush"] is not None and st["rc"]:
            line, col = ctx.at(st["flush"])
            fn.markers.append({"m": "stream_write", "how": "ResponseController.Flush", "line": line, "col": col})
        streams_out = any(m.get("m") == "stream_write" for m in fn.markers) or st["flush"] is not None \
            or st["asks"]
        for call, resp, how in st["reads"]:
            if how.startswith("the body copied") and not streams_out:
                continue  # a one-shot copy (a download) is not a stream of events
            line, col = ctx.at(call)
            marker = {"m": "stream_read", "how": how, "line": line, "col": col, "client": None, "producer": None}
            if resp is not None and resp.type in ("identifier", "selector_expression"):
                marker["resp"] = ctx.expr(resp, fn)
            producer = producers.get((fn.sym, ctx.text(resp))) if resp is not None and resp.type == "identifier" else None
            if producer is not None:
                pfn = producer.child_by_field_name("function")
                if pfn.type == "selector_expression" and \
                        ctx.text(pfn.child_by_field_name("field")) in spec.get("client_methods", ()):
                    marker["client"] = ctx.expr(pfn.child_by_field_name("operand"), fn)
                else:
                    marker["producer"] = ctx.expr(producer, fn)
            fn.markers.append(marker)


def _stream_write(ctx: GoMarkContext, node: Any, how: str) -> None:
    fn = ctx.function_at(node)
    if fn is not None and not any(m.get("m") == "stream_write" for m in fn.markers):
        line, col = ctx.at(node)
        fn.markers.append({"m": "stream_write", "how": how, "line": line, "col": col})


def _sets_response_type(ctx: GoMarkContext, node: Any, spec: dict[str, Any]) -> bool:
    """A streaming content type the code may be answering with, not one it reads or asks
    for: not compared (`ct == "text/event-stream"`), not tested by a function of a
    `type_test_packages` package, not the value of a header other than the
    `response_type_headers` (`req.Header.Set("Accept", "text/event-stream")` on an
    outgoing request)."""
    parent = node.parent
    if parent is None:
        return True
    if parent.type == "binary_expression":
        return False
    if parent.type != "argument_list":
        return True
    call = parent.parent
    fn = call.child_by_field_name("function") if call is not None else None
    if fn is not None and fn.type == "selector_expression":
        operand = fn.child_by_field_name("operand")
        if operand is not None and ctx.imports.get(ctx.text(operand)) in spec.get("type_test_packages", ()):
            return False
    args = [a for a in parent.named_children if a.type != "comment"]
    if len(args) >= 2 and args[-1] == node and args[0].type == "interpreted_string_literal":
        headers = {h.lower() for h in spec.get("response_type_headers", ())}
        return unquote(ctx.text(args[0])).lower() in headers
    return True


def _is_body(ctx: GoMarkContext, node: Any) -> bool:
    return node.type == "selector_expression" and ctx.text(node.child_by_field_name("field")) == "Body"


def _in_loop(node: Any, fn, ctx: GoMarkContext) -> bool:
    """A `for` between the node and its function (ancestor walk: a few parents)."""
    parent = node.parent
    while parent is not None and parent.type not in ("function_declaration", "method_declaration", "func_literal"):
        if parent.type == "for_statement":
            return True
        parent = parent.parent
    return False
