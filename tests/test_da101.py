"""DA101 shadowed-lease on independent shapes of the defect, and on correct code."""

from __future__ import annotations

import pytest

from analysis_support import analyse, finding_at, rel, rule_findings, where


def da101(result):
    return rule_findings(result, "DA101")


def by_line(result, path_suffix: str, line: int):
    return finding_at(result, "DA101", path_suffix, line)


# -- the incident (SPEC §1.1) ----------------------------------------------------------

def test_demo_flags_every_hard_deadline_that_shadows_a_lease():
    result = analyse("demo")
    assert da101(result) == [
        ("DA101", "demo/engine/internal/models/client.go", 36),
        ("DA101", "demo/engine/internal/models/openai.go", 20),
        ("DA101", "demo/service/service/llm.py", 12),
    ]


def test_demo_client_timeout_finding_carries_lease_and_layered_flow():
    f = by_line(analyse("demo"), "models/client.go", 36)
    assert f.location.column == 37  # the value `config.Timeout`
    assert "30 min" in f.message and "model_call lease" in f.message
    assert [rel(r.location) for r in f.related] == [("demo/engine/internal/agents/loop.go", 44)]
    source = f.flow[0]
    assert source.node == "env:MODEL_TIMEOUT"
    assert [(layer.raw, layer.wins) for layer in source.layers] == [("30m", False), ("30m", True)]
    assert [rel(layer) for layer in source.layers] == [("demo/engine/.env", 4), ("demo/engine/config/.env", 1)]
    assert source.default_seconds == 120.0
    assert rel(source.default_location) == ("demo/engine/internal/config/env.go", 41)
    assert [step.label for step in f.flow[1:]] == [
        "config.Config.ModelTimeout", "models.Config.Timeout", "http.Client.Timeout"]
    assert f.flow[-1].value_seconds == 1800.0


def test_demo_lease_without_hard_deadline_is_silent():
    # the tool_call lease (loop.go:55) supervises exec.CommandContext: no hard deadline under it
    result = analyse("demo")
    related = {rel(r.location) for f in result.findings for r in f.related}
    assert ("demo/engine/internal/agents/loop.go", 55) not in related


# -- Go shapes ---------------------------------------------------------------------------

def test_go_constant_in_another_package_client_built_by_helper():
    result = analyse("da101/go_const_pkg")
    assert da101(result) == [("DA101", "da101/go_const_pkg/gateway/http.go", 16)]
    f = result.findings[0]
    assert "10 min ≤ the lease 10 min" in f.message
    assert [rel(r.location) for r in f.related] == [("da101/go_const_pkg/worker/supervise.go", 38)]


def test_go_context_timeout_inside_supervised_method_value():
    result = analyse("da101/go_ctx_inside")
    assert da101(result) == [("DA101", "da101/go_ctx_inside/sync/mirror.go", 16)]
    assert "context.WithTimeout 120 s ≤ the lease 300 s" in result.findings[0].message


def test_go_unresolved_values_from_the_same_source():
    result = analyse("da101/go_same_source")
    assert da101(result) == [("DA101", "da101/go_same_source/llm/service.go", 25)]
    f = result.findings[0]
    assert "come from the same value" in f.message
    assert f.flow[0].node == "sym:go:example.com/agent/cmd/agent.main.budget"


def test_go_correct_shapes_are_silent():
    # derived larger cap, phase timeouts only, Timeout: 0, an ownership lease, a probe off the path
    assert da101(analyse("da101/go_negatives")) == []


# -- Python shapes -----------------------------------------------------------------------

def test_python_shapes():
    result = analyse("da101/py_shapes")
    assert da101(result) == [
        ("DA101", "da101/py_shapes/crawl/fetcher.py", 14),
        ("DA101", "da101/py_shapes/render/jobs.py", 12),
    ]
    render = by_line(result, "render/jobs.py", 12)
    assert "15 min" in render.message
    assert render.flow[0].node == "env:RENDER_LEASE_SECONDS"
    assert render.flow[0].default_seconds == 300.0
    crawl = by_line(result, "crawl/fetcher.py", 14)
    assert "asyncio.wait_for 45 s ≤ the lease 60 s" in crawl.message


def test_python_lease_over_calls_written_in_its_own_body():
    # The lease's block calls the model itself, no function of the module in between:
    # - a client held in a field (AsyncOpenAI 100 s) under `async with ledger.holding(…, 120)`;
    # - a LangChain chat model at module level (`request_timeout=90`) awaited in the block;
    # - a renewer coroutine started with create_task and cancelled after the call
    #   (AsyncAnthropic 30 s under a 60 s renewal).
    # Silent: the same field client streamed, or given its own 900 s per request; a
    # LangChain model streamed with astream (45 s); one whose timeout (600 s) outlives the lease.
    result = analyse("da101/py_body_clients")
    assert da101(result) == [
        ("DA101", "da101/py_body_clients/scribe/steps.py", 13),
        ("DA101", "da101/py_body_clients/scribe/steps.py", 21),
        ("DA101", "da101/py_body_clients/scribe/steps.py", 71),
    ]
    draft = by_line(result, "scribe/steps.py", 13)
    assert "90 s ≤ the lease 120 s" in draft.message
    assert [rel(r.location) for r in draft.related] == [("da101/py_body_clients/scribe/steps.py", 51)]
    field_client = by_line(result, "scribe/steps.py", 21)
    assert "100 s ≤ the lease 120 s" in field_client.message
    assert [rel(r.location) for r in field_client.related] == [("da101/py_body_clients/scribe/steps.py", 24)]
    review = by_line(result, "scribe/steps.py", 71)
    assert "30 s ≤ the lease 60 s" in review.message


def test_go_request_on_an_external_client_between_renewal_start_and_stop():
    # `stop := f.hold(ctx, job, 2*time.Minute); defer stop(); resp, err := f.quick.Do(req)`:
    # the request is no call fact of its own (an external method), only the value of
    # `resp`; the client it goes through (45 s) dies before the 2 min lease. The same
    # bracket with the patient client (10 min) is silent.
    # resty configured as a builder chain stored in a struct field
    # (`resty.New().SetTimeout(40 * time.Second).SetRetryCount(2)`): its requests in a
    # closure run under a one-minute lease; the 15 min client (SetTimeout last) is silent.
    result = analyse("da101/go_body_client")
    assert da101(result) == [
        ("DA101", "da101/go_body_client/internal/ingest/worker.go", 26),
        ("DA101", "da101/go_body_client/internal/render/render.go", 23),
    ]
    f = by_line(result, "ingest/worker.go", 26)
    assert "45 s ≤ the lease 120 s" in f.message
    assert [rel(r.location) for r in f.related] == [("da101/go_body_client/internal/ingest/worker.go", 52)]
    resty = by_line(result, "render/render.go", 23)
    assert "resty.Client.SetTimeout 40 s ≤ the lease 60 s" in resty.message
    assert [rel(r.location) for r in resty.related] == [("da101/go_body_client/internal/render/render.go", 30)]


def test_go_anthropic_request_timeout_per_attempt_under_a_lease():
    # anthropic-sdk-go's option.WithRequestTimeout (90 s, a constant) on a call in the
    # closure a lease helper runs for two minutes; the 10 min twin is silent
    result = analyse("da101/go_anthropic")
    assert da101(result) == [("DA101", "da101/go_anthropic/review/review.go", 30)]
    f = by_line(result, "review/review.go", 30)
    assert "option.WithRequestTimeout 90 s ≤ the lease 120 s" in f.message
    assert [rel(r.location) for r in f.related] == [("da101/go_anthropic/review/review.go", 25)]


def test_python_correct_shapes_are_silent():
    # derived cap, phase-only httpx timeout, a deadline off the supervised path
    assert da101(analyse("da101/py_negatives")) == []


@pytest.mark.parametrize("fixture", ["demo", "da101/go_const_pkg", "da101/py_shapes"])
def test_findings_are_deterministic(fixture):
    first = [(where(f), f.message, f.fingerprint) for f in analyse(fixture).findings]
    second = [(where(f), f.message, f.fingerprint) for f in analyse(fixture).findings]
    assert first == second


def test_temporal_start_to_close_not_longer_than_heartbeat():
    result = analyse("da101/temporal")
    assert da101(result) == [
        ("DA101", "da101/temporal/go/workflows/provision.go", 14),
        ("DA101", "da101/temporal/py/flows/backup.py", 13),
    ]
    go = by_line(result, "provision.go", 14)
    assert "StartToCloseTimeout 10 min ≤ HeartbeatTimeout 10 min" in go.message
    assert [rel(r.location) for r in go.related] == [("da101/temporal/go/workflows/provision.go", 15)]
    py = by_line(result, "backup.py", 13)
    assert "StartToCloseTimeout 30 s ≤ HeartbeatTimeout 120 s" in py.message


def test_findings_in_test_files_are_reported_only_with_include_tests(tmp_path):
    import shutil

    from analysis_support import FIXTURES
    from deadline_audit import pipeline
    from deadline_audit.config import load_config

    root = tmp_path / "syncer"
    shutil.copytree(FIXTURES / "da101" / "go_ctx_inside", root)
    (root / "sync" / "mirror.go").rename(root / "sync" / "mirror_test.go")
    result = pipeline.analyse([root], load_config([root]), use_cache=False)
    # test code is read for its names only: no finding is made there, none is hidden
    assert [f.rule_id for f in result.findings] == [] and result.summary.suppressed == 0
    assert result.summary.files_scanned == 3 and result.summary.lines_scanned == 58

    (root / "deadline-audit.toml").write_text("include-tests = true\n", encoding="utf-8")
    result = pipeline.analyse([root], load_config([root]), use_cache=False)
    assert [(f.rule_id, f.location.path.rsplit("/", 1)[-1], f.location.line) for f in result.findings] == [
        ("DA101", "mirror_test.go", 16)]


def test_temporal_pair_read_from_the_same_unresolved_input():
    # both timeouts of one ActivityOptions read the workflow input's StageBudget: whatever
    # the caller sends, StartToClose = Heartbeat. The second options pair heartbeats at 30 s.
    result = analyse("da101_temporal_input")
    assert rule_findings(result, "DA101") == [("DA101", "da101_temporal_input/release/workflow.go", 20)]
    f = finding_at(result, "DA101", "release/workflow.go", 20)
    assert "StartToCloseTimeout = HeartbeatTimeout (both read StageBudget)" in f.message
    assert [rel(r.location) for r in f.related] == [("da101_temporal_input/release/workflow.go", 21)]


def test_a_context_manager_class_holding_a_lease():
    # fixtures/da101_class_lease: `async with Held(redis, key, ttl_s=120):` — a class whose
    # __aenter__ starts a task renewing the key — around a non-streaming completion on a
    # client with timeout=120 (flagged at the client's timeout); the translation client's
    # 600 s bound is larger than the lease (silent).
    result = analyse("da101_class_lease")
    assert rule_findings(result, "DA101") == [("DA101", "da101_class_lease/scribe/transcribe.py", 9)]
    f = finding_at(result, "DA101", "scribe/transcribe.py", 9)
    assert "120 s ≤ the lease 120 s" in f.message
    assert [rel(r.location) for r in f.related] == [("da101_class_lease/scribe/transcribe.py", 15)]


def test_a_lease_helper_whose_keeper_asks_a_probe_parameter():
    # fixtures/da101_probe_helper: withLease(ctx, cli, ttl, alive, fn) renews an etcd lease in
    # a goroutine that calls `alive()` (a bare probe) and runs `fn(ctx)` (the operation, given
    # arguments). The step's WithTimeout reads the same unresolved StepBudget as the lease.
    result = analyse("da101_probe_helper")
    assert rule_findings(result, "DA101") == [("DA101", "da101_probe_helper/steps/run.go", 31)]
    f = finding_at(result, "DA101", "steps/run.go", 31)
    assert "come from the same value" in f.message
    assert [rel(r.location) for r in f.related] == [("da101_probe_helper/steps/run.go", 25)]


def test_a_helper_granting_a_kept_alive_lease_for_its_ttl_parameter_supervises_its_function():
    # fixtures/da101_grant_helper: Keeper.Hold(ctx, key, ttl, work) grants an etcd lease of
    # `ttl` (no timer of its own), keeps it alive and runs `work`. Rollout's work bounds
    # apply with context.WithTimeout(ctx, RolloutTTL), the lease's own TTL: flagged there.
    # Drain's cap is DrainTTL × (renewals + 1), derived from the lease and larger: not.
    result = analyse("da101_grant_helper")
    assert rule_findings(result, "DA101") == [("DA101", "da101_grant_helper/internal/deploy/deploy.go", 27)]
    f = finding_at(result, "DA101", "deploy/deploy.go", 27)
    assert [rel(r.location) for r in f.related] == [("da101_grant_helper/internal/deploy/deploy.go", 21)]


def test_an_operation_bound_with_functools_partial():
    # fixtures/da101_partial_op: hold_lease(client, name, ttl, op) renews a redis lock of
    # ttl while op runs. render's op is partial(_render, doc_id, budget_s=RENDER_LEASE_S):
    # the asyncio.timeout(budget_s) inside _render equals the lease (flagged there).
    # archive's partial gives budget_s = lease × (renewals + 1): larger, not flagged.
    result = analyse("da101_partial_op")
    assert rule_findings(result, "DA101") == [("DA101", "da101_partial_op/press/jobs.py", 13)]
    f = finding_at(result, "DA101", "press/jobs.py", 13)
    assert [rel(r.location) for r in f.related] == [("da101_partial_op/press/jobs.py", 24)]


def test_a_predicate_parameter_of_a_lease_helper_is_a_probe_not_the_operation():
    # fixtures/da101_predicate_param: both helpers call two function parameters with
    # arguments; the one typed as a predicate (Go `stillBusy func(context.Context) bool`,
    # Python `is_active: Callable[[], Awaitable[bool]]`) is asked when the lease runs out,
    # the other is the work. The work's own deadline under the lease is flagged (90 s of a
    # 2 min lease; 120 s of 300 s); the probes' short deadlines (3 s, 5 s) are not.
    result = analyse("da101_predicate_param")
    assert rule_findings(result, "DA101") == [
        ("DA101", "da101_predicate_param/gate/gate/build.go", 20),
        ("DA101", "da101_predicate_param/jobs/export.py", 23),
    ]


def test_a_helper_handing_its_ttl_to_the_helpers_that_take_and_renew_the_lease():
    # fixtures/da101_delegated_timer: neither runner arms a timer itself, nor names a lease:
    # Keeper.Run hands ttl to `claim` (SetNX with it) and to `go k.refresh(…, ttl)` (a
    # ticker at ttl / 3 re-setting the expiry); Python `hold` hands ttl_s to `_take` and to
    # the `_keep` task. Each runs its function parameter: an operation lease. Reindex's
    # work is bounded by the lease's own 45 s, sweep_orphans's by its 120 s: flagged;
    # Compact (10× the lease) and sweep_exports (6×) are not.
    result = analyse("da101_delegated_timer")
    assert rule_findings(result, "DA101") == [
        ("DA101", "da101_delegated_timer/flows/reindex.go", 19),
        ("DA101", "da101_delegated_timer/py/sweeps/nightly.py", 12),
    ]


def test_activity_options_read_from_a_constant_record_of_timings():
    # fixtures/da101_policy_constants: one frozen record per activity, module constants
    # built with keywords (Python `CHARGE_CARD = Timing(start_to_close=…, heartbeat=…)`,
    # Go `Capture = Timing{StartToClose: 45 * time.Second, Heartbeat: time.Minute}`), read
    # as `policies.CHARGE_CARD.start_to_close` / `policy.Capture.StartToClose`. Each read
    # takes that constant's value, not every record's: CHARGE_CARD (60 s ≤ 60 s) and
    # Capture (45 s ≤ 1 min) are flagged; ISSUE_REFUND and Settle heartbeat well inside.
    result = analyse("da101_policy_constants")
    assert rule_findings(result, "DA101") == [
        ("DA101", "da101_policy_constants/billing/flows/workflows.py", 13),
        ("DA101", "da101_policy_constants/gobilling/flows/flows.go", 13),
    ]


def test_a_holder_whose_keeper_waits_on_a_stop_event_bounded_by_a_deadline():
    # fixtures/da101_event_wait_holder: Leases.hold's keeper task waits with
    # `asyncio.wait_for(stop.wait(), timeout=ttl / 3)` and reacquires the lock: it is paced
    # like a sleep, so `async with leases.hold(…, ttl=…)` is an operation lease. frame's
    # wait_for uses the lease's own 240 s: flagged; scene's 900 s under a 60 s lease is not.
    result = analyse("da101_event_wait_holder")
    assert rule_findings(result, "DA101") == [("DA101", "da101_event_wait_holder/render/frames.py", 16)]


def test_a_runner_whose_ttl_reaches_a_class_based_lease_through_a_factory():
    # fixtures/da101_class_holder_runner: `guarded(holds, key, ttl, work)` enters
    # `holds.open(key, ttl)`, which builds `Hold(redis, key, ttl)`; Hold's constructor keeps
    # the TTL in fields its __aenter__ (SET PX) and renewer (sleep, PEXPIRE) use. So guarded
    # is a lease runner over `work`: Warehouse.pick's timeout, bound by functools.partial,
    # is the lease's own 90 s: flagged; pack's ten times the lease is not. `async with
    # holds.open(key, ttl=…)` itself holds the lease the factory builds: ship's wait_for
    # equal to it is flagged, manifest's eight times it is not.
    result = analyse("da101_class_holder_runner")
    assert rule_findings(result, "DA101") == [("DA101", "da101_class_holder_runner/orders/fulfil.py", 15),
                                              ("DA101", "da101_class_holder_runner/orders/fulfil.py", 46)]


def test_a_config_struct_held_at_several_places_reads_the_key_of_each_place():
    # fixtures/da101_config_struct_places: `Step{Run, Beat}` (yaml tags) is held under
    # steps.fetch and steps.parse of relay.yaml. Ingest.Run sets Temporal options from
    # w.steps.Fetch.* (10m run, 30s beat: fine) and w.steps.Parse.* (2m and 2m: flagged at
    # line 26); the evidence names the parse key, not the first place's.
    result = analyse("da101_config_struct_places")
    assert rule_findings(result, "DA101") == [("DA101", "da101_config_struct_places/flows/ingest.go", 26)]
    f = finding_at(result, "DA101", "flows/ingest.go", 26)
    assert "steps.parse.run" in f.flow[0].label


def test_a_lease_paced_by_a_field_of_an_object_built_from_the_parameter():
    # fixtures/da101_lease_object_param: while_claimed(name, work, *, hold_for) builds
    # `Claim(name, hold_for)` and its keeper sleeps `claim.hold_for / 2` between
    # extensions: hold_for arms the timer, so while_claimed is a lease helper. export's
    # Exporter.push runs under asyncio.timeout(EXPORT_HOLD_S) with the same 90 s as the
    # lease (line 19); archive's cap is three leases long (derived, larger): silent.
    result = analyse("da101_lease_object_param")
    assert rule_findings(result, "DA101") == [("DA101", "da101_lease_object_param/jobs/export.py", 19)]


def test_clients_built_inline_as_a_constructor_argument():
    # fixtures/da101_inline_client: `Condenser(AsyncOpenAI(timeout=LLM_DEADLINE_S))` (90 s,
    # a non-streaming completion: the read timeout is a total deadline) runs as
    # `functools.partial(worker.condense, text)` under a 90 s lease; `Publisher(http=
    # aiohttp.ClientSession(timeout=ClientTimeout(total=30)))` runs as the bound method
    # `publisher.publish` under a 45 s lease. The archiver's 600 s cap is larger than its
    # lease: silent.
    result = analyse("da101_inline_client")
    assert rule_findings(result, "DA101") == [
        ("DA101", "da101_inline_client/digest/condense.py", 42),
        ("DA101", "da101_inline_client/digest/condense.py", 53),
    ]
    llm = finding_at(result, "DA101", "digest/condense.py", 42)
    assert [rel(r.location) for r in llm.related] == [("da101_inline_client/digest/condense.py", 48)]
    assert "90 s" in llm.message
    post = finding_at(result, "DA101", "digest/condense.py", 53)
    assert [rel(r.location) for r in post.related] == [("da101_inline_client/digest/condense.py", 56)]


def test_visibility_kept_by_a_thread_the_work_stops_with_an_event():
    # fixtures/da101_thread_keeper: `create_task(asyncio.to_thread(hold_message, …, 180,
    # done))` … `done.set()` extends an SQS message's visibility (180 s) around
    # `exporter.export`, whose aiohttp session takes `timeout=target.deadline`, a dataclass
    # field defaulting through `default_factory` to ClientTimeout(total=180): T = L, at the
    # total. The refund path's 900 s cap over a 60 s visibility leaves room: silent.
    result = analyse("da101_thread_keeper")
    assert rule_findings(result, "DA101") == [("DA101", "da101_thread_keeper/ledger/settings.py", 14)]
    f = finding_at(result, "DA101", "ledger/settings.py", 14)
    assert [rel(r.location) for r in f.related] == [("da101_thread_keeper/ledger/consumer.py", 15)]
    assert "180 s" in f.message


def test_class_lease_from_a_factory_choosing_the_ttl_and_a_budget_two_objects_deep():
    # fixtures/da101_factory_policy: `async with self._holds.claim(job_id)` holds a JobHold
    # (its __aenter__ starts a keeper resetting `held_until = now() + …` in SQL) whose TTL
    # the factory takes from the policy it was built with (120 s for frames, 60 s for
    # archives); the frame worker's `asyncio.timeout(self._step.budget.seconds)` reads a
    # Budget(120) held by its Step: T = L (line 27). The archive worker's 600 s budget over
    # a 60 s hold leaves room: silent.
    result = analyse("da101_factory_policy")
    assert rule_findings(result, "DA101") == [("DA101", "da101_factory_policy/render/workers.py", 27)]
    f = finding_at(result, "DA101", "render/workers.py", 27)
    assert "120 s" in f.message
    assert [rel(r.location) for r in f.related] == [("da101_factory_policy/render/workers.py", 26)]


def test_go_function_starting_its_own_renewal_closure_before_its_work():
    # fixtures/da101_go_keeper_closure: Build takes a lock, runs a renewal closure with
    # g.Go that returns on `<-finished`, and its work closure (which closes `finished`)
    # runs under WithTimeout(stepTime) = the 45 s lock TTL (line 55). Deploy starts
    # `go func() {…}()` stopped by `close(stop)` and bounds Apply by the same env value as
    # the TTL (line 39). Sweep renews one lock across many builds (ownership) and Archive's
    # cap is three TTLs: silent.
    result = analyse("da101_go_keeper_closure")
    assert rule_findings(result, "DA101") == [
        ("DA101", "da101_go_keeper_closure/builds/builder.go", 55),
        ("DA101", "da101_go_keeper_closure/deploys/deployer.go", 39),
    ]
    build = finding_at(result, "DA101", "builds/builder.go", 55)
    assert [rel(r.location) for r in build.related] == [("da101_go_keeper_closure/builds/builder.go", 37)]
    deploy = finding_at(result, "DA101", "deploys/deployer.go", 39)
    assert [rel(r.location) for r in deploy.related] == [("da101_go_keeper_closure/deploys/deployer.go", 25)]
    assert "90 s" in deploy.message


def test_renewal_loops_in_a_task_group_beside_the_work():
    # fixtures/da101_task_group_keeper: `tg.start_soon(keep_alive, lock, 60)` (a redis-py
    # lock extended with `replace_ttl=True`) beside `anyio.fail_after(60)` around the stage,
    # stopped by `tg.cancel_scope.cancel()` (line 20); an ExportSlot starting its bound
    # keeper method (`extend(key, lease_ms=self._ttl_ms)`, 30 s) beside
    # `move_on_after(self._ttl_ms / 1000)` (line 22). The backfill's cap of three TTLs:
    # silent.
    result = analyse("da101_task_group_keeper")
    assert rule_findings(result, "DA101") == [
        ("DA101", "da101_task_group_keeper/pipeline/export.py", 22),
        ("DA101", "da101_task_group_keeper/pipeline/stages.py", 20),
    ]
    stage = finding_at(result, "DA101", "pipeline/stages.py", 20)
    assert [rel(r.location) for r in stage.related] == [("da101_task_group_keeper/pipeline/stages.py", 19)]
    export = finding_at(result, "DA101", "pipeline/export.py", 22)
    assert "30 s" in export.message


def test_temporal_options_spread_from_module_dicts():
    # fixtures/da101_temporal_option_dicts: `execute_activity(transcode, asset, **TRANSCODE)`
    # with `TRANSCODE = dict(start_to_close_timeout=20 min, heartbeat_timeout=20 min)` (line
    # 10), and a dict literal of 90 s against a 120 s heartbeat (line 16); PUBLISH's 30 s
    # heartbeat under a 5 min StartToClose is the right order: silent.
    result = analyse("da101_temporal_option_dicts")
    assert rule_findings(result, "DA101") == [
        ("DA101", "da101_temporal_option_dicts/media/workflows.py", 10),
        ("DA101", "da101_temporal_option_dicts/media/workflows.py", 16),
    ]
    f = finding_at(result, "DA101", "media/workflows.py", 10)
    assert [rel(r.location) for r in f.related] == [("da101_temporal_option_dicts/media/workflows.py", 11)]


def test_llm_sdks_beyond_openai_and_anthropic():
    # fixtures/da101_llm_sdks: `AsyncGroq(timeout=120)` (line 10) and
    # `litellm.acompletion(…, timeout=120)` (line 16) under 120 s leases from the same env
    # defaults; an Ollama chat streamed with `stream=True` holds an idle timeout: silent.
    result = analyse("da101_llm_sdks")
    assert rule_findings(result, "DA101") == [
        ("DA101", "da101_llm_sdks/briefs/writers.py", 10),
        ("DA101", "da101_llm_sdks/briefs/writers.py", 16),
    ]


def test_thread_keepers_around_subprocess_and_alarm_deadlines():
    # fixtures/da101_thread_target_keeper: `Thread(target=keep_claimed, args=(…, 300, stop))`
    # around `subprocess.run(…, timeout=300)` (line 17); `Thread(target=keep_claimed,
    # kwargs={…, "lease_s": 120, "stop": stop})` around `signal.alarm(120)` (line 28); both
    # stopped with `stop.set()`. The encode's 900 s cap over a 300 s lease: silent.
    result = analyse("da101_thread_target_keeper")
    assert rule_findings(result, "DA101") == [
        ("DA101", "da101_thread_target_keeper/farm/jobs.py", 17),
        ("DA101", "da101_thread_target_keeper/farm/jobs.py", 28),
    ]
    render = finding_at(result, "DA101", "farm/jobs.py", 17)
    assert [rel(r.location) for r in render.related] == [("da101_thread_target_keeper/farm/jobs.py", 13)]


def test_a_renew_method_that_extends_its_own_ttl():
    # fixtures/da101_renew_own_ttl: ShardClaim.extend(redis) takes no duration; its body
    # re-extends the claim's own TTL (`redis.expire(self.key, int(self.ttl_s))`). The keeper
    # runs in a task group around the reindex only, under anyio.fail_after(claim.ttl_s):
    # the deadline equals the 120 s lease. Silent: the same with five TTLs of budget.
    result = analyse("da101_renew_own_ttl")
    assert rule_findings(result, "DA101") == [("DA101", "da101_renew_own_ttl/indexer/claims.py", 50)]


def test_a_holder_class_whose_constructor_starts_the_renewal():
    # fixtures/da101_holder_starts_in_init: InFlight starts its refresher task in
    # __init__ (not __aenter__) and stops it in __aexit__: `async with InFlight(…,
    # ttl=SEND_SECONDS)` holds a 40 s lease over the send. The SMS session's total is the
    # same 40 s: flagged. The fax session's cap is six leases long: silent.
    result = analyse("da101_holder_starts_in_init")
    assert rule_findings(result, "DA101") == [("DA101", "da101_holder_starts_in_init/notify/send.py", 12)]


def test_a_holder_given_the_lease_object_itself():
    # fixtures/da101_holder_of_lease_object: `async with frontier.held(claim):` takes the
    # claim, whose keeper sleeps `claim.ttl / 3` between row renewals: the lease is the
    # claim's ttl (30 s, the dataclass default). crawl_page's asyncio.timeout(30) equals it:
    # flagged. crawl_archive's budget is ten claims long: silent.
    result = analyse("da101_holder_of_lease_object")
    assert rule_findings(result, "DA101") == [("DA101", "da101_holder_of_lease_object/crawl/fetch.py", 14)]


def test_a_go_runner_handed_the_lease_object():
    # fixtures/da101_go_lease_object_runner: hold.While(ctx, table, c, op) starts
    # `go c.prolong(kctx, t)`, ticking at `c.For / 3` and prolonging the row through a
    # Table whose implementation renews it by SQL: the lease is the claim's For (45 s in
    # Ship). Ship's request goes through the api client, Timeout 45 s: flagged at the
    # Timeout, the Ship lease related. Archive's upload client has no total: silent.
    result = analyse("da101_go_lease_object_runner")
    assert rule_findings(result, "DA101") == [("DA101", "da101_go_lease_object_runner/ship/ship.go", 21)]
    f = finding_at(result, "DA101", "ship/ship.go", 21)
    assert [rel(r.location) for r in f.related] == [("da101_go_lease_object_runner/ship/ship.go", 26)]
