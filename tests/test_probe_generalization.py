"""A third team's codebase (a video transcoding service, fixtures/probe/reelforge) probing
whether DA101/DA102/DA103/DA201/DA202 generalise beyond the shapes they were built on:
functional options, an AfterFunc lease runner named only by its function name, a Go
lease store behind an interface, `WithTimeoutCause`, gin/echo handlers, errgroup, a
Python holder method whose TTL is the object's own (`Claim(..., ttl=120).held()`),
anyio task groups, `asyncio.TaskGroup`, httpx clients in a `cached_property`,
SQLAlchemy `update(...).values(status=...)`. Each rule has positives and near misses in
the same tree; the expected sets are exact."""

from __future__ import annotations

import pytest

from analysis_support import analyse, finding_at, rule_findings

ROOT = "probe/reelforge"
EXPECTED = {
    "DA101": [
        ("DA101", f"{ROOT}/internal/encode/runner.go", 38),  # WithTimeoutCause 90 s in the op under leased(2 min)
        ("DA101", f"{ROOT}/internal/encode/runner.go", 76),  # 45 s in a closure given to leased
        ("DA101", f"{ROOT}/internal/encode/watchdog.go", 34),  # AfterFunc(w.ttl) in (w *Watchdog).Supervise(ctx, op)
        ("DA101", f"{ROOT}/reelpy/jobs.py", 17),  # asyncio.timeout 30 s under claim.held(), ttl=120 at construction
    ],
    "DA102": [
        ("DA102", f"{ROOT}/cmd/reelforge/main.go", 14),  # Client.Timeout on an event-stream body
        ("DA102", f"{ROOT}/cmd/reelforge/main.go", 34),  # WriteTimeout over a gin SSE handler (r.POST via api.Routes(r))
        ("DA102", f"{ROOT}/internal/httpapi/live.go", 25),  # WriteTimeout over an echo handler (e.GET), 2nd server
        ("DA102", f"{ROOT}/reelpy/mirror.py", 8),  # aiohttp ClientTimeout(total=) over iter_chunked
        ("DA102", f"{ROOT}/reelpy/mirror.py", 24),  # anyio.fail_after around client.stream + aiter_lines
        ("DA102", f"{ROOT}/reelpy/origin.py", 18),  # asyncio.timeout around client.stream + aiter_bytes
    ],
    "DA103": [
        ("DA103", f"{ROOT}/internal/lease/lease.go", 68),  # ticker == TTL, Extend through an interface
        ("DA103", f"{ROOT}/internal/lease/pulse.go", 10),  # 15 s / 15 s given by functional options to New
        ("DA103", f"{ROOT}/reelpy/beacon.py", 18),  # time.sleep(TTL) in a thread renewing with expire(TTL)
        ("DA103", f"{ROOT}/reelpy/claims.py", 39),  # anyio.sleep(self.ttl) then expire(self.ttl)
        ("DA103", f"{ROOT}/reelpy/keeper.py", 15),  # 30 s vs 40 s TTL in an asyncio.TaskGroup task
    ],
    "DA201": [
        ("DA201", f"{ROOT}/internal/httpapi/echo.go", 23),  # helper called with an echo request ctx
        ("DA201", f"{ROOT}/internal/httpapi/gin.go", 34),  # synchronous gin handler, c.Request.Context()
        ("DA201", f"{ROOT}/internal/httpapi/gin.go", 51),  # goroutine keeps the request ctx
        ("DA201", f"{ROOT}/internal/httpapi/more.go", 15),  # go func(ctx)(c.Request().Context())
        ("DA201", f"{ROOT}/internal/httpapi/more.go", 27),  # deferred write with the echo request ctx
        ("DA201", f"{ROOT}/reelpy/sweeper.py", 12),  # text("UPDATE ... status") in the coroutine given to wait_for
        ("DA201", f"{ROOT}/reelpy/worker.py", 19),  # SQLAlchemy update(...).values(status=) inside asyncio.timeout
        ("DA201", f"{ROOT}/reelpy/worker.py", 34),  # finally: under anyio, unshielded
    ],
    "DA202": [
        ("DA202", f"{ROOT}/internal/httpapi/echo.go", 29),  # go h.process(c.Request().Context(), ...)
        ("DA202", f"{ROOT}/internal/httpapi/gin.go", 45),  # go func() using c.Request.Context()
        ("DA202", f"{ROOT}/internal/httpapi/more.go", 13),  # the request ctx passed as the literal's argument
    ],
}


@pytest.fixture(scope="module")
def result():
    return analyse(ROOT)


@pytest.mark.parametrize("rule", sorted(EXPECTED))
def test_exact_findings(result, rule):
    assert rule_findings(result, rule) == EXPECTED[rule]


def test_near_misses_are_silent(result):
    # derived cap L*(n+1), a 10 min cap and a 900 s scope under 120 s leases; ttl/3
    # renewals; WithoutCancel; errgroup joined; a watcher that stops with the request;
    # a write after the timeout scope; a shielded finally; a stream without a total deadline
    lines = {(f.rule_id, f.location.path.rsplit("reelforge/", 1)[-1], f.location.line) for f in result.findings}
    for silent in [("DA101", "internal/encode/runner.go", 44), ("DA101", "internal/encode/runner.go", 67),
                   ("DA101", "reelpy/jobs.py", 23), ("DA103", "internal/lease/lease.go", 45),
                   ("DA103", "reelpy/claims.py", 17), ("DA103", "reelpy/keeper.py", 20),
                   ("DA201", "internal/httpapi/gin.go", 66), ("DA201", "reelpy/worker.py", 28),
                   ("DA201", "reelpy/worker.py", 41), ("DA202", "internal/httpapi/gin.go", 60),
                   ("DA202", "internal/httpapi/gin.go", 75), ("DA202", "internal/httpapi/echo.go", 37),
                   ("DA102", "reelpy/origin.py", 24), ("DA102", "reelpy/origin.py", 29),
                   ("DA102", "reelpy/mirror.py", 16), ("DA201", "internal/httpapi/more.go", 37),
                   ("DA202", "internal/httpapi/more.go", 46), ("DA201", "reelpy/sweeper.py", 26),
                   ("DA101", "internal/encode/watchdog.go", 46)]:
        assert silent not in lines


def test_field_ttl_holder_reads_the_constructor_argument(result):
    f = finding_at(result, "DA101", "reelpy/jobs.py", 17)
    assert "the lease 120 s" in f.message


def test_runner_named_as_a_lease_is_a_lease(result):
    f = finding_at(result, "DA101", "encode/runner.go", 76)
    assert "45 s" in f.message and "120 s" in f.message


def test_functional_options_renewal(result):
    # New(store, key, WithTTL(15 s), WithRenewEvery(15 s)): the fields of that one object,
    # where globally each field has two values (New's defaults and the option's parameter)
    f = finding_at(result, "DA103", "internal/lease/pulse.go", 10)
    assert "renewal every 15 s" in f.message and "15 s TTL" in f.message
    assert [(r.location.path.rsplit("reelforge/", 1)[-1], r.location.line) for r in f.related] == [
        ("internal/lease/pulse.go", 17), ("internal/lease/pulse.go", 25)]


def test_evidence_names_the_function_actually_called(result):
    # one catalog entry groups several functions; the finding names the one written
    assert "(time.sleep)" in finding_at(result, "DA103", "reelpy/beacon.py", 18).message
    assert "(anyio.sleep)" in finding_at(result, "DA103", "reelpy/claims.py", 39).message
    assert finding_at(result, "DA101", "encode/runner.go", 38).message.startswith("context.WithTimeoutCause 90 s")
