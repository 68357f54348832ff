"""Terminal writes by meaning and through helpers, writes with a done context (DA201),
joins on every path (DA202), and streams behind routers, accessors and per-request
timeouts (DA102), on fixture trees written unlike the others."""

from __future__ import annotations

from analysis_support import analyse, finding_at, rel, rule_findings


def test_go_terminal_writes_by_meaning_helpers_and_done_contexts():
    # flagged: the noun on the receiver's type package (exports.Store.Finalize), in an
    # argument (transferID), none at all (PersistFinalStatus), a write made by a helper
    # (reported at the helper's call), and two writes with a context known to be done.
    # silent: RecordLatency, MarkFailed on a tracing receiver, the write inside closeOut,
    # a helper named like a write that detaches (finishTask), errors.Is on a call's error,
    # a done-arm write on context.WithoutCancel, and a write in another context's Done arm.
    # An operation named like a write (CompleteUpload works first) is not a write at its
    # call (line 91); its own write inside (line 71) is judged where it is made.
    result = analyse("da201/meaning")
    assert rule_findings(result, "DA201") == [
        ("DA201", "da201/meaning/httpapi/handlers.go", 25),
        ("DA201", "da201/meaning/httpapi/handlers.go", 34),
        ("DA201", "da201/meaning/httpapi/handlers.go", 39),
        ("DA201", "da201/meaning/httpapi/handlers.go", 45),
        ("DA201", "da201/meaning/httpapi/handlers.go", 71),
        ("DA201", "da201/meaning/notify/hooks.go", 29),
        ("DA201", "da201/meaning/worker/sweeper.go", 24),
        ("DA201", "da201/meaning/worker/sweeper.go", 36),
        ("DA201", "da201/meaning/worker/sweeper.go", 66),
        ("DA201", "da201/meaning/worker/sweeper.go", 73),
    ]
    hook = finding_at(result, "DA201", "notify/hooks.go", 29)  # work through NewRequestWithContext
    assert "the delivery ended with the context of the context.WithTimeout (15 s)" in hook.message
    assert "how the export ended under r.Context()" in finding_at(result, "DA201", "handlers.go", 25).message
    assert "how the transfer ended" in finding_at(result, "DA201", "handlers.go", 34).message
    assert "closeOut records how the task ended" in finding_at(result, "DA201", "handlers.go", 45).message
    arm = finding_at(result, "DA201", "sweeper.go", 24)
    assert "already done (inside its `case <-ctx.Done():` arm)" in arm.message
    assert ("da201/meaning/worker/sweeper.go", 23) in [rel(r.location) for r in arm.related]
    err = finding_at(result, "DA201", "sweeper.go", 36)
    assert "already done (after `ctx.Err() != nil`)" in err.message and "the job ended" in err.message
    assert "after `<-ctx.Done()`" in finding_at(result, "DA201", "sweeper.go", 66).message
    assert "errors.Is(ctx.Err(), context.DeadlineExceeded)" in finding_at(result, "DA201", "sweeper.go", 73).message


def test_python_terminal_writes_by_meaning_and_helpers():
    # flagged: receiver name (_exports.complete), final-state words (store_final_result),
    # a helper awaited in the scope (at its call); silent: a plain put, and a helper named
    # like a write (_complete_job) whose body shields the write.
    result = analyse("da201/meaning_py")
    assert rule_findings(result, "DA201") == [
        ("DA201", "da201/meaning_py/grading/service.py", 28),
        ("DA201", "da201/meaning_py/grading/service.py", 34),
        ("DA201", "da201/meaning_py/grading/service.py", 46),
    ]


def test_go_joins_on_every_path():
    # flagged: a select arm on ctx.Done() then a state change, a join in one branch, a
    # return before the join, the request (or RPC) ctx carried in a struct argument, and a
    # poller that uses the request ctx but stops only with the server's lifetime context.
    # silent: a partial join of a goroutine that only computes, a WaitGroup join after a
    # fan-out (HTTP and gRPC), a keep-alive goroutine that stops with the request.
    result = analyse("da202/joins")
    assert rule_findings(result, "DA202") == [
        ("DA202", "da202/joins/rpc/service.go", 24),
        ("DA202", "da202/joins/web/handlers.go", 24),
        ("DA202", "da202/joins/web/handlers.go", 59),
        ("DA202", "da202/joins/web/handlers.go", 71),
        ("DA202", "da202/joins/web/handlers.go", 102),
        ("DA202", "da202/joins/web/handlers.go", 139),
    ]
    select = finding_at(result, "DA202", "handlers.go", 24)
    assert "joined only partly (a select with another arm) and then records state" in select.message
    assert ("da202/joins/web/handlers.go", 26) in [rel(r.location) for r in select.related]
    assert "only on some paths" in finding_at(result, "DA202", "handlers.go", 59).message
    assert "a return before it" in finding_at(result, "DA202", "handlers.go", 71).message
    assert "is not joined" in finding_at(result, "DA202", "handlers.go", 102).message
    rpc = finding_at(result, "DA202", "rpc/service.go", 24)  # the RPC's ctx in a struct pointer
    assert "gRPC ctx of" in rpc.message and [s.label for s in rpc.flow][-1] == "stored in rpc.reroute.ctx"


def test_da102_router_groups_and_python_session_overrides():
    # chi verb routes inside Route/Group sub-routers; a gorilla PathPrefix().Subrouter()
    # (two servers in the module: both linked through their mux, not the fallback)
    router = analyse("da102/router")
    assert rule_findings(router, "DA102") == [("DA102", "da102/router/cmd/feed/main.go", 14),
                                              ("DA102", "da102/router/internal/admin/admin.go", 15)]
    assert [rel(r.location) for r in finding_at(router, "DA102", "admin.go", 15).related] == [
        ("da102/router/internal/admin/admin.go", 20)]
    f = finding_at(router, "DA102", "main.go", 14)
    assert [rel(r.location) for r in f.related] == [("da102/router/internal/feed/routes.go", 26)]

    # the session reached through a property is flagged for the stream that uses its
    # deadline; requests with their own timeout= (which replaces the session's) are not;
    # a response handed to a reader method keeps the session's deadline (ReleaseFeed), not
    # when its request passed its own idle timeout (QuietFeed)
    py = analyse("da102/py_override")
    assert rule_findings(py, "DA102") == [("DA102", "da102/py_override/watch/follow.py", 9),
                                          ("DA102", "da102/py_override/watch/follow.py", 44)]
    g = finding_at(py, "DA102", "follow.py", 9)
    assert [rel(r.location) for r in g.related] == [("da102/py_override/watch/follow.py", 18)]
    h = finding_at(py, "DA102", "follow.py", 44)
    assert [rel(r.location) for r in h.related] == [("da102/py_override/watch/follow.py", 52)]


def test_da102_response_handed_to_another_function_keeps_its_deadline():
    # returned by a helper (Follow), passed to a reader (pump, under the caller's
    # WithTimeout), stored in a struct and read by another method (Session.Next);
    # silent: io.ReadAll of the same helper's response (Snapshot) is not a stream
    result = analyse("da102/handoff")
    assert rule_findings(result, "DA102") == [
        ("DA102", "da102/handoff/tail/client.go", 19),
        ("DA102", "da102/handoff/tail/client.go", 49),
    ]
    client = finding_at(result, "DA102", "client.go", 19)
    assert [rel(r.location) for r in client.related] == [
        ("da102/handoff/tail/client.go", 39), ("da102/handoff/tail/client.go", 93)]
    scope = finding_at(result, "DA102", "client.go", 49)
    assert [rel(r.location) for r in scope.related] == [("da102/handoff/tail/client.go", 61)]
