"""DA103 renewal-slower-than-lease on independent shapes of the defect, and on correct code."""

from __future__ import annotations

from analysis_support import analyse, rel, where


def da103(result):
    return sorted((*where(f), f.severity) for f in result.findings if f.rule_id == "DA103")


def test_go_sleep_loop_renewing_through_a_helper_with_env_period():
    # period from an env layer (50 s) vs a TTL constant in another package (60 s), renewed
    # in a helper; the ticker at a third, an unrelated ticker and a one-shot SetNX are silent
    result = analyse("da103/go")
    assert da103(result) == [("DA103", "da103/go/internal/locks/locks.go", 20, "warning")]
    f = result.findings[0]
    assert "renewal every 50 s" in f.message and "60 s TTL" in f.message
    assert "compiled defaults: every 20 s" in f.message
    assert [rel(r.location) for r in f.related] == [("da103/go/internal/locks/locks.go", 26)]
    assert f.flow[0].node == "env:LOCK_RENEW_EVERY"


def test_python_sleep_loop_with_pexpire_in_milliseconds():
    # 45 s from .env against a 40 s TTL given in ms to PEXPIRE through a helper: error;
    # renewal at a third, a poll loop without a lease and a one-shot SET NX EX are silent
    result = analyse("da103/py")
    assert da103(result) == [("DA103", "da103/py/worker/lease.py", 12, "error")]
    f = result.findings[0]
    assert "45 s" in f.message and "40 s TTL" in f.message
    assert [rel(r.location) for r in f.related] == [("da103/py/worker/lease.py", 7)]


def test_warn_ratio_option():
    from deadline_audit.checks import da103
    from analysis_support import build

    graph = build("da103/go").graph
    assert [f.severity for f in da103.check(graph, {"warn-ratio": 1.0})] == []
    # 0.3: the ticker at a third (20 s of 60 s) becomes a warning too
    assert [f.severity for f in da103.check(graph, {"warn-ratio": 0.3})] == ["warning", "warning"]
