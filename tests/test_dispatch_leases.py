"""The analysis core on code written the way other teams write it: calls through
interfaces, injected collaborators and function values; leases held by context managers,
decorators and heartbeats started around the work; renewals bound to the lease they renew."""

from __future__ import annotations

from analysis_support import analyse, build, finding_at, rel, rule_findings


def test_go_interface_field_func_and_heartbeat_bracket():
    result = analyse("da101/go_dispatch")
    assert rule_findings(result, "DA101") == [
        # the cloud renderer, reached only through render.Renderer: 50 s (.env) <= 60 s
        ("DA101", "da101/go_dispatch/internal/render/render.go", 26),
        # a method value stored in a struct field, run under the lease
        ("DA101", "da101/go_dispatch/internal/worker/worker.go", 50),
        # between `stop := w.keepClaim(…)` and `defer stop()`: the heartbeat's TTL
        ("DA101", "da101/go_dispatch/internal/worker/worker.go", 69),
    ]
    # near misses: the on-prem renderer (phase timeouts only), the test double, and the
    # cap derived from the lease (TTL x (renewals + 1)) are silent
    f = finding_at(result, "DA101", "render/render.go", 26)
    assert [rel(r.location) for r in f.related] == [("da101/go_dispatch/internal/worker/worker.go", 37)]
    assert "50 s" in f.message and "60 s" in f.message
    assert f.flow[0].node == "env:RENDER_TIMEOUT"


def test_go_interface_dispatch_is_rapid_type_analysis():
    graph = build("da101/go_dispatch").graph
    render = "sym:go:example.org/mediaplane/internal/render."
    targets = graph.callgraph.dispatch("example.org/mediaplane/internal/render.Renderer", "Render")
    # both production implementations, never the test double
    assert targets == (render + "cloud.Render", render + "onPrem.Render")


def test_python_protocol_context_manager_and_decorator_leases():
    result = analyse("da101/py_injected")
    assert rule_findings(result, "DA101") == [
        # an untyped collaborator built at the composition root (DigestWriter(model=ChatModel(…))):
        # its OpenAI client's per-read timeout on a completion is the lease's own value
        ("DA101", "da101/py_injected/docflow/digest.py", 13),
        # HostedOcr injected as an OcrEngine at the composition root, inside keep(): 60 <= 75
        ("DA101", "da101/py_injected/docflow/ocr.py", 17),
        # @leased(ttl_s=BUNDLE_UPLOAD_S) around a request bounded by the same knob
        ("DA101", "da101/py_injected/docflow/pages.py", 26),
    ]
    f = finding_at(result, "DA101", "docflow/ocr.py", 17)
    # the lease's TTL is read by an env helper with a fallback and a string transform
    assert "75 s" in f.message and "45 s vs 90 s" in f.message
    assert [rel(r.location) for r in f.related] == [("da101/py_injected/docflow/pages.py", 20)]


def test_renewals_are_paired_with_the_lease_they_renew():
    result = analyse("da103/structural")
    found = sorted((where[1], where[2], f.severity) for where, f in
                   ((("DA103", *rel(f.location)), f) for f in result.findings if f.rule_id == "DA103"))
    assert found == [
        # client-go leader election: RetryPeriod 9 s against LeaseDuration 15 s
        ("da103/structural/fleet/internal/election/elect.go", 16, "warning"),
        # go-redis Set re-set on a ticker read by an env helper (20 s) for a 30 s TTL;
        # the stats ticker next to it renews nothing
        ("da103/structural/fleet/internal/presence/presence.go", 25, "warning"),
        # a DB row lease (held_until = now() + interval) bumped every 50 s for 60 s
        ("da103/structural/fleetpy/claims.py", 27, "warning"),
        # a redis-py lock reacquired every ttl * 0.9
        ("da103/structural/fleetpy/locks.py", 28, "warning"),
        # a heartbeat helper whose period is its parameter: 50 s given by one activity
        # against its 60 s HeartbeatTimeout; the other activity gives 10 s
        ("da103/structural/fleetpy/maintenance.py", 28, "warning"),
    ]


def test_env_reader_summaries_follow_the_body_not_the_name():
    from deadline_audit.analysis.summaries import env_reader

    graph = build("da101/py_injected").graph
    knobs = "sym:py:docflow.knobs."
    # three ways to write an env helper: getenv + fallback branch, environ.get + float
    assert env_reader(graph, knobs + "_seconds").name_param == 0
    assert env_reader(graph, knobs + "_seconds").env_returns == (False, True)
    assert env_reader(graph, knobs + "_seconds_or").name_param == 0
    # a helper that reads a fixed string, not its parameter
    assert env_reader(graph, knobs + "_budget").name_param is None
    from deadline_audit.graph import Ctx

    path = graph.decl_path[knobs + "RETRY_BUDGET_S"]
    assert graph.seconds({"k": "ref", "sym": knobs + "RETRY_BUDGET_S"}, Ctx(path), "s") == 5.0
    assert graph.seconds({"k": "ref", "sym": knobs + "PAGE_LEASE_S"}, Ctx(path), "s") == 75.0

    fleet = build("da103/structural").graph
    helper = "sym:go:example.net/fleet/internal/presence.seconds"
    # LookupEnv(name) -> TrimSpace -> ParseFloat -> * time.Second, with a fallback parameter
    assert env_reader(fleet, helper).name_param == 0


def test_query_builder_update_of_a_status_column_is_a_terminal_write():
    # once a re-exported helper resolves to its body, the body decides: an ORM UPDATE that
    # sets a status column is the write (the SQL form already was)
    from deadline_audit.catalog import load_catalog
    from deadline_audit.terminal_writes import TerminalWrites

    writes = TerminalWrites(load_catalog())
    update = {"k": "call", "fn": {"k": "fnref", "sym": "sym:py:sqlalchemy.update"}, "args": [], "kw": {}}
    where = {"k": "call", "fn": {"k": "method", "x": update, "name": "where"}, "args": [], "kw": {}}

    def values(**kw):
        return {"k": "call", "fn": {"k": "method", "x": where, "name": "values"}, "args": [], "kw": kw}

    assert writes._orm_update(values(state={"k": "ref", "sym": "sym:py:m.f.state"}))
    assert not writes._orm_update(values(state={"k": "str", "v": "running"}))
    assert not writes._orm_update(values(title={"k": "str", "v": "x"}))
