"""DA201 cancellable-terminal-write on independent shapes of the defect, and on correct code."""

from __future__ import annotations

import shutil

from analysis_support import FIXTURES, analyse, build, finding_at, rel, rule_findings
from deadline_audit import pipeline
from deadline_audit.checks import da201
from deadline_audit.config import load_config


def da201_findings(result):
    return rule_findings(result, "DA201")


def at(result, path_suffix: str, line: int):
    return finding_at(result, "DA201", path_suffix, line)


# -- the incident (SPEC §1.2) ----------------------------------------------------------

def test_demo_legacy_handler_is_flagged_and_durable_executor_is_silent():
    result = analyse("demo")
    assert da201_findings(result) == [("DA201", "demo/engine/internal/turns/legacy.go", 39)]
    f = at(result, "turns/legacy.go", 39)
    assert "FinishTurn records how the turn ended under r.Context()" in f.message
    assert "WriteTimeout (300 s)" in f.message
    assert [rel(r.location) for r in f.related] == [
        ("demo/engine/internal/turns/legacy.go", 30), ("demo/engine/cmd/engine/main.go", 34)]
    assert "context.WithoutCancel" in f.fix  # the demo module is go 1.22


# -- Go shapes ---------------------------------------------------------------------------

def test_go_shapes():
    # struct field two calls away; SQL under a WithTimeout of the request; gRPC ctx;
    # the work's own deadline reused in a defer. Silent: a start write, WithoutCancel,
    # Background, and the SQL inside a terminal write already reported at its caller.
    result = analyse("da201/go")
    assert da201_findings(result) == [
        ("DA201", "da201/go/api/jobs.go", 35),
        ("DA201", "da201/go/api/jobs.go", 56),
        ("DA201", "da201/go/grpcsvc/server.go", 19),
        ("DA201", "da201/go/reports/reports.go", 50),  # a helper's deadline context, then work
        ("DA201", "da201/go/reports/reports.go", 52),
        ("DA201", "da201/go/worker/executor.go", 30),
    ]
    # silent too: reports.go:39/41, a fresh deadline context that a helper builds for the
    # write alone (the helper tags its parent first, which is no work under the deadline);
    # reports.go:61/63, two writes (their results assigned) under a context made for them;
    # reports.go:73, a write followed by a notification under the same bound (what runs
    # after the write is no work it waits behind); reports.go:91/93, two answers in
    # branches, `RespondJobCanceled` a write too; reports.go:113, a wrapper bounding the
    # one call it wraps (the helper returns `context.WithTimeout(…)` itself, and the
    # wrapper's only other use of ctx is the argument that builds it)
    field = at(result, "api/jobs.go", 35)
    assert [rel(r.location) for r in field.related] == [
        ("da201/go/api/jobs.go", 46), ("da201/go/cmd/server/main.go", 15)]
    assert "WriteTimeout (120 s)" in field.message
    assert [s.label for s in field.flow][-2:] == ["stored in api.Job.ctx", "MarkJobDone (terminal write)"]

    sql = at(result, "api/jobs.go", 56)
    assert "the order ended" in sql.message and "context.WithTimeout (20 s)" in sql.message
    assert "deadline that fires: context.WithTimeout 20 s" in [r.message for r in sql.related]

    grpc = at(result, "grpcsvc/server.go", 19)
    assert "gRPC ctx" in grpc.message and "WriteTimeout" not in grpc.message

    deferred = at(result, "worker/executor.go", 30)
    assert "context.WithTimeout (10 min) that bounds the work" in deferred.message
    assert [rel(r.location) for r in deferred.related] == [
        ("da201/go/worker/executor.go", 27), ("da201/go/worker/executor.go", 27)]


def test_go_before_1_21_nil_done_type_detaches_and_fix_avoids_without_cancel():
    result = analyse("da201/go_legacy")
    assert da201_findings(result) == [("DA201", "da201/go_legacy/jobs/handler.go", 32)]
    fix = result.findings[0].fix
    assert "context.Background()" in fix and "needs Go 1.21" in fix and "go 1.20" in fix


def test_go_tree_without_go_mod():
    # A dep-era tree: its packages import each other by full path (github.com/acme/conveyor/…)
    # with no go.mod to say so. Flagged: a store method in another package called with the
    # request's context; a helper (first use of its ctx: a logger kept in it) called with
    # the deadline context inside that context's Done arm, through an interface declared in
    # another file. Silent: Background, the parent context, a read.
    result = analyse("da201/go_gopath")
    assert da201_findings(result) == [
        ("DA201", "da201/go_gopath/api/builds.go", 17),
        ("DA201", "da201/go_gopath/step_run.go", 34),
    ]
    done = at(result, "step_run.go", 34)
    assert "already done (inside its `case <-ctx.Done():` arm)" in done.message
    assert [rel(r.location) for r in done.related][0] == ("da201/go_gopath/step_run.go", 32)
    request = at(result, "api/builds.go", 17)
    assert "Conclude records how the build ended under r.Context()" in request.message


# -- Python shapes -----------------------------------------------------------------------

def test_python_shapes():
    # (a) under asyncio.timeout after the work; (a) in the coroutine given to wait_for;
    # (b) anyio finally without shield; (b) a StreamingResponse body catching CancelledError.
    # Silent: anyio_worker.py:49, a local `_finalize_result(await run_task)` whose body awaits
    # a hook, then a callback parameter (an operation, not a write).
    result = analyse("da201/py")
    assert da201_findings(result) == [
        ("DA201", "da201/py/jobs/anyio_worker.py", 18),
        ("DA201", "da201/py/jobs/runner.py", 18),
        ("DA201", "da201/py/jobs/runner.py", 23),
        ("DA201", "da201/py/stream/events.py", 17),
    ]
    scope = at(result, "jobs/runner.py", 18)
    assert "inside the asyncio.timeout (15 min)" in scope.message
    assert [rel(r.location) for r in scope.related] == [("da201/py/jobs/runner.py", 15)]
    wait_for = at(result, "jobs/runner.py", 23)
    assert [rel(r.location) for r in wait_for.related] == [("da201/py/jobs/runner.py", 28)]
    assert "(imports anyio)" in at(result, "anyio_worker.py", 18).message
    assert "(StreamingResponse body)" in at(result, "stream/events.py", 17).message


def test_python_plain_asyncio_finally_only_with_the_option():
    graph = build("da201/py").graph
    default = {(f.location.path.rsplit("/", 1)[-1], f.location.line) for f in da201.check(graph, {})}
    on = {(f.location.path.rsplit("/", 1)[-1], f.location.line)
          for f in da201.check(graph, {"asyncio-level-cancellation": True})}
    assert on - default == {("runner.py", 54), ("events.py", 28)}  # plain asyncio finally blocks


def test_go_gorm_writes_under_the_request_context_bound_to_the_handle():
    # GORM takes its context once, `db := e.db.WithContext(r.Context())`, and its writes
    # name the column they set: Update("status", "failed") and Updates(Export{Status: "done"})
    # are terminal writes under r.Context(). Silent: Update("status", "running") (not an
    # end), a map update of a counter, and a cancellation recorded with
    # WithTimeout(WithoutCancel(r.Context())).
    result = analyse("da201/gorm")
    assert da201_findings(result) == [
        ("DA201", "da201/gorm/internal/api/exports.go", 31),
        ("DA201", "da201/gorm/internal/api/exports.go", 36),
    ]
    failed = at(result, "api/exports.go", 31)
    assert "r.Context()" in failed.message
    assert [rel(r.location) for r in failed.related] == [("da201/gorm/internal/api/exports.go", 28)]


def test_python_orm_writes_of_a_status_column_inside_the_deadline():
    # Django `Invoice.objects.filter(pk=…).aupdate(status="paid")` as the last step of an
    # asyncio.timeout block: the outermost call of a chain must carry the block's scope too.
    # Silent: "processing" (not an end), a counter, a dict's update(status=…), and the same
    # write after the block.
    # SQLAlchemy's ORM: `refund.state = RefundState.SENT` then `await session.flush()` in the
    # block is the write (the first persisting call after the state is set; the commit
    # after it is not reported again). Silent: "processing" committed, a state set in an
    # `except` (plain asyncio never runs it on cancellation), and a state committed after
    # the block.
    # A job kept as a Redis hash: `hset(key, mapping={"status": "ready", …})` after the
    # render in the block (silent: a counter field, and the status written after the block).
    result = analyse("da201/py_orm")
    assert da201_findings(result) == [
        ("DA201", "da201/py_orm/billing/collect.py", 15),
        ("DA201", "da201/py_orm/billing/receipts.py", 13),
        ("DA201", "da201/py_orm/billing/refunds.py", 26),
    ]
    assert "flush" in at(result, "billing/refunds.py", 26).message
    f = at(result, "billing/collect.py", 15)
    assert "asyncio.timeout" in f.message
    assert [rel(r.location) for r in f.related] == [("da201/py_orm/billing/collect.py", 11)]


def test_go_builder_chains_executed_with_the_request_context():
    # ent: UpdateOneID(id).SetStatus(run.StatusFailed)…Exec(r.Context()) — the executing
    # call takes the context; bun: NewUpdate()…Set("status = ?", "archived")…Exec(r.Context()).
    # Silent: SetStatus(run.StatusRunning) (a generated constant naming a state that is not
    # an end), a counter set by bun, and the success written under WithoutCancel.
    # go-redis: HSet(r.Context(), key, map{"status": "failed", …}) (silent: "rendering", a
    # state in progress; an HIncrBy counter; the final HSet under WithoutCancel)
    result = analyse("da201/go_builders")
    assert da201_findings(result) == [
        ("DA201", "da201/go_builders/internal/api/previews.go", 20),
        ("DA201", "da201/go_builders/internal/api/runs.go", 33),
        ("DA201", "da201/go_builders/internal/api/runs.go", 51),
        ("DA201", "da201/go_builders/internal/api/steps.go", 24),  # squirrel, then ExecContext
    ]
    assert "r.Context()" in at(result, "api/runs.go", 33).message


def test_python_streaming_body_from_another_module():
    # fixtures/da201_stream_module: the endpoints in app.py hand generators of exports.py to
    # StreamingResponse. export_rows awaits the final write in `finally:` (flagged: the body
    # is cancelled level-triggered when the client leaves); export_preview writes after its
    # loop, outside any handler (silent).
    result = analyse("da201_stream_module")
    assert da201_findings(result) == [("DA201", "da201_stream_module/reports/exports.py", 15)]
    assert "StreamingResponse body" in at(result, "reports/exports.py", 15).message


def test_python_work_awaited_from_a_library_then_the_write_in_the_same_scope():
    # fixtures/da201_py_gather: `await asyncio.gather(…)` (a library call: work) then
    # `await store.complete_batch(…)` inside one asyncio.timeout (flagged at the call, not
    # again inside the store, whose `sa.text("UPDATE …")` builds the statement that
    # `conn.execute` runs). Silent: mark_unknown in the except, and a write after the scope.
    result = analyse("da201_py_gather")
    assert da201_findings(result) == [("DA201", "da201_py_gather/ingest/batches.py", 18)]


def test_go_writes_through_sqlx_upserts_and_an_early_record():
    # fixtures/da201_sqlx: a store method writing through sqlx's ExecContext (a library call
    # given the context) under the request's context (flagged), under WithoutCancel (silent);
    # a consumer whose process() records `skipped` early with the loop's context, then
    # bounds the work and records its outcome (an upsert: ON CONFLICT … DO UPDATE SET
    # status) with the same deadline context (flagged at :41). process() does work after its
    # first write, so it is no write helper that would hide the second.
    result = analyse("da201_sqlx")
    assert da201_findings(result) == [
        ("DA201", "da201_sqlx/events/consumer.go", 41),
        ("DA201", "da201_sqlx/orders/handlers.go", 14),
    ]


def test_a_run_keeping_its_deadline_context_in_a_field():
    # fixtures/da201_run_field: exportRun holds the WithTimeout context of its budget in
    # r.ctx; execute() uploads with it, and finish() records the end with the same r.ctx:
    # when the budget fires the record is cancelled too. importRun records with
    # context.WithoutCancel(r.ctx): silent.
    result = analyse("da201_run_field")
    assert rule_findings(result, "DA201") == [("DA201", "da201_run_field/runs/runs.go", 45)]
    f = finding_at(result, "DA201", "runs/runs.go", 45)
    assert "MarkExportFinished" in f.message


def test_a_protocol_method_is_judged_by_its_implementations():
    # fixtures/da201_protocol_work: DigestRunner.run awaits `self._llm.complete(job.request)`
    # on a BatchLLM Protocol (a stub), then saves the digest in the same asyncio.timeout
    # scope. `complete` on a batch type reads like a finish verb, but the implementations
    # (a model call, a router picking one) work: the save after it is flagged. run_detached
    # saves after the scope has closed: silent.
    result = analyse("da201_protocol_work")
    assert rule_findings(result, "DA201") == [("DA201", "da201_protocol_work/digest/runner.py", 31)]


def test_a_finishing_call_given_a_record_of_how_the_work_ended_is_a_terminal_write():
    # fixtures/da201_outcome_record: Poster.Finish(ctx, rec) names no unit of work, but rec's
    # type (outcome.Record{BatchID, State}) records one's state; the implementation hands
    # ctx to http.NewRequestWithContext (kept only as a value). Run's deferred closure writes
    # under Run's own WithTimeout ctx: flagged. RunDetached writes under WithoutCancel, and
    # FinishBeat sends a Ping (no state field): neither is.
    result = analyse("da201_outcome_record")
    assert rule_findings(result, "DA201") == [("DA201", "da201_outcome_record/internal/worker/worker.go", 22)]


def test_a_streaming_rpcs_stream_context_kept_in_a_field_is_cancellable():
    # fixtures/da201_grpc_stream: Attach(stream agentpb.Agents_AttachServer) on a server
    # embedding UnimplementedAgentsServer keeps stream.Context() in conn.ctx; record's status
    # UPDATE under c.ctx ends with the stream (flagged, no http WriteTimeout in the message);
    # recordDetached writes under WithoutCancel(c.ctx) (not flagged).
    result = analyse("da201_grpc_stream")
    assert rule_findings(result, "DA201") == [("DA201", "da201_grpc_stream/internal/agents/server.go", 35)]
    f = finding_at(result, "DA201", "agents/server.go", 35)
    assert "gRPC stream stream.Context()" in f.message and "WriteTimeout" not in f.message


def test_a_helper_writing_in_a_transaction_it_begins_is_a_writer_reported_at_the_handler():
    # fixtures/da201_tx_helper: CloseRun begins a transaction with the ctx, then makes two
    # status UPDATEs in it. Opening the transaction is part of the write, not work before
    # it: CloseRun, and `settle` calling it, are writers, so the finding is the handler's
    # call with r.Context() (line 19), not the SQL inside the store. Expire detaches with
    # context.WithoutCancel: silent.
    result = analyse("da201_tx_helper")
    assert rule_findings(result, "DA201") == [("DA201", "da201_tx_helper/api/handlers.go", 19)]


def test_tasks_of_a_group_inside_a_deadline_scope_are_its_work_and_a_record_may_span_statements():
    # fixtures/da201_task_group: close_import UPDATEs the import's status, then INSERTs an
    # event row in the same transaction: both statements are the record, so it is a writer.
    # - run: a task group entered inside move_on_after starts the loads (`tg.start_soon`);
    #   the group's exit awaits them, so they are the scope's work: the write after it is
    #   cancelled with them (line 18);
    # - refresh: awaited work, then the two-statement write, under fail_after (line 39);
    # - run_then_record writes after the scope; run_inside_group's group is entered outside
    #   the scope (the scope waits for nothing before the write): silent.
    result = analyse("da201_task_group")
    assert rule_findings(result, "DA201") == [
        ("DA201", "da201_task_group/ingest/runner.py", 18),
        ("DA201", "da201_task_group/ingest/runner.py", 39),
    ]


def test_the_context_of_an_errgroup_derived_from_the_work_deadline():
    # fixtures/da201_errgroup_ctx: `g, gctx := errgroup.WithContext(bctx)` derives its
    # context (the second result) from the build's WithTimeout; the steps run with it and
    # the result is then recorded with gctx — cancelled by the deadline, and by Wait
    # itself: an error at line 36. Rebuild records under context.WithoutCancel: silent.
    result = analyse("da201_errgroup_ctx")
    assert rule_findings(result, "DA201") == [("DA201", "da201_errgroup_ctx/builds/builder.go", 36)]


def test_an_object_whose_status_was_set_is_recorded_by_the_call_given_it():
    # fixtures/da201_status_object: Runner.Run sets b.State (broken or passed) and then
    # hands b to r.builds.UpdateBuild(ctx, b) under the build's WithTimeout budget (line 49);
    # Reconciler.start sets p.Status.Phase = "Failed" and writes the status subresource
    # with r.client.Status().Update(sctx, p) on the deadline's context (line 46). Silent:
    # the Save of a `BuildCompiling` state (not an end), accept's "Running" phase,
    # Retry's Save on context.WithoutCancel, and Suspend's `acct.State = "suspended"`
    # saved by `accounts.Update(ctx, acct)`: an account is no unit of work.
    result = analyse("da201_status_object")
    assert rule_findings(result, "DA201") == [
        ("DA201", "da201_status_object/builds/compile.go", 49),
        ("DA201", "da201_status_object/builds/status.go", 46),
    ]


def test_grpc_server_methods_that_are_not_handlers():
    # fixtures/da201_grpc_own_methods: Settle(ctx, *pb.SettleRequest) is the gRPC method:
    # its writes (line 36, and through recorderFor's stored ctx at line 31) are under the
    # caller's context. Ingest(ctx, data []byte) is the program's own method of the same
    # type, run by the queue consumer on context.Background(): silent.
    result = analyse("da201_grpc_own_methods")
    assert rule_findings(result, "DA201") == [
        ("DA201", "da201_grpc_own_methods/ledger/server.go", 31),
        ("DA201", "da201_grpc_own_methods/ledger/server.go", 36),
    ]


def test_deadline_applied_by_a_decorator_of_the_program():
    # fixtures/da201_decorator_deadline: `@time_boxed(20)` (a factory whose wrapper runs
    # the method inside asyncio.timeout) and `@capped` (a wrapper calling
    # wait_for(func(...), cap)) bound the functions they decorate: the terminal writes
    # after the bank call are cancelled with it. Silent: the shielded write, the same
    # body under `@traced` (no deadline), and the failure recorded by the caller outside.
    result = analyse("da201_decorator_deadline")
    assert rule_findings(result, "DA201") == [
        ("DA201", "da201_decorator_deadline/payouts/settle.py", 18),
        ("DA201", "da201_decorator_deadline/payouts/settle.py", 34),
    ]
    f = at(result, "payouts/settle.py", 18)
    assert "asyncio.timeout (20 s)" in f.message
    assert [(rel(r.location), r.message.split(":")[0]) for r in f.related] == [
        (("da201_decorator_deadline/payouts/limits.py", 20), "deadline scope that fires"),
        (("da201_decorator_deadline/payouts/settle.py", 16), "decorated"),
    ]


def test_writes_through_a_connection_opened_first():
    # fixtures/da201_handle_writes: finish_run and keep open a connection first
    # (`conn = await self._open()`), then write through it (a status UPDATE; a row of an
    # outcomes table) and close it in `finally`: the opening is setup, the write decides.
    # keep is awaited inside anyio.fail_after after the scoring (a); finish_run in
    # `finally:` of an anyio module (b). Silent: a row of run_events (no outcome), and
    # the finish_run shielded by CancelScope(shield=True).
    result = analyse("da201_handle_writes")
    assert rule_findings(result, "DA201") == [
        ("DA201", "da201_handle_writes/archive/runner.py", 18),
        ("DA201", "da201_handle_writes/archive/runner.py", 20),
    ]


def test_servers_with_the_same_write_timeout_are_named_once(tmp_path, monkeypatch):
    # the demo's engine gains an admin listener on the same mux with the same 5 min
    # WriteTimeout: the message says it once, the related locations keep both servers
    root = tmp_path / "demo"
    shutil.copytree(FIXTURES / "demo", root)
    main = root / "engine" / "cmd" / "engine" / "main.go"
    main.write_text(main.read_text(encoding="utf-8").replace(
        "\tlog.Fatal(srv.ListenAndServe())\n",
        "\tadmin := &http.Server{\n\t\tAddr:         \":9091\",\n\t\tHandler:      mux,\n"
        "\t\tWriteTimeout: 5 * time.Minute,\n\t}\n\tgo admin.ListenAndServe()\n"
        "\tlog.Fatal(srv.ListenAndServe())\n"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = pipeline.analyse([root], load_config([root]), use_cache=False)
    f = next(f for f in result.findings if f.rule_id == "DA201" and f.location.path.endswith("turns/legacy.go"))
    assert f.message.count("WriteTimeout (300 s)") == 1
    assert [(r.location.path, r.location.line) for r in f.related if "WriteTimeout" in r.message] == [
        ("demo/engine/cmd/engine/main.go", 34), ("demo/engine/cmd/engine/main.go", 39)]


def test_a_graphql_resolver_ctx_is_the_request_context():
    # fixtures/da201_graphql_resolver: gqlgen's `mutationResolver` (catalog
    # `graphql_resolver_types`) runs an export with the resolver's ctx, then records the
    # failure with that same ctx (flagged); the success is recorded through
    # context.WithoutCancel(ctx) (silent). The ctx goes through an OpenTelemetry
    # `tracer.Start(ctx, …)` first (catalog `plain_derivation_methods`): same cancellation.
    result = analyse("da201_graphql_resolver")
    assert da201_findings(result) == [("DA201", "da201_graphql_resolver/graph/schema.resolvers.go", 19)]
    f = at(result, "schema.resolvers.go", 19)
    assert "GraphQL resolver ctx of graph.mutationResolver.RunExport" in f.message
    assert [rel(r.location) for r in f.related] == [("da201_graphql_resolver/graph/schema.resolvers.go", 13)]
    assert "Start(ctx, …)" in [s.label for s in f.flow]
