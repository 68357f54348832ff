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
        ("DA301", f"{TREE}/internal/replica/replica.go", 35),  # map lookup, then return SyncFailed
        ("DA301", f"{TREE}/internal/replica/replica.go", 47),  # switch status.Code(err): gRPC codes mean remote work
        ("DA301", f"{TREE}/internal/replica/replica.go", 98),  # error ladder: err == nil / timeouts / default failed
        ("DA301", f"{TREE}/restorer/outcomes.py", 22),  # match, case _: Outcome.ERROR
        ("DA301", f"{TREE}/restorer/outcomes.py", 42),  # dict-comprehension table .get(code, Outcome.FAILED)
        ("DA301", f"{TREE}/restorer/verify.py", 31),  # if/elif/else; work named only by "restored" in the module doc
        ("DA301", f"{TREE}/restorer/verify.py", 39),  # if-run of a task's exit code, then return "failed"
    ]
    # silent: fromHypervisorHonest (default StatusUnknown), Status.String(), verify_outcome
    # (.get(..., Outcome.UNKNOWN)), honest_restore_outcome, status_message (HTTP status ->
    # message), log_level_for (a log-level mapper), replica.statusText (HTTP status -> text),
    # near_miss.describe (HTTP status table .get(code, "failed"))


def test_timeout_recorded_as_failed():
    assert rule_findings(analyse(TREE), "DA302") == [
        ("DA302", f"{TREE}/imaging/probe.py", 8),  # the unit of work is named only by the parameter job_id
        ("DA302", f"{TREE}/internal/orchestrator/export.go", 49),  # DeadlineExceeded -> s.fail() sets StatusErrored
        ("DA302", f"{TREE}/internal/orchestrator/export.go", 62),  # codes.DeadlineExceeded -> StatusErrored
        ("DA302", f"{TREE}/internal/replica/replica.go", 93),  # errors.As(err, &ne) && ne.Timeout()
        ("DA302", f"{TREE}/internal/replica/replica.go", 95),  # case errors.Is(err, context.DeadlineExceeded)
        ("DA302", f"{TREE}/restorer/verify.py", 56),  # asyncio.timeout block, TimeoutError -> helper(FAILED)
        ("DA302", f"{TREE}/restorer/verify.py", 65),  # exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        ("DA302", f"{TREE}/restorer/verify.py", 72),  # httpx.TimeoutException proves nothing
        ("DA302", f"{TREE}/restorer/worker.py", 33),  # (ReadTimeout, WriteTimeout) -> "failed"
    ]
    # silent: httpx.ConnectTimeout / PoolTimeout -> "failed", a permit wait (semaphore Acquire,
    # wait_for on acquire()) -> failed, DeadlineExceeded -> s.park() (StatusUnknown),
    # os.IsTimeout -> SyncUnknown, wait_for -> CheckState.UNKNOWN, probe_disk (no unit of work),
    # near_miss.submit_job ((ConnectTimeout, PoolTimeout), ConnectError, ReadTimeout -> raise)


def test_dead_timeout_knob():
    assert rule_findings(analyse(TREE), "DA501") == [
        ("DA501", f"{TREE}/.env.example", 3),  # VMV_QUIESCE_TIMEOUT documented, never read
        ("DA501", f"{TREE}/.env.sample", 4),  # SCHED_ORPHAN_TTL documented, never read
        ("DA501", f"{TREE}/config/replica.yaml", 4),  # nested replica.lag_lease_ttl, never read
        ("DA501", f"{TREE}/config/restore.yaml", 2),  # verify_timeout in the loaded YAML, never read
        ("DA501", f"{TREE}/docs/OPERATIONS.md", 7),  # VMV_CHECKSUM_TIMEOUT in the docs table
        ("DA501", f"{TREE}/docs/REPLICA.md", 4),  # code span in a bullet list (PREFIX + "_DRAIN_TIMEOUT"
        # resolves to one name, not a glob that would read every *_DRAIN_TIMEOUT)
        ("DA501", f"{TREE}/docs/REPLICA.md", 7),  # fenced env block
    ]
    # silent: GOGC, UVICORN_TIMEOUT_KEEP_ALIVE (runtimes), VMV_POLL_INTERVAL and BACKUP_TIMEOUT
    # (read through getenvDuration), RESTORER_HANDSHAKE_TIMEOUT (pydantic env_prefix),
    # REPLICA_GO_ONLY_TIMEOUT (in a fenced Go block), replica.heartbeat_interval (read),
    # SCHED_SNAPSHOT_TIMEOUT / SCHED_LOCK_LEASE (env / envconfig struct tags), SCHED_DRAIN_TIMEOUT


def test_default_drift():
    assert rule_findings(analyse(TREE), "DA502") == [
        ("DA502", f"{TREE}/.env", 1),  # BACKUP_TIMEOUT=2h vs 5*time.Second
        ("DA502", f"{TREE}/.env", 7),  # REPLICA_SYNC_TIMEOUT_SECONDS=600 vs envSeconds(..., 30): 20x
        ("DA502", f"{TREE}/.env", 8),  # RESTORE_VERIFY_TIMEOUT=60 vs os.environ.get(..., 2.5)
        ("DA502", f"{TREE}/.env", 9),  # SCHED_DRAIN_TIMEOUT=10m vs `d := 20 * time.Second` it overrides
        ("DA502", f"{TREE}/.env", 10),  # SCHEDPY_WINDOW_TIMEOUT=600 vs timedelta(seconds=5), env_prefix
        ("DA502", f"{TREE}/.env", 12),  # JANITOR_SWEEP_TIMEOUT=120 vs `timeout = 4` the Python read overrides
        ("DA502", f"{TREE}/.env.production", 1),  # RESTORE_POLL_MS=5000 vs "500": exactly 10x
        ("DA502", f"{TREE}/config/replica.yaml", 2),  # sync_timeout 45 vs .get("sync_timeout", 4.5): 10x
    ]
    # silent: RESTORE_FLUSH_TIMEOUT_MS 5000 vs 1000 (5x), VMV_POLL_INTERVAL 15s vs 10s,
    # SCHEDPY_CLEANUP_INTERVAL 300 vs 60.0 (5x)
