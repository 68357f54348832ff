"""DA103 renewal-slower-than-lease on independent shapes of the defect, and on correct code."""

from __future__ import annotations

import shutil

from analysis_support import FIXTURES, analyse, finding_at, rel, rule_findings, where
from deadline_audit import pipeline
from deadline_audit.config import load_config


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


def test_go_temporal_etcd_and_lease_store_shapes():
    # Temporal: a ticker from an env layer (25 s) heartbeating an activity executed by
    # method value under options attached with WithActivityOptions (HeartbeatTimeout, a
    # constant in another package: 30 s) -> warning; etcd KeepAliveOnce every 12 s against
    # a 10 s Grant (seconds, constant in another package) -> error; a ticker kept in a
    # struct field (1 min) renewing through a hand-written store's Extend with a TTL from
    # an env layer (90 s) -> warning
    result = analyse("da103/go_platform")
    assert da103(result) == [
        ("DA103", "da103/go_platform/internal/election/leader.go", 30, "error"),
        ("DA103", "da103/go_platform/internal/jobs/worker.go", 21, "warning"),
        ("DA103", "da103/go_platform/internal/transcode/activities.go", 28, "warning"),
    ]
    by_path = {f.location.path.rsplit("/", 1)[-1]: f for f in result.findings if f.rule_id == "DA103"}
    beat = by_path["activities.go"]
    assert "renewal every 25 s" in beat.message and "30 s TTL" in beat.message
    assert "compiled defaults: every 10 s for a 30 s TTL" in beat.message
    assert [rel(r.location) for r in beat.related] == [("da103/go_platform/internal/transcode/workflow.go", 15)]
    assert beat.flow[0].node == "env:TRANSCODE_HEARTBEAT_EVERY"
    assert [lay.raw for lay in beat.flow[0].layers] == ["25s"]
    etcd = by_path["leader.go"]
    assert "renewal every 12 s" in etcd.message and "10 s TTL" in etcd.message
    assert [rel(r.location) for r in etcd.related] == [("da103/go_platform/internal/election/leader.go", 19)]
    store = by_path["worker.go"]
    assert "renewal every 60 s" in store.message and "90 s TTL" in store.message
    assert "compiled defaults: every 60 s for a 120 s TTL" in store.message
    assert [rel(r.location) for r in store.related] == [("da103/go_platform/internal/jobs/worker.go", 32)]
    assert "jobs.Store.Extend" in store.related[0].message


def test_go_platform_negatives_are_linked_but_safe():
    # a heartbeat every 5 s (helper, activity executed by registered name) under a 1 min
    # HeartbeatTimeout, an etcd lease renewed at a third, a Claim never renewed and a poll
    # ticker: silent at the default ratio; the first two are linked (0.01 shows them), the
    # last two never are
    from deadline_audit.checks import da103 as check
    from analysis_support import build

    graph = build("da103/go_platform").graph
    found = sorted((rel(f.location), [rel(r.location) for r in f.related])
                   for f in check.check(graph, {"warn-ratio": 0.01}))
    assert found == [
        (("da103/go_platform/internal/election/leader.go", 30), [("da103/go_platform/internal/election/leader.go", 19)]),
        (("da103/go_platform/internal/election/leader.go", 41), [("da103/go_platform/internal/election/leader.go", 37)]),
        (("da103/go_platform/internal/jobs/worker.go", 21), [("da103/go_platform/internal/jobs/worker.go", 32)]),
        (("da103/go_platform/internal/transcode/activities.go", 28), [("da103/go_platform/internal/transcode/workflow.go", 15)]),
        (("da103/go_platform/internal/transcode/activities.go", 49), [("da103/go_platform/internal/transcode/workflow.go", 24)]),
    ]


def test_python_temporal_etcd3_and_lease_store_shapes():
    # Temporal: activity.heartbeat() every 40 s (env layer over a 10 s default, a module
    # constant) against heartbeat_timeout=30 s of the execute_activity that runs it ->
    # error; etcd3 lease.refresh() every 10 s on a 10 s lease -> error (equal counts);
    # a hand-written store's extend(ttl_seconds=) with a TTL from an env layer (60 s)
    # renewed every 45 s -> warning
    result = analyse("da103/py_platform")
    assert da103(result) == [
        ("DA103", "da103/py_platform/media/activities.py", 17, "error"),
        ("DA103", "da103/py_platform/media/election.py", 18, "error"),
        ("DA103", "da103/py_platform/media/jobs.py", 33, "warning"),
    ]
    by_path = {f.location.path.rsplit("/", 1)[-1]: f for f in result.findings if f.rule_id == "DA103"}
    beat = by_path["activities.py"]
    assert "renewal every 40 s" in beat.message and "30 s TTL" in beat.message
    assert [rel(r.location) for r in beat.related] == [("da103/py_platform/media/workflows.py", 18)]
    assert beat.flow[0].node == "env:TRANSCODE_HEARTBEAT_SECONDS"
    assert [rel(r.location) for r in by_path["election.py"].related] == [("da103/py_platform/media/election.py", 14)]
    store = by_path["jobs.py"]
    assert "45 s" in store.message and "60 s TTL" in store.message and "120 s TTL" in store.message
    assert [rel(r.location) for r in store.related] == [("da103/py_platform/media/jobs.py", 32)]


def test_python_platform_negatives_are_linked_but_safe():
    # a heartbeat every 2 s through a helper under a 1 min heartbeat_timeout, an etcd3
    # lease refreshed at a third, a claim never renewed followed by a watch loop: silent;
    # the first two are linked (0.01 shows them), the claim never is
    from deadline_audit.checks import da103 as check
    from analysis_support import build

    graph = build("da103/py_platform").graph
    found = sorted(rel(f.location) for f in check.check(graph, {"warn-ratio": 0.01}))
    assert found == [
        ("da103/py_platform/media/activities.py", 17),
        ("da103/py_platform/media/activities.py", 29),
        ("da103/py_platform/media/election.py", 18),
        ("da103/py_platform/media/election.py", 24),
        ("da103/py_platform/media/jobs.py", 33),
    ]


def test_fields_of_each_object_built_where_the_renewal_runs():
    # the period and TTL are fields of the renewing object and have no single value
    # globally; each object built where its renewal method is called gets its own:
    # - Go composite literals: 10 s / 30 s (silent) and 2 min / 2 min (error);
    # - a Go constructor setting the fields from its parameters, run through a method that
    #   starts the loop on its own receiver: 30 s / 90 s (silent), 50 s / 45 s constants
    #   from another package (error); a keeper built elsewhere is not judged;
    # - Go functional options over safe defaults (60 s / 20 s): defaults and Every(5 s)
    #   silent, TTL(40 s) + Every(30 s) a warning;
    # - a Python class built twice (120 s / 30 s silent, 20 s / 25 s error) and a dataclass
    #   with safe defaults and one object given 10 s / 8 s (warning)
    result = analyse("da103/instances")
    assert da103(result) == [
        ("DA103", "da103/instances/internal/beacon/beacon.go", 20, "error"),
        ("DA103", "da103/instances/internal/keeper/keeper.go", 29, "error"),
        ("DA103", "da103/instances/internal/keeper/keeper.go", 66, "warning"),
        ("DA103", "da103/instances/sweeper/leases.py", 19, "error"),
        ("DA103", "da103/instances/sweeper/leases.py", 34, "warning"),
    ]
    by_line = {f.location.line: f for f in result.findings if f.rule_id == "DA103"}
    beacon = by_line[20]
    assert "renewal every 120 s" in beacon.message and "120 s TTL" in beacon.message
    assert [rel(r.location) for r in beacon.related] == [("da103/instances/internal/beacon/beacon.go", 27),
                                                         ("da103/instances/cmd/fleet/main.go", 22)]
    shards = by_line[29]
    assert "renewal every 50 s" in shards.message and "45 s TTL" in shards.message
    assert rel(shards.related[-1].location) == ("da103/instances/cmd/fleet/main.go", 27)  # shards.Start(ctx)
    session = by_line[66]
    assert "renewal every 30 s" in session.message and "40 s TTL" in session.message
    rows = by_line[19]
    assert "renewal every 25 s" in rows.message and "20 s TTL" in rows.message
    assert rel(rows.related[-1].location) == ("da103/instances/sweeper/run.py", 10)
    marker = by_line[34]
    assert "renewal every 8 s" in marker.message and "10 s TTL" in marker.message


def test_redsync_mutex_extended_slower_than_its_expiry():
    # go-redsync: NewMutex(name, WithExpiry(20 s)) extended by ExtendContext every 30 s in a
    # goroutine of the function that took the lock: error at the ticker, the expiry related;
    # a second lock extended with Extend every third of its expiry is silent
    result = analyse("da103/redsync")
    assert da103(result) == [("DA103", "da103/redsync/internal/jobs/jobs.go", 31, "error")]
    f = next(f for f in result.findings if f.rule_id == "DA103")
    assert "renewal every 30 s" in f.message and "20 s TTL" in f.message
    assert [rel(r.location) for r in f.related] == [("da103/redsync/internal/jobs/jobs.go", 23)]


def test_lock_clients_typed_by_what_their_constructor_returns_or_the_interface_held():
    # `cli, err := clientv3.New(cfg)` and `lock, err := locker.Obtain(...)` say nothing of
    # their types by name: the catalog's result types make Grant / KeepAliveOnce and
    # Refresh recognisable on them. etcd renewed every 15 s for a 10 s lease (error),
    # redislock refreshed every 12 s for 10 s (error); both safe twins (a client from
    # NewFromURL, redislock.Obtain as a package function) renew at a third
    # go-redis held as the Cmdable interface (a struct field): 30 s for a 20 s key (error);
    # a UniversalClient re-setting its key at a third of the TTL is silent
    # time.Tick: `for range time.Tick(20 s)` over a 15 s key, and a `tick := time.Tick(…)`
    # channel received in a select (40 s for 40 s); a third of the TTL is silent
    result = analyse("da103/lock_clients")
    assert da103(result) == [
        ("DA103", "da103/lock_clients/election/election.go", 27, "error"),
        ("DA103", "da103/lock_clients/presence/presence.go", 28, "error"),
        ("DA103", "da103/lock_clients/presence/ticks.go", 18, "error"),
        ("DA103", "da103/lock_clients/presence/ticks.go", 25, "error"),
        ("DA103", "da103/lock_clients/render/render.go", 25, "error"),
    ]
    by_file = {f.location.path.rsplit("/", 1)[-1]: f for f in result.findings if f.rule_id == "DA103"}
    assert [rel(r.location) for r in by_file["election.go"].related] == [("da103/lock_clients/election/election.go", 19)]
    assert [rel(r.location) for r in by_file["render.go"].related] == [("da103/lock_clients/render/render.go", 32)]
    assert "12 s" in by_file["render.go"].message and "10 s TTL" in by_file["render.go"].message


def test_settings_classes_read_their_table_of_a_loaded_config_file():
    # conf/relay.yaml `locks:` fed to LockSettings (`section: ClassVar[str] = "locks"`):
    # renew every 60 s for a 45 s TTL, where the compiled default is 15 s; conf/beacon.toml
    # read by pydantic-settings (`toml_file=`): 30 s for 20 s. The audit lock names an
    # `audit` table too, but only conf/legacy.yaml has one and no code names that file.
    result = analyse("da103/settings_tables")
    assert da103(result) == [
        ("DA103", "da103/settings_tables/relay/beacon.py", 28, "error"),
        ("DA103", "da103/settings_tables/relay/locks.py", 15, "error"),
    ]
    locks = next(f for f in result.findings if f.location.path.endswith("locks.py"))
    assert "renewal every 60 s" in locks.message and "45 s TTL" in locks.message


def test_an_environment_variable_still_overrides_the_settings_file(tmp_path, monkeypatch):
    root = tmp_path / "settings_tables"
    shutil.copytree(FIXTURES / "da103" / "settings_tables", root)
    (root / ".env").write_text("RELAY_BEACON_EVERY_S=5\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = pipeline.analyse([root], load_config([root]), use_cache=False)
    assert [(f.rule_id, f.location.path.rsplit("/", 1)[-1]) for f in result.findings if f.rule_id == "DA103"] == [
        ("DA103", "locks.py")]


def test_python_key_reset_by_a_heartbeat_loop_but_not_an_acquire_loop():
    # `r.set(key, now, ex=30)` every 30 s re-sets the key as often as it expires: error.
    # Silent: the same with px and a third of the TTL, and a loop that waits for a lock
    # with `set(…, nx=True, ex=10)` every 15 s (each attempt only takes the key)
    result = analyse("da103/presence")
    assert da103(result) == [("DA103", "da103/presence/fleetctl/presence.py", 15, "error")]
    f = next(f for f in result.findings if f.rule_id == "DA103")
    assert [rel(r.location) for r in f.related] == [("da103/presence/fleetctl/presence.py", 14)]


def test_a_lock_built_directly_renewed_between_event_waits():
    # fixtures/da103_event_wait: redis-py `Lock(redis, name, timeout=ttl)` kept alive by a
    # thread looping on `while not halt.wait(every): lock.reacquire()`. The deployed .env
    # sets the renewal to the TTL (20 s each): flagged at the wait. The index guard waits a
    # third of its TTL (`done.wait(timeout=self.ttl / 3)`): silent.
    result = analyse("da103_event_wait")
    assert [where(f) for f in result.findings if f.rule_id == "DA103"] == [
        ("DA103", "da103_event_wait/mirror/guard.py", 18)]
    f = result.findings[0]
    assert "renewal every 20 s" in f.message and "20 s TTL" in f.message
    assert [rel(r.location) for r in f.related] == [("da103_event_wait/mirror/guard.py", 13)]


def test_a_lua_script_that_resets_the_expiry():
    # fixtures/da103_lua: a mutex extended by `rdb.Eval(ctx, extendLua, keys, token,
    # int(ttl/time.Second))` whose script runs `expire KEYS[1] ARGV[2]` (seconds). Lead
    # holds it with the TTL itself as the period (flagged at the call that passes it);
    # Reports extends every third of its TTL (silent).
    result = analyse("da103_lua")
    assert [where(f) for f in result.findings if f.rule_id == "DA103"] == [
        ("DA103", "da103_lua/leader/leader.go", 20)]
    f = result.findings[0]
    assert "renewal every 30 s" in f.message and "30 s TTL" in f.message
    assert [(rel(r.location), r.message) for r in f.related][0] == (
        ("da103_lua/mutex/mutex.go", 29), "TTL set here (30 s for this object)")


def test_a_keeper_loop_paces_the_renewal_not_the_campaign_loop_that_starts_it():
    # fixtures/da103_keeper_loop: leader.py retries taking the lock every 30 s (= its TTL)
    # and, once leader, starts a keeper task that reacquires every 10 s: the keeper's loop
    # paces the renewal, the campaign loop only retries, so silent. watch.py's keeper
    # thread waits 20 s between reacquires of a 20 s lock: flagged at that wait.
    # docs.py: a Keeper dataclass handed the lock sleeps 10 s between reacquires of a lock
    # whose 12 s TTL comes from `async with services() as s` (an asynccontextmanager
    # yielding Services(…), its TTL from an unannotated helper): flagged at the sleep.
    # held.py: a helper renews every `every if every is not None else ttl / 3`; vacuum()
    # passes every=120 for a 120 s TTL: flagged at that argument; compact() leaves the
    # default (a third), reindex() passes a quarter: silent.
    result = analyse("da103_keeper_loop")
    assert rule_findings(result, "DA103") == [
        ("DA103", "da103_keeper_loop/janitor/docs.py", 22),
        ("DA103", "da103_keeper_loop/janitor/held.py", 39),
        ("DA103", "da103_keeper_loop/janitor/watch.py", 24),
    ]
    vacuum = finding_at(result, "DA103", "janitor/held.py", 39)
    assert "120 s" in vacuum.message and vacuum.severity == "error"
    f = finding_at(result, "DA103", "janitor/watch.py", 24)
    assert "every 20 s" in f.message and "20 s TTL" in f.message
    doc = finding_at(result, "DA103", "janitor/docs.py", 22)
    assert "every 10 s" in doc.message and "12 s TTL" in doc.message
    assert doc.flow[0].node == "env:JANITOR_DOC_LOCK_TTL_S"


def test_row_leases_renewed_by_sql_statements():
    # fixtures/da103_sql_rows (Go, pgx): keepShard renews through ExtendShard, reached via
    # an interface that embeds the leaser interface, whose SQL pushes lease_until to
    # now() + $3 seconds: 20 s against 30 s, flagged at the ticker, while the 5 min stats
    # ticker of another `select` case paces nothing. heartbeat's inline statement resets
    # alive_until every 30 s for 30 s: flagged. claimLoop's statement takes a free or
    # expired shard (`lease_until < now()`): an acquisition retried every TTL, silent.
    result = analyse("da103_sql_rows")
    assert rule_findings(result, "DA103") == [
        ("DA103", "da103_sql_rows/worker/worker.go", 34),
        ("DA103", "da103_sql_rows/worker/worker.go", 70),
    ]
    keep = finding_at(result, "DA103", "worker/worker.go", 34)
    assert "every 20 s" in keep.message and "30 s TTL" in keep.message
    assert [rel(r.location) for r in keep.related] == [("da103_sql_rows/worker/worker.go", 43)]
    beat = finding_at(result, "DA103", "worker/worker.go", 70)
    assert beat.severity == "error"
    assert [rel(r.location) for r in beat.related] == [("da103_sql_rows/worker/worker.go", 78)]


def test_an_election_whose_durations_are_unknown_is_silent_and_never_crashes():
    # fixtures/da103_election_unresolved: LeaseDuration and RetryPeriod come from a
    # parameter nobody resolves; the pair cannot be compared, and the check must not fail
    # (it once raised KeyError on the pair's loop key, a run exiting 2).
    result = analyse("da103_election_unresolved")
    assert result.summary.internal_errors == 0
    assert rule_findings(result, "DA103") == []


def test_a_heartbeat_ticking_at_the_activitys_own_heartbeat_timeout():
    # fixtures/da103_temporal_info: Load heartbeats on a ticker of
    # activity.GetInfo(ctx).HeartbeatTimeout — the period IS the timeout (30 s here): an
    # error at the ticker. Index ticks at a third of it: silent.
    result = analyse("da103_temporal_info")
    assert rule_findings(result, "DA103") == [("DA103", "da103_temporal_info/flows/flows.go", 16)]
    f = finding_at(result, "DA103", "flows/flows.go", 16)
    assert f.severity == "error" and "30 s" in f.message


def test_an_expiry_reset_queued_on_a_redis_pipeline_is_a_renewal():
    # fixtures/da103_pipeline: `pipe := rdb.TxPipeline(); pipe.Expire(ctx, key, nodeTTL)`
    # every 30 s against a 45 s TTL: more than half the TTL, a warning at the ticker. The
    # shard claim refreshed with `rdb.Pipeline()…PExpire` every 20 s of 60 s is fine.
    result = analyse("da103_pipeline")
    assert rule_findings(result, "DA103") == [("DA103", "da103_pipeline/presence/presence.go", 20)]
    f = finding_at(result, "DA103", "presence/presence.go", 20)
    assert f.severity == "warning"
    assert [rel(r.location) for r in f.related] == [("da103_pipeline/presence/presence.go", 25)]


def test_jetstream_in_progress_renews_the_ack_wait_and_a_share_of_an_unknown_ttl_is_judged():
    # fixtures/da103_jetstream: keepWorking(ctx, msg, every, op) ticks msg.InProgress(), the
    # renewal of the consumer's AckWait, set in Run of the class whose handle calls it. The
    # AckWait comes from a flag (unknown): Indexer renews at ackWait * 3 / 4, a share that
    # holds whatever the flag says (warning); Mailer at ackWait / 3 (fine).
    result = analyse("da103_jetstream")
    assert rule_findings(result, "DA103") == [("DA103", "da103_jetstream/internal/consume/indexer.go", 42)]
    f = finding_at(result, "DA103", "consume/indexer.go", 42)
    assert f.severity == "warning" and "0.75 of the TTL" in f.message
    assert [rel(r.location) for r in f.related][0] == ("da103_jetstream/internal/consume/indexer.go", 26)


def test_a_row_lease_set_through_sqlalchemys_expression_language():
    # fixtures/da103_orm_rows: ExportStore.prolong runs `update(exports).values(leased_until=
    # func.now() + func.make_interval(…, ttl_s))`, touch `datetime.now(utc) + timedelta(
    # seconds=ttl_s)`: both renew a row lease with their ttl_s argument. keep_export renews
    # every 45 s for 60 s (warning, at its sleep); keep_thumbnail every 30 s for 90 s (fine).
    result = analyse("da103_orm_rows")
    assert rule_findings(result, "DA103") == [("DA103", "da103_orm_rows/jobs/worker.py", 13)]
    f = finding_at(result, "DA103", "jobs/worker.py", 13)
    assert f.severity == "warning" and "60 s TTL" in f.message


def test_a_renewal_bound_with_partial_and_a_ttl_read_from_an_imported_timedelta():
    # fixtures/da103_partial_renew: `refresh = functools.partial(self._lock.reacquire)` is
    # called by a `while not self._stop.wait(period)` loop; the lock's timeout is
    # SKU_LOCK_TTL.total_seconds(), a timedelta constant of another module. SkuLock renews
    # every 30 s for 30 s (error, at the wait); WaveLock every 20 s for 60 s (fine).
    result = analyse("da103_partial_renew")
    assert rule_findings(result, "DA103") == [("DA103", "da103_partial_renew/stock/locks.py", 17)]
    assert finding_at(result, "DA103", "stock/locks.py", 17).severity == "error"


def test_a_period_read_through_two_layers_of_env_helpers_uses_its_deployed_value():
    # fixtures/da103_layered_env: `span(key, fallback)` reads the variable through another
    # helper (`text(key, "")`, os.LookupEnv + TrimSpace), as the Python `seconds()` does
    # through `_raw()`. The deployed .env value wins over the compiled default:
    # - shardd: RetryPeriod deployed 11 s against a 20 s LeaseDuration (default 3 s): a
    #   warning; the compactor's heartbeat, 20 s of 30 by default, is deployed at 6 s: silent.
    # - indexer: the claim refreshed every 75 s (deployed) of 90: a warning; the cursor,
    #   80 of 120 by default, refreshed every 30 s as deployed: silent.
    result = analyse("da103_layered_env")
    assert rule_findings(result, "DA103") == [
        ("DA103", "da103_layered_env/indexer/indexer/claims.py", 11),
        ("DA103", "da103_layered_env/shardd/internal/coord/elect.go", 27),
    ]
    f = finding_at(result, "DA103", "shardd/internal/coord/elect.go", 27)
    assert f.severity == "warning" and "11 s" in f.message and "20 s" in f.message
    g = finding_at(result, "DA103", "indexer/claims.py", 11)
    assert "75 s" in g.message and "90 s" in g.message


def test_a_timer_whose_callback_arms_it_again_is_a_renewal_loop():
    # fixtures/da103_rearming_timers: no loop statement, the timer's callback schedules the
    # next renewal (catalog `callback` / `rearms`):
    # - threading.Timer(RELAY_LOCK_REFRESH, self._tick), `_tick` extending the key and
    #   calling `_plan` again: 30 s of 40, a warning at the Timer;
    # - time.AfterFunc(sweepExtendEach, func(){ PExpire…; l.extender.Reset(…) }): 60 s of
    #   60, an error; Keep's callback is a closure held in a local (`var extend func()`):
    #   15 s of 20, a warning at the AfterFunc;
    # - loop.call_later(LEADER_MARK_EVERY, self.refresh, loop), `refresh` calling
    #   `schedule` again: 25 s of 30, a warning; Heartbeat re-arms every 10 s of 30: silent;
    # - one-shot timers (the relay's watchdog, the sweep's expiry AfterFunc): no loop.
    result = analyse("da103_rearming_timers")
    assert rule_findings(result, "DA103") == [
        ("DA103", "da103_rearming_timers/outbox/outbox/heartbeat.py", 35),
        ("DA103", "da103_rearming_timers/outbox/outbox/relay_lock.py", 32),
        ("DA103", "da103_rearming_timers/sweeper/lease/keeper.go", 30),
        ("DA103", "da103_rearming_timers/sweeper/lease/lease.go", 28),
    ]
    assert finding_at(result, "DA103", "outbox/outbox/relay_lock.py", 32).severity == "warning"
    go = finding_at(result, "DA103", "sweeper/lease/lease.go", 28)
    assert go.severity == "error"
    assert [rel(r.location) for r in go.related] == [("da103_rearming_timers/sweeper/lease/lease.go", 29)]


def test_a_lease_granted_by_the_function_that_builds_the_renewing_object():
    # fixtures/da103_built_lease: Acquire grants a 10 s etcd lease and returns the *Slot
    # whose Keep method calls KeepAliveOnce every 8 s: more than half the TTL, a warning at
    # the ticker, the grant as related. NewMarker grants 30 s for a Marker kept every 10 s.
    result = analyse("da103_built_lease")
    assert rule_findings(result, "DA103") == [("DA103", "da103_built_lease/slots/slots.go", 37)]
    f = finding_at(result, "DA103", "slots/slots.go", 37)
    assert [rel(r.location) for r in f.related] == [("da103_built_lease/slots/slots.go", 25)]


def test_python_row_leases_set_by_sql_the_code_runs():
    # fixtures/py_sql_leases: row leases kept by SQL statements run from Python, as Go's are:
    # - JobLease.keep sleeps 25 s, then `pool.execute(_EXTEND_JOB, job_id, JOB_LEASE_S)`,
    #   the statement a module constant setting `lease_until = now() + make_interval(secs
    #   => $2)`: 25 s of 30, a warning at the sleep;
    # - keep_run renews through SQLAlchemy `text(…:ttl * interval '1 second'…)` with the
    #   parameters dict every RUN_LEASE_S / 3: silent;
    # - run_leased takes the row (`… OR lease_until < now()`: an acquisition, not a renewal)
    #   and supervises `work`: export_job's timeout equal to the lease is DA101's.
    result = analyse("py_sql_leases")
    assert rule_findings(result, "DA103") == [("DA103", "py_sql_leases/jobq/leases.py", 32)]
    assert rule_findings(result, "DA101") == [("DA101", "py_sql_leases/jobq/exports.py", 10)]


def test_django_row_leases_set_with_update():
    # fixtures/da103_django_rows: `.filter(…).update(held_until=timezone.now() +
    # timedelta(seconds=self.HOLD_SECONDS))` resets a row lease of 40 s, refreshed every
    # 30 s by ParcelHold.run: a warning at the wait. claim_route's update filters on
    # `held_until__lt=now` (it takes a lapsed claim: an acquisition retried every 150 s,
    # not a renewal); keep_route renews the 2 min hold every 40 s.
    result = analyse("da103_django_rows")
    assert rule_findings(result, "DA103") == [("DA103", "da103_django_rows/shipping/holds.py", 27)]


def test_a_ttl_read_through_a_property_of_a_policy_object():
    # fixtures/da103_policy_property: `pexpire(key, self._policy.ttl_ms)` where ttl_ms is a
    # property returning `int(self.ttl_s * 1000)` of an OwnerPolicy (30 s), renewed every
    # beat_every_s = 24 s: more than half, a warning at the sleep.
    result = analyse("da103_policy_property")
    assert rule_findings(result, "DA103") == [("DA103", "da103_policy_property/agents/owner.py", 20)]
    assert "30 s" in finding_at(result, "DA103", "agents/owner.py", 20).message


def test_statement_parameters_kept_in_a_field_and_statements_wrapped_in_a_constant():
    # fixtures/da103_sql_params_field: ExportClaim binds its statement's parameters once in
    # __init__ (`self.bind = {"hold": hold, …}`) and its keeper thread runs
    # `cur.execute(EXTEND, self.bind)` every 45 s against a 30 s hold (line 35, the wait).
    # MirrorClaim's statement is a module constant wrapping `sqlalchemy.text(…)` with a
    # `:hold` bound from `self.params`; it refreshes every 30 s for a 120 s hold: silent.
    result = analyse("da103_sql_params_field")
    assert rule_findings(result, "DA103") == [("DA103", "da103_sql_params_field/exports/claims.py", 35)]
    f = finding_at(result, "DA103", "exports/claims.py", 35)
    assert any(r.location.line == 37 for r in f.related)


def test_renew_methods_that_reset_an_expiry_of_their_object():
    # fixtures/da103_reset_expiry: the renew methods take no duration; each moves an expiry
    # of its own object to a clock reading plus the object's TTL. A trio scope's deadline
    # pushed out every 45 s for a 45 s claim, the keeper started by `start_soon` with the
    # period as an argument (error); a JobHold renewed every 25 s for its 20 s default
    # (error); a datetime expiry of 90 s refreshed every 60 s from an executor thread
    # (warning). The same hold renewed at a third of its TTL, and a heartbeat that only
    # records when it was last seen, are silent.
    result = analyse("da103_reset_expiry")
    assert da103(result) == [
        ("DA103", "da103_reset_expiry/transcode/jobs.py", 11, "error"),
        ("DA103", "da103_reset_expiry/transcode/segments.py", 11, "error"),
        ("DA103", "da103_reset_expiry/transcode/thumbnails.py", 11, "warning"),
    ]
    by_path = {f.location.path.rsplit("/", 1)[-1]: f for f in result.findings if f.rule_id == "DA103"}
    assert [rel(r.location) for r in by_path["segments.py"].related] == [("da103_reset_expiry/transcode/claims.py", 21)]
    assert [rel(r.location) for r in by_path["jobs.py"].related] == [("da103_reset_expiry/transcode/claims.py", 31)]
    assert [rel(r.location) for r in by_path["thumbnails.py"].related] == [("da103_reset_expiry/transcode/claims.py", 44)]
    assert "60 s" in by_path["thumbnails.py"].message and "90 s TTL" in by_path["thumbnails.py"].message


def test_row_lease_statement_filled_in_from_a_template():
    # fixtures/da103_sql_template: `statement = _EXTEND.format(table=table)` then
    # `pool.execute(statement, row_id, lease_s)` in a keeper loop; the webhook relay gives
    # it 50 s for a 40 s lease (reported at the period it passes, line 20); the digest
    # relay renews at a third of its 90 s: silent.
    result = analyse("da103_sql_template")
    assert da103(result) == [("DA103", "da103_sql_template/relay/leases.py", 20, "error")]
    f = finding_at(result, "DA103", "relay/leases.py", 20)
    assert "50 s" in f.message and "40 s TTL" in f.message


def test_durations_from_flag_defaults():
    # fixtures/go_flag_defaults: `flag.DurationVar(&t.RetryPeriod, "retry-period", 10s, …)`
    # and a 15 s LeaseDuration the same way, into a LeaderElectionConfig: renewing every
    # 10 s is more than half the lease (warning, at the config's RetryPeriod). The janitor's
    # 2 s for 15 s is fine.
    result = analyse("go_flag_defaults")
    assert da103(result) == [("DA103", "go_flag_defaults/internal/election/election.go", 22, "warning")]
    f = finding_at(result, "DA103", "internal/election/election.go", 22)
    assert "10 s" in f.message and "15 s TTL" in f.message


def test_a_period_defaulted_from_the_ttl_field_it_renews(tmp_path, monkeypatch):
    # fixtures/go_viper_getters: PumpOptions.Touch defaults to `o.Lease * 3 / 4` when a
    # caller leaves it out (the slow pump does); the Lease differs per pump (a viper value
    # for both, a compiled default when unset), so only the share of the default can be
    # judged: 0.75 of any Lease is a warning. A default of a third is silent.
    result = analyse("go_viper_getters")
    assert da103(result) == [("DA103", "go_viper_getters/internal/inbox/pump.go", 21, "warning")]
    f = finding_at(result, "DA103", "inbox/pump.go", 21)
    assert "Touch defaults to 0.75 × Lease" in f.message
    assert [rel(r.location) for r in f.related] == [("go_viper_getters/internal/inbox/pump.go", 46),
                                                    ("go_viper_getters/internal/inbox/pump.go", 51)]
    root = tmp_path / "go_viper_getters"
    shutil.copytree(FIXTURES / "go_viper_getters", root)
    pump = root / "internal" / "inbox" / "pump.go"
    pump.write_text(pump.read_text(encoding="utf-8").replace("o.Lease * 3 / 4", "o.Lease / 3"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    fixed = pipeline.analyse([root], load_config([root]), use_cache=False)
    assert [f for f in fixed.findings if f.rule_id == "DA103"] == []


def test_temporal_options_built_by_a_method_of_a_policy_object():
    # fixtures/go_temporal_stage: `render.apply(ctx)` builds ActivityOptions from the
    # receiver's fields (render: 30 min / 20 s); Render heartbeats through
    # pulse(ctx, activity.GetInfo(ctx).HeartbeatTimeout): every 20 s against 20 s (error).
    # ingest's options (5 min / 5 min) are DA101 at the StartToClose field.
    result = analyse("go_temporal_stage")
    assert sorted(where(f) for f in result.findings) == [
        ("DA101", "go_temporal_stage/flow/workflow.go", 23),
        ("DA103", "go_temporal_stage/flow/activities.go", 17),
    ]
    f = finding_at(result, "DA101", "flow/workflow.go", 23)
    assert "300 s ≤ HeartbeatTimeout 300 s" in f.message
    assert ("go_temporal_stage/flow/workflow.go", 30) in [rel(r.location) for r in f.related]


def test_a_statement_that_takes_or_keeps_a_row_run_again_by_a_keeper():
    # fixtures/da103_take_then_keep: take() claims the row when free, expired or ours
    # (`… OR held_until < now()`); Keep calls it once, then a keeper goroutine runs it again
    # every ttl*3/4 (30 s of 40 s): those runs keep the row taken, a warning. Silent:
    # WaitFor retrying take() every TTL until the row is free (each try is a new claim).
    result = analyse("da103_take_then_keep")
    assert da103(result) == [("DA103", "da103_take_then_keep/rows/hold.go", 45, "warning")]
