"""DA401 ceiling-mismatch across components (Python studio -> Go farm agent, Go scheduler ->
Go farm agent, Python studio -> Python lighting service) and inside one program."""

from __future__ import annotations

import json

from analysis_support import analyse, finding_at, rel, rule_findings, where

T = "da401"


def test_every_value_cut_by_a_ceiling_and_nothing_else():
    result = analyse(T)
    assert rule_findings(result, "DA401") == [
        # compiled envconfig default 20m into min(cfg.DrainTimeout, 15m) in the same program
        ("DA401", f"{T}/farm-agent/internal/config/config.go", 11),
        # YAML key (Go config struct tags) sent Go -> Go, clamped by a helper at 2 h
        ("DA401", f"{T}/scheduler/scheduler.yaml", 4),
        # env layer read with os.getenv, sent in a dict, clamped by min() at 10 min
        ("DA401", f"{T}/studio/.env", 1),
        # env layer into a same-program Python clamp (min(float(os.getenv(...)), 30))
        ("DA401", f"{T}/studio/.env", 2),
        # dict literal entry sent Python -> Python (pydantic model), min(req.timeout_s, 1800)
        ("DA401", f"{T}/studio/studio/dispatch.py", 37),
        # Python -> Python, a Flask body read by key: min(float(payload.get("timeout_s", 30)), 120)
        ("DA401", f"{T}/studio/studio/dispatch.py", 50),
        # pydantic-settings default 9000 s sent in a dict, helper clamp at 2 h
        ("DA401", f"{T}/studio/studio/settings.py", 6),
    ]
    # negatives in the same trees: preview 600 s (dispatch.py:21), upload_wait_s == the 10 min
    # ceiling (settings.py:7), quick_bake == 1800 (dispatch.py:41), preview budget 30m
    # (scheduler.yaml:7), small_thumbnail == 120 (dispatch.py:54), a chat payload sharing one key (dispatch.py:46), report timeout 30 s
    # under a 1 min clamp (config.go:12), BATCH_SIZE=500 into a clamp of a count (.env:3)


def test_evidence_names_both_values_and_the_clamp():
    result = analyse(T)
    f = finding_at(result, "DA401", "scheduler/scheduler.yaml")
    assert "3 h" in f.message and "2 h" in f.message and "budget_seconds" in f.message
    assert [rel(r.location) for r in f.related] == [(f"{T}/farm-agent/internal/job/job.go", 21),
                                                    (f"{T}/farm-agent/internal/job/job.go", 29)]
    env = finding_at(result, "DA401", "studio/.env")
    assert "ARCHIVE_WAIT_S=1800" in env.message and "30 min" in env.message and "10 min" in env.message
    local = finding_at(result, "DA401", "config/config.go")
    assert "20 min" in local.message and "15 min" in local.message
    assert [rel(r.location) for r in local.related] == [(f"{T}/farm-agent/cmd/agent/main.go", 19)]


def _tree(tmp_path, minutes: int):
    from deadline_audit import pipeline
    from deadline_audit.config import load_config

    (tmp_path / "go.mod").write_text("module example.com/a\n\ngo 1.22\n")
    (tmp_path / "a.go").write_text(
        "package a\n\nimport \"time\"\n\nconst ceiling = time.Hour\n\n"
        f"var asked = {minutes} * time.Minute\n\n"
        "func Budget() time.Duration {\n\treturn min(asked, ceiling)\n}\n")
    result = pipeline.analyse([tmp_path], load_config([tmp_path]), use_cache=False)
    return [(f.location.line, f.message) for f in result.findings if f.rule_id == "DA401"]


def test_exceeding_is_strict(tmp_path):
    assert _tree(tmp_path, 60) == []  # 1 h against a 1 h ceiling is fine
    (line, message), = _tree(tmp_path, 61)
    assert line == 7 and "61 min" in message and "1 h" in message


def test_a_library_minimum_is_a_ceiling_too(tmp_path):
    # catalog wire.toml `clamp_calls`: math.Min over float64 conversions, as code written
    # before Go 1.21's builtin min does it
    from deadline_audit import pipeline
    from deadline_audit.config import load_config

    (tmp_path / "go.mod").write_text("module example.com/a\n\ngo 1.20\n")
    source = ("package a\n\nimport (\n\t\"math\"\n\t\"time\"\n)\n\nconst ceiling = time.Hour\n\n"
              "var asked = {asked}\n\nfunc Budget() time.Duration {{\n"
              "\treturn time.Duration(math.Min(float64(asked), float64(ceiling)))\n}}\n")

    def da401(asked: str):
        (tmp_path / "a.go").write_text(source.format(asked=asked))
        result = pipeline.analyse([tmp_path], load_config([tmp_path]), use_cache=False)
        return [f for f in result.findings if f.rule_id == "DA401"]

    assert da401("45 * time.Minute") == []
    f, = da401("90 * time.Minute")
    assert f.location.line == 10 and "90 min" in f.message and "1 h" in f.message
    assert [r.location.line for r in f.related] == [13]  # the clamp


def _py_tree(tmp_path, body: str, env: str):
    from deadline_audit import pipeline
    from deadline_audit.config import load_config

    (tmp_path / ".env").write_text(env)
    (tmp_path / "worker.py").write_text(body)
    result = pipeline.analyse([tmp_path], load_config([tmp_path]), use_cache=False)
    return sorted((f.location.path.rsplit("/", 1)[-1], f.location.line) for f in result.findings
                  if f.rule_id == "DA401")


IF_CLAMP = '''import os

MAX_LEASE_S = 300


def lease_seconds() -> float:
    lease = float(os.getenv("LEASE_S", "60"))
    if lease > MAX_LEASE_S:
        lease = MAX_LEASE_S
    return lease


def poll_seconds() -> float:
    poll = float(os.getenv("POLL_WAIT_S", "5"))
    poll = MAX_LEASE_S if poll > MAX_LEASE_S else poll
    return max(0.0, poll)
'''


def test_python_statement_clamps(tmp_path):
    # `if x > MAX: x = MAX` and `x = MAX if x > MAX else x` (py_marks_wire), fed by env layers
    assert _py_tree(tmp_path, IF_CLAMP, "LEASE_S=900\nPOLL_WAIT_S=301\n") == [(".env", 1), (".env", 2)]
    assert _py_tree(tmp_path, IF_CLAMP, "LEASE_S=300\nPOLL_WAIT_S=30\n") == []


def test_a_keyword_named_k_does_not_crash_the_wire_checks(tmp_path, monkeypatch):
    # A call's keywords are stored as a dict keyed by name; `k=` must not be read as an
    # expression's kind (seen as an internal error of DA401-DA403 on a real samples tree).
    (tmp_path / "search.py").write_text(
        "import httpx\n\n"
        "def top(store, query):\n"
        "    hits = store.similarity_search(query, k={'n': 4})\n"
        "    return httpx.post('http://ranker/rank', json={'query': query, 'hits': hits, 'timeout': 30})\n"
    )
    monkeypatch.chdir(tmp_path)
    from deadline_audit.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["check", "--no-cache", "--format", "json", "--fail-on", "never", "."])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["errors"] == []


def test_computed_constant_origin_and_a_decoding_wrapper_default():
    # fixtures/da40x_wrapped: the platform sends NIGHTLY_VACUUM_S = 120 * 60 as timeout_sec;
    # the agent clamps at 1 h: DA401 at the constant's line (45 min for the weekly job is
    # fine). The agent's runs.default_timeout is a `struct{ time.Duration }` config wrapper:
    # agent.toml deploys 90m (the code's default is 3 min), which the same clamp cuts (DA401
    # at the key, DA502 for the 30x drift), and which rotate_logs runs under, sending no
    # timeout_sec (DA402). grace_ms is sent in ms and read with time.Second (DA403). The cron
    # (Go) posts a table of tasks to the Python worker: the entry without timeout_s runs
    # under the worker's 2 min default (DA402); the worker's own answer dict is no send.
    result = analyse("da40x_wrapped")
    assert sorted(where(f) for f in result.findings) == [
        ("DA401", "da40x_wrapped/agent/agent.toml", 4),
        ("DA401", "da40x_wrapped/platform/opsdesk/budgets.py", 3),
        ("DA402", "da40x_wrapped/cron/jobs/table.go", 27),
        ("DA402", "da40x_wrapped/platform/opsdesk/routine.py", 7),  # a list of payload dicts
        ("DA402", "da40x_wrapped/platform/opsdesk/runs.py", 25),
        ("DA403", "da40x_wrapped/agent/runner/runner.go", 18),
        ("DA502", "da40x_wrapped/agent/agent.toml", 4),
    ]
    f = finding_at(result, "DA401", "opsdesk/budgets.py", 3)
    assert "2 h (NIGHTLY_VACUUM_S = 120 * 60)" in f.message and "clamps it at 1 h" in f.message
    assert "falls back to 90 min" in finding_at(result, "DA402", "opsdesk/runs.py", 25).message
    assert "falls back to 2 min" in finding_at(result, "DA402", "jobs/table.go", 27).message
    assert "sent in milliseconds and converted here as seconds" in \
        finding_at(result, "DA403", "runner/runner.go", 18).message


def test_a_millisecond_constant_is_the_origin_of_what_is_cut():
    # fixtures/da401_ms_constant: FULL_EXPORT_DEADLINE_MS = 90 * 60 * 1000 sent as
    # `deadline_ms`, clamped by the worker at 45 min: reported at the constant, read in the
    # unit its name states; the 20 min delta export is under the ceiling.
    result = analyse("da401_ms_constant")
    assert rule_findings(result, "DA401") == [("DA401", "da401_ms_constant/platform/exporter/limits.py", 3)]
    f = finding_at(result, "DA401", "exporter/limits.py", 3)
    assert "90 min (FULL_EXPORT_DEADLINE_MS = 90 * 60 * 1000)" in f.message and "45 min" in f.message


def test_every_value_that_may_be_sent_or_looked_up_is_checked_at_its_origin():
    # fixtures/da401_alternatives: the printer clamps budget_ms at 1 h. A builder's default
    # (10 min) is overridden with `BANNER_MS if banner else BOOKLET_MS`: the 2 h arm is
    # flagged at its constant, the 40 min arm is not. `RUSH_BUDGETS[tier]` sends one of a
    # dict's values: the 8 h entry is flagged, the 15 min one is not. In Go,
    # `d, ok := paperBudget[paper]` feeds min(d, maxPrint): the 3 h poster entry is flagged.
    # print_poster() sends poster_budget(size), a helper returning
    # `POSTER_BUDGETS.get(size.lower(), DEFAULT_PRINT_MS)`: the 90 min a0 entry is flagged.
    result = analyse("da401_alternatives")
    assert rule_findings(result, "DA401") == [
        ("DA401", "da401_alternatives/office/office/budgets.py", 5),
        ("DA401", "da401_alternatives/office/office/budgets.py", 9),
        ("DA401", "da401_alternatives/office/office/budgets.py", 14),
        ("DA401", "da401_alternatives/printer/internal/jobs/jobs.go", 28),
    ]
    banner = finding_at(result, "DA401", "office/budgets.py", 5)
    assert "2 h" in banner.message and "at 1 h" in banner.message
    assert [rel(r.location) for r in banner.related] == [("da401_alternatives/printer/internal/jobs/jobs.go", 19)]
    poster = finding_at(result, "DA401", "jobs/jobs.go", 28)
    assert "3 h" in poster.message and "localBudget" in poster.message


def test_config_tables_validated_into_nested_models():
    # fixtures/da401_config_models: `Pipelines(**yaml.safe_load(fh)["pipelines"])` fills a
    # model whose two fields hold the same nested StageConfig, and a pydantic-settings class
    # reads studio.toml (`toml_file=`) into nested sections. The 2 h transcode budget and
    # the 30 min finalize budget (a `_ms` key: read in milliseconds) are cut by the encoder's
    # 1 h / 10 min ceilings and reported at their config lines; the 90 s thumbnail budget
    # (the same StageConfig field) and the 20 s probe are under them.
    result = analyse("da401_config_models")
    assert rule_findings(result, "DA401") == [
        ("DA401", "da401_config_models/studio/config/pipelines.yaml", 5),
        ("DA401", "da401_config_models/studio/config/studio.toml", 3),
    ]
    f = finding_at(result, "DA401", "config/studio.toml", 3)
    assert "30 min" in f.message and "10 min" in f.message


def test_keys_read_from_a_loaded_config_document():
    # fixtures/da401_document_keys: `json.loads(...)`'s document read as
    # `doc.get("fetch", {}).get("page_timeout_s", 30)` is the config key fetch.page_timeout_s
    # (90 s), clamped at 60 s: reported at the JSON line. robots_timeout_s (5 s, read as
    # `raw["fetch"]["robots_timeout_s"]`) is under its 15 s cap. stages.py reads each stage
    # through one helper, `_stage(doc["crawl"])` / `_stage(doc["index"])`: the field it fills
    # holds either table's timeout_s; the crawl stage's 900 s is over the 600 s cap, the
    # index stage's 300 s is not.
    result = analyse("da401_document_keys")
    assert rule_findings(result, "DA401") == [
        ("DA401", "da401_document_keys/crawler/config/crawler.json", 3),
        ("DA401", "da401_document_keys/crawler/config/stages.json", 2),
    ]
    f = finding_at(result, "DA401", "config/crawler.json", 3)
    assert "90 s" in f.message and "60 s" in f.message


def test_a_go_clamp_of_a_plain_number_works_in_the_unit_its_names_state():
    # fixtures/da401_int_seconds: `BudgetSeconds int` is clamped by capBudget at
    # maxBudgetSeconds (4 * 60 * 60): whole seconds, not a time.Duration's nanoseconds. The
    # 8 h reindex budget is cut (reported at its constant, in hours); the 45 min snapshot is not.
    result = analyse("da401_int_seconds")
    assert rule_findings(result, "DA401") == [("DA401", "da401_int_seconds/portal/portal/budgets.py", 3)]
    f = finding_at(result, "DA401", "portal/budgets.py", 3)
    assert f.message.startswith("8 h (REINDEX_BUDGET_SECONDS = 8 * 60 * 60)") and "clamps it at 4 h" in f.message


def test_a_string_field_filled_from_the_config_file_and_parsed_by_the_program():
    # fixtures/da401_string_config: `PageTimeout string toml:"page_timeout"` holds "10m"
    # from crawler.toml (the "30s" set before decoding is what the file replaces), parsed
    # with time.ParseDuration and clamped at 5 min: reported at the TOML line. The robots
    # timeout ("20s", clamped at 1 min) is under its ceiling.
    result = analyse("da401_string_config")
    assert rule_findings(result, "DA401") == [("DA401", "da401_string_config/config/crawler.toml", 2)]
    assert "10 min" in finding_at(result, "DA401", "config/crawler.toml", 2).message


def test_a_clamp_that_logs_before_it_cuts_and_a_config_value_parsed_into_a_reused_local():
    # fixtures/da401_logged_clamp: Load sets DefaultTimeout to 15 min, then to `d` parsed
    # from runner.toml's "90m" (`d, err :=` is declared again for the idle timeout in the
    # next block: the first `d` is the one assigned). budget() falls back to it and clamps
    # at 1 h with a log line before `requested = maxRun`: flagged at the TOML line. The idle
    # timeout (5 min) is under its 10 min ceiling. renewAfter's `if half < floor { return
    # half }` compares a constant with the value: no ceiling of the constant (a real
    # project's jitter helper was once reported so). capDrain(d) clamps its parameter: each
    # call's argument is what is cut, so drainGrace (20 min, against 15 min) is flagged at
    # its constant and the 5 min call is not.
    result = analyse("da401_logged_clamp")
    assert rule_findings(result, "DA401") == [
        ("DA401", "da401_logged_clamp/internal/run/run.go", 53),
        ("DA401", "da401_logged_clamp/runner.toml", 3),
    ]
    assert "90 min" in finding_at(result, "DA401", "runner.toml", 3).message


def test_django_settings_read_through_the_settings_proxy():
    # fixtures/da401_django_settings: `from django.conf import settings` then
    # `settings.CHECKOUT_TIMEOUT` reads shop/settings.py's module-level value (django-environ
    # `env.int`, 900 in .env); PspClient clamps its `call_timeout` (copied to a local) at
    # 120 s, called twice: the checkout call's 900 is cut (reported at the .env line), the
    # refund call's 45 is not.
    result = analyse("da401_django_settings")
    assert rule_findings(result, "DA401") == [("DA401", "da401_django_settings/.env", 1)]


def test_a_table_returned_by_a_helper_and_a_millisecond_env_value_reach_their_clamps():
    # fixtures/da401_table_helper:
    # - conf.py holds no timeout word; it loads config/mediaq.yaml and hands each table out
    #   through `_table(doc, "fetch")` (returning `doc.get(key) or {}`): fetch.total_s 120
    #   is cut to 45 s by Fetcher (an error at the YAML key); probe.total_s 10 under its 30 s
    #   ceiling is silent, though both fill the same StageConf field;
    # - MEDIAQ_UPSTREAM_TIMEOUT_MS=90000 (an int pydantic field, divided by 1000) is 90 s
    #   against min(…, 60): an error at the .env line; the callback's 20000 ms is silent.
    result = analyse("da401_table_helper")
    assert rule_findings(result, "DA401") == [
        ("DA401", "da401_table_helper/.env", 1),
        ("DA401", "da401_table_helper/config/mediaq.yaml", 3),
    ]
    env = finding_at(result, "DA401", ".env", 1)
    assert "90 s" in env.message and "60 s" in env.message
    assert [rel(r.location) for r in env.related] == [("da401_table_helper/mediaq/fetcher.py", 16)]
    yaml_finding = finding_at(result, "DA401", "config/mediaq.yaml", 3)
    assert "120 s" in yaml_finding.message and "45 s" in yaml_finding.message
    assert [rel(r.location) for r in yaml_finding.related] == [("da401_table_helper/mediaq/fetcher.py", 14)]


def test_a_configured_limit_cut_by_a_constant_limit_both_named_max():
    # fixtures/da401_named_limits: `min(r.cfg.MaxReplay, limits.MaxReplayWindow)` — both
    # names say "max", but the constant is the ceiling and the configured value is cut: the
    # compiled default 72 h against 24 h is an error at the default. MaxIdle (90 s against
    # 5 min) is under its ceiling.
    result = analyse("da401_named_limits")
    assert rule_findings(result, "DA401") == [("DA401", "da401_named_limits/internal/config/config.go", 18)]
    f = finding_at(result, "DA401", "internal/config/config.go", 18)
    assert [rel(r.location) for r in f.related] == [("da401_named_limits/internal/relay/relay.go", 19)]


def test_a_getattr_default_reaches_the_clamp():
    # fixtures/da401_getattr_default: `min(getattr(tool, "budget_s", policy.default_s),
    # policy.ceiling_s)`: every tool without its own budget_s runs with the policy's 900 s
    # default, cut to 600 s: an error at the default (line 10). The probe's 30 s default is
    # under the ceiling.
    result = analyse("da401_getattr_default")
    assert rule_findings(result, "DA401") == [("DA401", "da401_getattr_default/tools/budget.py", 10)]


def test_tables_of_models_under_a_list_or_a_dict_field_each_reach_the_clamp():
    # fixtures/da401_model_tables: Fleet validates deploy/fleet.yaml with `agents:
    # list[AgentSpec]` and `queues: dict[str, QueueSpec]`. Each agent's run_timeout_s
    # reaches `min(spec.run_timeout_s, MAX_AGENT_RUN_S)` (1800 s): the transcoder's 3600 is
    # cut (line 7), the indexer's 900 is not. The queues' poll_timeout_s (20 and 5) stay
    # within MAX_POLL_WAIT_S = 20 (equal is fine). The transcoder's 3600 is also 12× the
    # field's compiled default (DA502, info).
    result = analyse("da401_model_tables")
    assert rule_findings(result, "DA401") == [("DA401", "da401_model_tables/deploy/fleet.yaml", 7)]
    assert rule_findings(result, "DA502") == [("DA502", "da401_model_tables/deploy/fleet.yaml", 7)]
    f = finding_at(result, "DA401", "deploy/fleet.yaml", 7)
    assert [r.location.line for r in f.related] == [15]


def test_each_entry_of_an_iterated_config_list_or_table_reaches_the_clamp():
    # fixtures/da401_iterated_entries: `for entry in raw["suites"]` hands each suite of
    # conf/suites.json to _scoring_timeout, which clamps `entry.get("scoring_timeout_s")`
    # at 300 s: the longform suite's 900 is cut (line 5), 60 and 300 are not. A dict
    # comprehension over `doc["exports"].items()` hands each export of conf/exports.yaml to
    # _export_budget (ceiling 1800 s): weekly's 3600 is cut (line 5), 900 and 600 are not.
    # workers.py builds a WorkerSpec per [[workers]] table through `_worker(w)` in a
    # generator; the field is clamped elsewhere (Drainer, 60 s), with no call in view: the
    # helper's parameter is what its one caller passes, so render's 120 is cut (line 7).
    result = analyse("da401_iterated_entries")
    assert rule_findings(result, "DA401") == [
        ("DA401", "da401_iterated_entries/conf/exports.yaml", 5),
        ("DA401", "da401_iterated_entries/conf/suites.json", 5),
        ("DA401", "da401_iterated_entries/conf/workers.toml", 7),
    ]


def test_a_duration_sent_as_text_is_parsed_by_the_receiver_then_clamped():
    # fixtures/da401_text_duration_wire: the control plane sends `"budget": "3h"` (a
    # settings field's text default) to the indexer's ReindexRequest, whose `Budget string`
    # is parsed with time.ParseDuration and clamped by min(d, 2h): reported at the default
    # (settings.py:8). The compact limit "45m" stays under its 1 h ceiling. The vacuum
    # window "2h" meets `if err != nil || d > maxVacuum { return maxVacuum }` (30 min): a
    # clamp that also covers a failed parse (settings.py:10).
    result = analyse("da401_text_duration_wire")
    assert rule_findings(result, "DA401") == [
        ("DA401", "da401_text_duration_wire/control/settings.py", 8),
        ("DA401", "da401_text_duration_wire/control/settings.py", 10),
    ]
    f = finding_at(result, "DA401", "control/settings.py", 8)
    assert "3 h" in f.message and "2 h" in f.message


def test_a_count_clamped_through_a_helper_is_no_duration():
    # fixtures/da401_count_helper: `min(c.batchMaxSize, c.waitBacklogEffective())` clamps a
    # backlog size; "wait" in waitBacklogAt says nothing about time when the ceiling is
    # named as a count (found on a real job queue): silent.
    result = analyse("da401_count_helper")
    assert rule_findings(result, "DA401") == []


def test_a_min_on_one_return_path_only_caps_nothing():
    # fixtures/da401_warmup_min: `fetch_timeout(120.0)` returns min(requested, 60): the
    # literal 120 is cut (line 24). `next_wait()` returns min(1, interval) while warming up
    # and the interval itself afterwards: the 45 s interval given through
    # Thread(target=poll_forever, args=(stop, 45.0, fetch)) is never capped: silent.
    result = analyse("da401_warmup_min")
    assert rule_findings(result, "DA401") == [("DA401", "da401_warmup_min/poller/loop.py", 24)]


def test_a_defined_duration_type_read_from_yaml_and_capped_through_its_accessor():
    # fixtures/go_defined_duration: `type Duration time.Duration` decodes "45s" itself;
    # cap() in another file than the struct compares `s.Fetch.Deadline.Std()` with 20 s
    # and assigns `Duration(maxFetchDeadline)`: the YAML's 45 s is cut (DA401 at the key).
    # Silent: grace (5 s) under its 10 s cap.
    result = analyse("go_defined_duration")
    assert rule_findings(result, "DA401") == [("DA401", "go_defined_duration/settings.yaml", 3)]
    f = finding_at(result, "DA401", "settings.yaml", 3)
    assert "45 s" in f.message and "at 20 s" in f.message


def test_an_item_of_a_mapping_parameter_has_the_annotated_item_type():
    # fixtures/py_mapping_items: `plans: Mapping[str, Plan]` stored in `self._plans`;
    # `plan = self._plans[name]` is a Plan, so `plan.budget_s` reads every plan the TOML
    # table gives (`doc["plans"].items()`): the full plan's 7200 s is cut at 3600 s.
    # Silent: the quick plan's 60 s.
    result = analyse("py_mapping_items")
    assert rule_findings(result, "DA401") == [("DA401", "py_mapping_items/config/plans.toml", 6)]
