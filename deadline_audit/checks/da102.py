"""DA102 deadline-covers-stream: a total deadline that also covers a streamed body.

Three shapes, each linked through the graph or not reported at all:
- Go `http.Server.WriteTimeout > 0` whose handlers (resolved through the mux, or every
  handler of the module when it has exactly one server) stream without lifting the
  deadline with `ResponseController.SetWriteDeadline`;
- a client-wide total deadline (Go `http.Client.Timeout`, aiohttp `ClientTimeout(total=)`)
  on a client whose response is read as a stream;
- a context deadline (`context.WithTimeout`, `asyncio.timeout`, …) whose scope holds a
  streamed read (Go: the same function; Python: the `with` body).
Stream facts come from the marker passes extract/go_marks_http.py and py_marks_streams.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from deadline_audit.checks import da102_links as links
from deadline_audit.checks.evidence import describe_seconds, first_source, flow_steps, location_of
from deadline_audit.findings import Finding, Location, Related
from deadline_audit.graph import Ctx, TimeoutGraph
from deadline_audit.wire_eval import sent_alternatives

RULE_ID, RULE_NAME, SEVERITY = "DA102", "deadline-covers-stream", "warning"

def _shape(graph: TimeoutGraph, site) -> str | None:
    """Which of the three shapes a site can take part in, from its catalog entry: a server
    write deadline, a client-wide total deadline that covers the body (explicit, or the
    constructor's implicit default), or a context deadline."""
    spec = graph.spec(site)
    if spec is None or spec.absolute or spec.temporal:
        return None
    if spec.role == "server_write_deadline":
        return "server"
    if spec.role == "transport_deadline" and spec.covers_body and not spec.per_attempt:
        if site.value is None:
            return "client" if spec.implicit_default else None
        return "client"
    if spec.role == "context_deadline":
        return "context"
    return None


def check(graph: TimeoutGraph, options: dict) -> Iterable[Finding]:
    for site, path in graph.sites:
        shape = _shape(graph, site)
        if shape is None:
            continue
        if not (_implicit_total(graph, site) if site.value is None else _positive(graph, site, path)):
            continue
        if shape == "server":
            streams = links.streaming_handlers(graph, site, path)
            what = "streaming handler"
        elif shape == "client":
            streams = links.streamed_client_reads(graph, site, path)
            what = "streamed response"
        else:
            streams = links.streamed_reads_in_scope(graph, site, path)
            what = "streamed read"
        if streams:
            yield _finding(graph, site.id, streams, what)


def _positive(graph: TimeoutGraph, site, path: str) -> bool:
    """Zero and None mean "no deadline" (for a context, 0 is already expired: not a
    stream cut). An unresolved value may be 0 on the streaming path (a helper called with
    10 s for one client and 0 for the streaming one): unresolved means no finding."""
    if site.value is None or site.value.get("k") == "none":
        return False
    attrs = graph.g.nodes[site.id]
    eff, dflt = attrs.get("effective_seconds"), attrs.get("default_seconds")
    value = eff if eff is not None else dflt
    if value is not None:
        return value > 0
    # several values that disagree (a field's default and the config file's value): a
    # deadline when every one of them is one
    alternatives = sent_alternatives(graph, site.value, Ctx(path))
    if len(alternatives) < 2:
        return False
    seconds = [graph.seconds(expr, ctx, attrs.get("unit")) for expr, ctx in alternatives]
    return all(v is not None and v > 0 for v in seconds)


def _implicit_total(graph: TimeoutGraph, site) -> bool:
    value = graph.g.nodes[site.id].get("effective_seconds")
    return value is not None and value > 0


def _finding(graph: TimeoutGraph, site: str, streams: list[links.Stream], what: str) -> Finding:
    attrs = graph.g.nodes[site]
    label = attrs.get("label", "deadline")
    eff, dflt = attrs.get("effective_seconds"), attrs.get("default_seconds")
    value = describe_seconds(eff) if eff is not None else "(value unresolved)"
    default = f" (compiled default {describe_seconds(dflt)})" if dflt is not None and dflt != eff else ""
    first = streams[0]
    if attrs.get("implicit"):
        label = f"{label.rsplit('.', 1)[0]}'s implicit total timeout"
    head = f"{label} {value}{default} also covers the {what} {first.name}"
    more = f" and {len(streams) - 1} more" if len(streams) > 1 else ""
    message = f"{head}{more}: every stream longer than that is cut mid-body."
    source = first_source(graph, site)
    return Finding(
        rule_id=RULE_ID, rule=RULE_NAME, severity=SEVERITY, message=message,
        location=location_of(graph, site),
        related=[Related(s.note, Location(s.path, s.line, s.col)) for s in streams],
        flow=flow_steps(graph, source, site) if source else [],
        fix=_fix(graph, attrs.get("api", "")),
    )


def _fix(graph: TimeoutGraph, api: str) -> str:
    spec = graph.catalog.site(api)
    if spec is not None and spec.stream_fix:
        return spec.stream_fix
    return "bound the stream by idleness (a per-read timeout reset on each chunk), not by one total deadline around it."
