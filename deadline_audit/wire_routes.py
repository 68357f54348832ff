"""The route a payload is sent to and the routes a Python handler serves (DA401-DA403).

A FastAPI/Starlette-style handler declares its route in a decorator
(`@router.post("/v1/turns/stream")`); a payload posted to `/v1/turns` reaches another
handler, even when both read the same request model, so a clamp or a fallback written in
the handler of `/v1/turns/stream` does not apply to it. Unknown either way: it may apply.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

from deadline_audit.analysis.decorators import call_at
from deadline_audit.graph import TimeoutGraph

_PARAM = re.compile(r"\{[^}]*\}")


def other_route(graph: TimeoutGraph, function: str | None, payload) -> bool:
    """The handler `function` serves routes, the payload names its URL, and none match."""
    served = _routes_of(graph, function)
    if not served:
        return False
    sent = _sent_to(graph, payload)
    return sent is not None and not any(fnmatchcase(sent, "*" + route) for route in served)


def _routes_of(graph: TimeoutGraph, function: str | None) -> list[str]:
    found = graph.functions.get(function or "")
    if found is None or graph.lang.get(found[1]) != "python":
        return []
    verbs = set(graph.catalog.file("wire").get("wire", {}).get("route_decorators", ()))
    routes = []
    for mark in found[0].markers:
        if mark.get("m") != "decorated":
            continue
        call = call_at(graph, found[1], mark["line"], mark["col"])
        if call is None or call.callee.get("k") != "method" or call.callee.get("name") not in verbs or not call.args:
            continue
        route = call.args[0]
        if route.get("k") == "str" and route.get("v", "").startswith("/"):
            routes.append(_PARAM.sub("*", route["v"]).rstrip("/") or "/")
    return routes


def _sent_to(graph: TimeoutGraph, payload) -> str | None:
    """The path of the URL given to the call that sends the payload (a literal, or an
    f-string's fixed parts with `*` for what it fills in)."""
    line = payload.location.line
    for call, _ in graph.calls_in.get(payload.function, ()):
        if not call.span.line <= line <= call.span.end_line:
            continue
        # `post(url, …)`, `request("POST", url, …)`, `stream("POST", url, …)`, `url=`
        for url in [*call.args[:2], call.kw.get("url") or {}]:
            text = url.get("v") if url.get("k") == "str" else url.get("glob")
            if isinstance(text, str) and "/" in text:
                break
        else:
            continue
        if isinstance(text, str):
            path = text.split("://", 1)[1] if "://" in text else text
            path = path[path.index("/"):] if not path.startswith("/") else path
            return path.split("?", 1)[0].rstrip("/") or "/"
    return None

