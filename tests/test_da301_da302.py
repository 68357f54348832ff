"""DA301 failed-by-default and DA302 timeout-recorded-as-failed on fixture codebases
written as different teams would: positives and near misses in the same trees."""

from __future__ import annotations

from analysis_support import analyse, finding_at, rel, rule_findings, where


def test_da301_go_shapes():
    # default returning a constant declared in another package; an errors.Is ladder whose
    # final else assigns a field; a map[Code]State table with a `, ok` fallback; a gRPC
    # status.Code switch whose default is an ERROR state; a run of early returns.
    # Silent: the admission classifier defaulting to unknown, a lone `if err != nil`,
    # an HTTP status -> message mapper, a log-level mapper, a local process status
    # switch defaulting to "exited", a ladder ending in JobUnknown, a mapper of statuses
    # to kinds of error (all of them failures), mappers into enums of failure causes
    # (taskcause/cause.go: `TaskFailedCauseTimeout` says why it failed, not whether).
    result = analyse("da301/go")
    assert rule_findings(result, "DA301") == [
        ("DA301", "da301/go/backup/backup.go", 36),
        ("DA301", "da301/go/backup/backup.go", 50),
        ("DA301", "da301/go/deploy/classify.go", 15),
        ("DA301", "da301/go/deploy/classify.go", 50),  # default delegated to a helper
        ("DA301", "da301/go/grpcjob/status.go", 48),
        ("DA301", "da301/go/grpcjob/status.go", 61),
        ("DA301", "da301/go/grpcjob/status.go", 74),  # no default: the return after the switch
        ("DA301", "da301/go/mirror/sync.go", 29),  # `if s, ok := states[answer]; ok` on a local map
    ]
    assert rule_findings(result, "DA302") == []
    cross = finding_at(result, "DA301", "deploy/classify.go", 15)
    assert "state.DeployFailed" in cross.message and "state.DeployUnknown (already declared)" in cross.message
    # the classifier, then the declarations of the failure state and of the uncertain one
    assert [rel(r.location) for r in cross.related] == [
        ("da301/go/deploy/classify.go", 8), ("da301/go/state/states.go", 10), ("da301/go/state/states.go", 11)]
    iota = finding_at(result, "DA301", "backup/backup.go", 36)
    assert "backup.PhaseLost" in iota.message  # the uncertain member of the same iota group
    grpc = finding_at(result, "DA301", "grpcjob/status.go", 48)
    assert "grpcjob.JobErrored" in grpc.message and "grpcjob.JobUnknown" in grpc.message


def test_da301_python_shapes():
    # `.get(code, JobState.FAILED)` on a module table; `case _:` returning an Enum member
    # whose name means failure; an exception ladder ending in `except Exception: status =
    # "failed"`; an isinstance if/elif chain with a final else returning "errored".
    # Silent: the same shapes with uncertain defaults, a lone check, an HTTP error-page
    # mapper whose default message contains "failed", a log-level mapper, a try whose only
    # handler is the catch-all.
    result = analyse("da301/py")
    assert rule_findings(result, "DA301") == [
        ("DA301", "da301/py/orchestra/classify.py", 15),
        ("DA301", "da301/py/orchestra/classify.py", 29),
        ("DA301", "da301/py/orchestra/classify.py", 56),  # else: self._unlisted(phase)
        ("DA301", "da301/py/orchestra/classify.py", 68),  # `if phase in TABLE: return TABLE[phase]`
        ("DA301", "da301/py/orchestra/classify.py", 78),  # a class-level table: self._PHASES.get
        ("DA301", "da301/py/orchestra/classify.py", 91),  # TABLE.get(code) or JobState.FAILED
        ("DA301", "da301/py/orchestra/classify.py", 95),  # TABLE[code] if code in TABLE else FAILED
        ("DA301", "da301/py/orchestra/classify.py", 101),  # try: TABLE[code] / except KeyError
        ("DA301", "da301/py/orchestra/classify.py", 112),  # match without case _: the return after it
        ("DA301", "da301/py/orchestra/runner.py", 27),
        ("DA301", "da301/py/orchestra/runner.py", 41),
        ("DA301", "da301/py/orchestra/runner.py", 56),  # success path + one listed error + catch-all
        ("DA301", "da301/py/orchestra/states.py", 31),  # Enum._missing_ returns cls.FAILED
    ]
    get = finding_at(result, "DA301", "orchestra/classify.py", 15)
    assert "JobState.FAILED" in get.message and "JobState.UNKNOWN (already declared)" in get.message
    missing = finding_at(result, "DA301", "orchestra/states.py", 31)
    assert "DeploymentPhase._missing_" in missing.message and "declare one" in missing.message
    match = finding_at(result, "DA301", "orchestra/classify.py", 29)
    assert "ExportStatus.NEEDS_RECONCILIATION" in match.message


def test_da302_go_shapes():
    # context.DeadlineExceeded case returning a failure constant of another package; a
    # timeout helper (isTimeout: os.ErrDeadlineExceeded / net.Error.Timeout) whose branch
    # calls store.MarkFailed (a helper that records failure); net.Error.Timeout(); HTTP 504;
    # gRPC codes.DeadlineExceeded. Silent: HTTP 408, a semaphore wait, a timeout recorded
    # as unknown next to a log line saying "failed", a lone `if err != nil`, a negated
    # timeout test, a helper that starts from failed and always overwrites it, a
    # DeadlineExceeded of a semaphore Acquire (a permit wait before the transfer left).
    result = analyse("da302/go")
    assert rule_findings(result, "DA302") == [
        ("DA302", "da302/go/rpc/ops.go", 25),
        ("DA302", "da302/go/rpc/ops.go", 34),  # the second result of `return "…", OpFailed`
        ("DA302", "da302/go/runs/dispatch.go", 31),
        ("DA302", "da302/go/runs/dispatch.go", 48),
        ("DA302", "da302/go/runs/dispatch.go", 81),  # select: <-time.After(limit)
        ("DA302", "da302/go/runs/dispatch.go", 132),  # return giveUp(r) -> store.MarkFailed -> RunFailed
        ("DA302", "da302/go/runs/dispatch.go", 140),  # store.FailRun: UPDATE runs SET status = 'failed'
        ("DA302", "da302/go/transfer/bank.go", 29),
        ("DA302", "da302/go/transfer/bank.go", 43),
        ("DA302", "da302/go/workflow/activity.go", 28),  # errors.As(err, &te) with te *temporal.TimeoutError
        ("DA302", "da302/go/workflow/activity.go", 42),  # type switch case *temporal.TimeoutError
    ]
    helper = finding_at(result, "DA302", "runs/dispatch.go", 48)
    assert "store.MarkFailed() → store.RunFailed" in helper.message
    assert "os.ErrDeadlineExceeded" in helper.message and "store.RunUnknown" in helper.message
    assert [rel(r.location) for r in helper.related] == [
        ("da302/go/runs/dispatch.go", 47), ("da302/go/store/states.go", 8), ("da302/go/store/states.go", 9)]
    bank = finding_at(result, "DA302", "transfer/bank.go", 43)
    assert "transfer.TransferNeedsReconciliation" in bank.message


def test_da302_python_shapes():
    # ReadTimeout -> a failing ledger helper; asyncio.TimeoutError -> state = FAILED;
    # isinstance on requests.ReadTimeout / concurrent.futures.TimeoutError (imported under
    # an alias) -> "failed"; WriteTimeout -> a helper whose body writes FAILED. Silent:
    # ConnectTimeout, PoolTimeout, requests.ConnectTimeout, httpx.TimeoutException recorded
    # as in doubt after a log line saying "failed", Celery's SoftTimeLimitExceeded, a log
    # event named "payment_failed", `if not isinstance(exc, TimeoutError)`, a timed-out
    # wait for a semaphore permit before the capture was sent; a feed link's own
    # ConnectionState.FAILED after a connect timeout (acquirer_link.py: a connection's state).
    result = analyse("da302/py")
    assert rule_findings(result, "DA302") == [
        ("DA302", "da302/py/payments/acquirer.py", 28),
        ("DA302", "da302/py/payments/acquirer.py", 39),
        ("DA302", "da302/py/payments/acquirer.py", 50),
        ("DA302", "da302/py/payments/acquirer.py", 85),
        ("DA302", "da302/py/payments/acquirer.py", 109),  # match case FutureTimeout(): return FAILED, why
        ("DA302", "da302/py/payments/acquirer.py", 123),  # if _is_slow(exc): a helper testing timeouts
    ]
    assert rule_findings(result, "DA301") == []
    body = finding_at(result, "DA302", "payments/acquirer.py", 85)
    assert "_give_up() → PaymentState.FAILED" in body.message and "PaymentState.IN_DOUBT" in body.message


def test_outcome_vocabulary_extends_from_config(tmp_path):
    # "scrapped" means failure only in this project: the catalog learns it from config
    from deadline_audit import pipeline
    from deadline_audit.config import load_config

    (tmp_path / "jobs.py").write_text(  # (a file is parsed when it names a timeout or a state word)
        "def job_state(code):  # after a timeout too\n"
        "    match code:\n"
        "        case 'ok':\n"
        "            return 'succeeded'\n"
        "        case 'denied':\n"
        "            return 'rejected'\n"
        "        case _:\n"
        "            return 'scrapped'\n")

    def da301_lines():
        result = pipeline.analyse([tmp_path], load_config([tmp_path]), use_cache=False)
        return [f.location.line for f in result.findings if f.rule_id == "DA301"]

    assert da301_lines() == []
    (tmp_path / "pyproject.toml").write_text(
        '[tool.deadline-audit.catalog.outcomes]\nfailure_states = ["scrapped"]\n')
    assert da301_lines() == [7]


def test_timeouts_before_anything_was_sent_go():
    # fixtures/da302_before_send: `opErr.Op == "dial" && opErr.Timeout()` is a timeout of the
    # dial (silent); a permit wait whose error is tested after `cancel()` (silent); the
    # deadline of the POST itself mapped to failed is flagged.
    result = analyse("da302_before_send")
    assert rule_findings(result, "DA302") == [("DA302", "da302_before_send/dispatch/send.go", 29)]
    assert rule_findings(result, "DA301") == []


def test_render_states_of_remote_print_jobs_and_attrs_factory_defaults():
    # fixtures/py_attrs_render: `RenderState` names the outcome of remote print jobs (a
    # `.get(code, RenderState.FAILED)` fallback: DA301); the digest's deadline is an attrs
    # field whose `factory=lambda: …` reads the environment (20 s), around a streamed
    # completion (DA102).
    result = analyse("py_attrs_render")
    assert sorted((f.rule_id, f.location.path.split("py_attrs_render/")[-1], f.location.line)
                  for f in result.findings) == [
        ("DA102", "press/digest.py", 14), ("DA301", "press/outcomes.py", 21)]
    assert "20 s" in finding_at(result, "DA102", "press/digest.py", 14).message


def test_reservations_at_a_remote_channel_manager_are_work():
    # fixtures/da30x_bookings: ReservationState names the outcome of a hold asked of a hotel's
    # channel manager (work nouns: booking, reservation, shipment, carrier are catalog data):
    # a reply-code switch that defaults to failed (DA301) and a deadline mapped to failed (DA302).
    result = analyse("da30x_bookings")
    assert rule_findings(result, "DA301") == [("DA301", "da30x_bookings/hotels/outcome.go", 25)]
    assert rule_findings(result, "DA302") == [("DA302", "da30x_bookings/hotels/outcome.go", 36)]


def test_states_whose_enum_models_an_unknown_outcome_are_outcomes_of_work():
    # fixtures/da302_uncertain_enum: no name says "job" or "task", but PreviewState has an
    # UNKNOWN member beside FAILED, so its classifiers map outcomes of work: snapshot's
    # ReadTimeout → FAILED is flagged (its ConnectTimeout → FAILED is not: nothing was
    # sent); thumbnail maps the timeout to UNKNOWN (correct); Reachability has no unknown
    # member and no work noun (a link check's verdict): silent, as before.
    # worker.py records through `self._ledger.mark_failed(…)`, a helper of another class
    # reached through the receiver's type: its ReadTimeout branch is flagged, its
    # PoolTimeout branch is not (nothing was sent).
    result = analyse("da302_uncertain_enum")
    assert rule_findings(result, "DA302") == [
        ("DA302", "da302_uncertain_enum/previews/renderer.py", 21),
        ("DA302", "da302_uncertain_enum/previews/worker.py", 22),
    ]
    assert rule_findings(result, "DA301") == []
    f = finding_at(result, "DA302", "previews/renderer.py", 21)
    assert "PreviewState.UNKNOWN" in f.message
    assert "mark_failed() → PreviewState.FAILED" in finding_at(result, "DA302", "previews/worker.py", 22).message


def test_counters_named_in_a_metrics_package_are_not_states():
    # fixtures/da301_counters: a switch over request types whose branches only count
    # (`c.scope.IncCounter(metrics.RequestFailureCorruptCount)` in `default:`); the
    # metrics package also declares a DispatchTimeoutCount, which once made the counters
    # look like a state enum with an uncertain member. Counting is not recording a state.
    result = analyse("da301_counters")
    assert rule_findings(result, "DA301") == []
    assert rule_findings(result, "DA302") == []


def test_a_program_exception_deriving_from_a_timeout_is_a_timeout():
    # fixtures/da302_exception_classes: NodeSlow(HandoffError, TimeoutError) and its subclass
    # NodeDeadline are timeouts after the job was sent: mapping them to FAILED is flagged.
    # NodeSaturated derives from httpx.PoolTimeout (nothing was sent) and NodeRefused from
    # no timeout: their FAILED is not. relay/table.py loops over a table of (type, state)
    # pairs, then checks one more error before its `return`: the table's asyncio.TimeoutError
    # → FAILED entry is flagged, its ConnectTimeout → FAILED (nothing sent) is not.
    result = analyse("da302_exception_classes")
    assert rule_findings(result, "DA302") == [
        ("DA302", "da302_exception_classes/relay/outcome.py", 11),
        ("DA302", "da302_exception_classes/relay/outcome.py", 13),
        ("DA302", "da302_exception_classes/relay/table.py", 12),
    ]


def test_a_map_lookup_inside_a_run_of_returning_ifs_classifies_by_its_entries():
    # fixtures/da301_map_in_run: `if code == 202 {…}; if st, ok := relayCodes[reason]; ok
    # { return st }; return DeliveryFailed`: the map's entries are branches of the same
    # classifier, whose fallback is failed (flagged at the final return); retryState's
    # fallback is unknown (not flagged).
    result = analyse("da301_map_in_run")
    assert rule_findings(result, "DA301") == [("DA301", "da301_map_in_run/courier/status.go", 31)]


def test_states_named_through_cls_in_an_enums_classmethods():
    # fixtures/da30x_enum_classmethods: the enum's own classmethods name its members as
    # `cls.FAILED`. from_supplier's `.get(code, cls.FAILED)` defaults to a failure (DA301,
    # line 19); from_partner's default is cls.UNKNOWN (silent). from_error's `match`:
    # `case asyncio.TimeoutError(): return cls.FAILED` records a timeout as failed (DA302,
    # line 31); the connector error before it proves nothing was sent.
    result = analyse("da30x_enum_classmethods")
    assert rule_findings(result, "DA301") == [("DA301", "da30x_enum_classmethods/sync/outcome.py", 19)]
    assert rule_findings(result, "DA302") == [("DA302", "da30x_enum_classmethods/sync/outcome.py", 31)]


def test_a_loop_over_a_slice_of_rule_rows_classifies_by_its_rows():
    # fixtures/da301_go_rule_table: rolloutPhase loops over a package slice of anonymous
    # structs written without keys ({ErrX, PhaseFailed}) testing `errors.Is(err, m.target)`,
    # then an errors.As check, then `return PhaseFailed` (DA301 at the final return).
    # hookResult's rows are a local slice of named structs with matcher functions
    # ({test: isErr(ErrX), result: …}) and fall back to HookUnknown: silent. stepState
    # falls back to unknown, but one of its rows records context.DeadlineExceeded as
    # StepFailed (DA302 at that row's state).
    result = analyse("da301_go_rule_table")
    assert rule_findings(result, "DA301") == [("DA301", "da301_go_rule_table/rollout/phase.go", 42)]
    assert rule_findings(result, "DA302") == [("DA302", "da301_go_rule_table/rollout/steps.go", 22)]
    f = finding_at(result, "DA301", "rollout/phase.go", 42)
    assert "PhaseIndeterminate" in f.message


def test_states_of_an_enum_declared_in_a_module_named_errors():
    # fixtures/da30x_errors_module: RunState lives in exports/errors.py (a module name
    # that is no logger or counter receiver): `_BY_STATUS.get(status, RunState.FAILED)`
    # is DA301 and `isinstance(exc, httpx.ReadTimeout)` -> FAILED is DA302. Silent: the
    # receipt classifier whose `case _` is UNKNOWN.
    result = analyse("da30x_errors_module")
    assert sorted(where(f) for f in result.findings) == [
        ("DA301", "da30x_errors_module/exports/errors.py", 26),
        ("DA302", "da30x_errors_module/exports/errors.py", 33),
    ]
