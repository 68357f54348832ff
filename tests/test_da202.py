"""DA202 request-bound-background-work: goroutines in handlers that keep the request's context."""

from __future__ import annotations

from analysis_support import analyse, rel, rule_findings, where


def da202_findings(result):
    return rule_findings(result, "DA202")


def test_go_shapes():
    # flagged: a named method with the request ctx, a closure with a WithTimeout of it, gin.
    # silent: WaitGroup join, channel-receive join, WithoutCancel, a keep-alive loop on ctx.Done().
    result = analyse("da202/go")
    assert da202_findings(result) == [
        ("DA202", "da202/go/api/runs.go", 31),
        ("DA202", "da202/go/api/runs.go", 38),
        ("DA202", "da202/go/ginapi/reindex.go", 19),
    ]
    start = next(f for f in result.findings if f.rule_id == "DA202" and f.location.line == 31)
    assert "handler Server.StartRun uses the request's context r.Context()" in start.message
    assert [rel(r.location) for r in start.related] == [("da202/go/api/runs.go", 30)]
    later = next(f for f in result.findings if f.rule_id == "DA202" and f.location.line == 38)
    assert "deadline on the path: context.WithTimeout 120 s" in [r.message for r in later.related]
    assert "context.WithoutCancel" in later.fix


def test_demo_legacy_goroutine_is_joined():
    assert da202_findings(analyse("demo")) == []


def test_a_context_rebound_to_a_deadline_on_some_paths():
    # fixtures/da202_rebind: `ctx, cancel = context.WithTimeout(ctx, …)` under an `if`
    # reads the ctx bound before it (no cycle): the metering goroutine still uses the
    # request's context (flagged). Audit detaches with WithoutCancel first (silent).
    result = analyse("da202_rebind")
    assert [where(f) for f in result.findings] == [("DA202", "da202_rebind/edge/proxy.go", 39)]


def test_a_select_joins_only_the_goroutine_that_sends_on_its_channel():
    # fixtures/da202_two_goroutines: search() starts a prefetch goroutine with the request
    # ctx that nothing waits for, then a suggestion goroutine joined by a select on its
    # channel (with a ctx.Done() arm). The select does not join the prefetch goroutine,
    # which does not send on that channel: flagged. The suggestion goroutine only computes
    # an answer (partial join, no state change) and batch() waits on its WaitGroup: silent.
    result = analyse("da202_two_goroutines")
    assert rule_findings(result, "DA202") == [("DA202", "da202_two_goroutines/api/search.go", 41)]


def test_a_goroutine_given_a_detached_context_is_judged_by_its_own_arguments():
    # fixtures/da202_detached_call: export.Runner.Run(ctx, id) rebinds ctx with WithTimeout
    # and uses it in a deferred closure. start runs it in a goroutine with r.Context()
    # (flagged); retry starts `go a.runner.Run(context.WithoutCancel(r.Context()), id)`:
    # inside Run and its closures, ctx is that detached argument, not the one start passes.
    result = analyse("da202_detached_call")
    assert rule_findings(result, "DA202") == [("DA202", "da202_detached_call/internal/api/api.go", 16)]


def test_a_goroutine_handing_the_request_context_to_a_library_call():
    # fixtures/da202_library_calls: the goroutines' only use of the context is a go-redis
    # call (`h.rdb.Publish(ctx, …)` with `ctx := r.Context()`, `h.rdb.XAdd(r.Context(), …)`):
    # library calls given a context are kept, whether the context is a local named so or
    # the request's own `r.Context()`. Shipped detaches with context.WithoutCancel: silent.
    # Receipt's goroutine gets the request context in a struct field and only builds a
    # request with it (`req, err := http.NewRequestWithContext(job.ctx, …)`, a call the
    # facts keep as the value it binds): flagged too.
    result = analyse("da202_library_calls")
    assert rule_findings(result, "DA202") == [
        ("DA202", "da202_library_calls/notify/handlers.go", 27),
        ("DA202", "da202_library_calls/notify/handlers.go", 39),
        ("DA202", "da202_library_calls/notify/handlers.go", 64),
    ]
