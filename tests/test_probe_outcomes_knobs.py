"""Probe of DA301/DA302/DA501/DA502 on a codebase written by a third team (a VM backup and
restore orchestrator, fixtures/probe/vmvault): Go states declared with iota in another
package, a StrEnum with `match`, a table built by a dict comprehension, gRPC and httpx
timeouts, knobs read through a Go helper and a pydantic-settings prefix, env layers and
profiles, a loaded YAML file and a Markdown knob table."""

from __future__ import annotations

from analysis_support import analyse, rule_findings

TREE = "probe/vmvault"


def test_failed_by_default():
    assert rule_findings(analyse(TREE), "DA301") == [
        ("DA301", f"{TREE}/internal/orchestrator/translate.go", 17),  # switch resp.Phase, default: StatusErrored
        ("DA301", f"{TREE}/restorer/outcomes.py", 22),  # match, case _: Outcome.ERROR
        ("DA301", f"{TREE}/restorer/outcomes.py", 42),  # dict-comprehension table .get(code, Outcome.FAILED)
    ]
    # silent: fromHypervisorHonest (default StatusUnknown), Status.String(), verify_outcome
    # (.get(..., Outcome.UNKNOWN)), honest_restore_outcome, status_message (HTTP status ->
    # message), log_level_for (a log-level mapper)


def test_timeout_recorded_as_failed():
    assert rule_findings(analyse(TREE), "DA302") == [
        ("DA302", f"{TREE}/internal/orchestrator/export.go", 49),  # DeadlineExceeded -> s.fail() sets StatusErrored
        ("DA302", f"{TREE}/internal/orchestrator/export.go", 62),  # codes.DeadlineExceeded -> StatusErrored
        ("DA302", f"{TREE}/restorer/worker.py", 33),  # (ReadTimeout, WriteTimeout) -> "failed"
    ]
    # silent: httpx.ConnectTimeout -> "failed", a permit wait (semaphore Acquire, wait_for on
    # acquire()) -> failed, DeadlineExceeded -> s.park() (StatusUnknown)


def test_dead_timeout_knob():
    assert rule_findings(analyse(TREE), "DA501") == [
        ("DA501", f"{TREE}/.env.example", 3),  # VMV_QUIESCE_TIMEOUT documented, never read
        ("DA501", f"{TREE}/config/restore.yaml", 2),  # verify_timeout in the loaded YAML, never read
        ("DA501", f"{TREE}/docs/OPERATIONS.md", 7),  # VMV_CHECKSUM_TIMEOUT in the docs table
    ]
    # silent: GOGC, UVICORN_TIMEOUT_KEEP_ALIVE (runtimes), VMV_POLL_INTERVAL and BACKUP_TIMEOUT
    # (read through getenvDuration), RESTORER_HANDSHAKE_TIMEOUT (pydantic env_prefix)


def test_default_drift():
    assert rule_findings(analyse(TREE), "DA502") == [
        ("DA502", f"{TREE}/.env", 1),  # BACKUP_TIMEOUT=2h vs 5*time.Second
        ("DA502", f"{TREE}/.env.production", 1),  # RESTORE_POLL_MS=5000 vs "500": exactly 10x
    ]
    # silent: RESTORE_FLUSH_TIMEOUT_MS 5000 vs 1000 (5x), VMV_POLL_INTERVAL 15s vs 10s
