"""DA403 wire-unit-mismatch across components (Python panel -> Go relay, Go relay -> Go hub)."""

from __future__ import annotations

from analysis_support import analyse, finding_at, rel, rule_findings

T = "da403"


def test_every_unit_mismatch_reported_at_the_receiving_field():
    result = analyse(T)
    assert rule_findings(result, "DA403") == [
        # Go -> Go: (90 * time.Second).String() = "1m30s" into an int field
        ("DA403", f"{T}/hub/internal/intake/result.go", 12),
        # Go -> Python: a time.Duration (integer ns on the wire) read with timedelta(seconds=...)
        ("DA403", f"{T}/panel/panel/acks.py", 7),
        # Python -> Go: seconds (pydantic-settings default 5) into a time.Duration (5 ns)
        ("DA403", f"{T}/relay/internal/cmd/types.go", 9),
        # Python -> Go: drain_wait_ms sent as `wait`, converted with time.Second
        ("DA403", f"{T}/relay/internal/cmd/types.go", 23),
    ]
    # negatives: milliseconds on both sides (types.go:17 interval_ms * time.Millisecond),
    # seconds converted correctly (types.go:30 hold_seconds * time.Second), a time.Duration on
    # both sides of a Go -> Go wire (result.go:18 took), float seconds read as seconds by
    # Python (acks.py:14 elapsed_s)


def test_related_is_the_sender():
    result = analyse(T)
    f = finding_at(result, "DA403", "hub/internal/intake/result.go")
    assert "1m30s" in f.message and "an int" in f.message
    assert [rel(r.location) for r in f.related] == [(f"{T}/relay/internal/report/report.go", 27)]
    probe = finding_at(result, "DA403", "relay/internal/cmd/types.go", 9)
    assert "nanoseconds" in probe.message
    assert [rel(r.location)[0] for r in probe.related] == [f"{T}/panel/panel/streams.py"]


def test_milliseconds_from_go_read_as_seconds_by_python_receivers():
    # fixtures/da403_python_receivers: the dispatcher sends `Deadline: budget.Milliseconds()`
    # into the pydantic Task.deadline that asyncio.timeout uses as seconds (flagged at the
    # field), and `BudgetMs` (budget_ms) to a Flask handler that reads it by key into
    # timedelta(seconds=…) (flagged at the read). poll_every_s is sent and read in seconds.
    result = analyse("da403_python_receivers")
    assert rule_findings(result, "DA403") == [
        ("DA403", "da403_python_receivers/workers/workers/portal.py", 12),
        ("DA403", "da403_python_receivers/workers/workers/tasks.py", 9),
    ]
    f = finding_at(result, "DA403", "workers/tasks.py", 9)
    assert "sent in milliseconds and used here as seconds" in f.message
    assert [rel(r.location) for r in f.related] == [("da403_python_receivers/dispatcher/internal/queue/queue.go", 27)]


def test_a_bare_number_in_a_loaded_config_file_into_a_duration_field():
    # fixtures/da403_config_numbers: gateway.yaml gives `shutdown_grace: 30` (a comment says
    # seconds) to a time.Duration field by its yaml tag, routes.json `"cache_timeout": 300`
    # by a json tag: both decode as nanoseconds, an error at each field with the value as
    # related. `idle_timeout: 90s` (a duration string), `dial_timeout_ms: 500` (an int
    # field) and `retry_backoff: 0` (0 in any unit) are fine.
    result = analyse("da403_config_numbers")
    assert rule_findings(result, "DA403") == [
        ("DA403", "da403_config_numbers/internal/conf/conf.go", 14),
        ("DA403", "da403_config_numbers/internal/conf/conf.go", 28),
    ]
    f = finding_at(result, "DA403", "internal/conf/conf.go", 14)
    assert "30 nanoseconds" in f.message
    assert [rel(r.location) for r in f.related] == [("da403_config_numbers/config/gateway.yaml", 3)]
