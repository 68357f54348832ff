"""Shapes from the tenth blind round (fixtures/round10_shapes), in other names."""

from __future__ import annotations

from analysis_support import analyse, finding_at, rel, where


def test_exact_findings():
    # DA103: `SET visible_after = now() + $2` with a time.Duration bound (an interval) is
    # renewed every 50 s for a 45 s TTL by the keeper goroutine (worker.go:19); the poll
    # loop that starts that keeper and claims rows with FOR UPDATE SKIP LOCKED is no
    # renewal. DA201: `finish_rollout` inside the coroutine given to a multi-line
    # `asyncio.wait_for` (rollout.py:32). No DA101: the lease's `except CancelledError:`
    # cleanup call on the 10 s control-plane client is not the supervised work, and the
    # agent's 900 s total is longer than the 120 s lease.
    result = analyse("round10_shapes")
    assert sorted(where(f) for f in result.findings) == [
        ("DA103", "round10_shapes/queue/worker.go", 19),
        ("DA201", "round10_shapes/py/deploykit/rollout.py", 32),
    ]
    renew = finding_at(result, "DA103", "queue/worker.go", 19)
    assert "50 s" in renew.message and "45 s TTL" in renew.message
    assert [rel(r.location) for r in renew.related] == [("round10_shapes/queue/store.go", 25)]
