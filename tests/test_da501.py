"""DA501 dead-timeout-knob on a polyglot tree: knobs set in env layers, documented in an
example env file and in Markdown (table, fenced env block), and a key of a loaded YAML
file, next to knobs read through helpers, an envconfig prefix and a pydantic-settings
prefix, library-owned names, a constant named in prose, and files that are not the
program's configuration (a Kubernetes manifest, a CI workflow)."""

from __future__ import annotations

from analysis_support import FIXTURES, analyse, finding_at, rule_findings

TREE = "da501/platform"


def test_dead_knobs_are_found_where_they_are_set_or_documented():
    result = analyse(TREE)
    assert rule_findings(result, "DA501") == [
        ("DA501", f"{TREE}/.env", 3),  # XCODE_SEGMENT_LEASE: nothing reads it
        ("DA501", f"{TREE}/.env.example", 2),  # XCODE_RETRY_INTERVAL: documented, never read
        ("DA501", f"{TREE}/api/pipeline.yaml", 5),  # stages.encode.stall_timeout of the loaded file
        ("DA501", f"{TREE}/docs/operations.md", 9),  # table row XCODE_UPLOAD_HEARTBEAT_INTERVAL
        ("DA501", f"{TREE}/docs/operations.md", 14),  # fenced env block XCODE_QUEUE_VISIBILITY_TIMEOUT
        ("DA501", f"{TREE}/docs/operations.md", 18),  # `stall_timeout`: a key of pipeline.yaml, unread
    ]
    # silent: helper reads with a prefix (Go fromEnv, Python env_seconds), envconfig prefix
    # xcode + PROBE_TIMEOUT, pydantic prefix UPLOADS_, OTEL_*/GOMAXPROCS/UVICORN_*, the constant
    # DEFAULT_UPLOAD_TIMEOUT in prose, names built at run time (f-string, fmt.Sprintf), a name
    # the code sets for a child process (XCODE_PACKAGER_TIMEOUT=), one docker-compose passes
    # on as a flag (XCODE_DRAIN_TIMEOUT), compose healthcheck keys, `initial_interval` (no config file has it: an API
    # parameter), Go/SQL fences, the k8s manifest, the CI workflow, and web/.env (a JS app with
    # runtime dependencies sits there: its code, which we do not read, may use the names), and
    # CHANGELOG.md (history names removed knobs on purpose), a YAML snippet of the probe (keys of
    # a manifest, not of a config file the program loads).


def test_messages_name_the_knob_and_how_it_is_promised():
    result = analyse(TREE)
    f = finding_at(result, "DA501", "platform/.env", 3)
    assert "XCODE_SEGMENT_LEASE is set in this env layer" in f.message
    assert f.flow[0].node == "env:XCODE_SEGMENT_LEASE"
    f = finding_at(result, "DA501", "pipeline.yaml", 5)
    assert "stages.encode.stall_timeout" in f.message and "loads" in f.message
    f = finding_at(result, "DA501", "operations.md", 9)
    assert "XCODE_UPLOAD_HEARTBEAT_INTERVAL is documented here" in f.message


def test_exempt_and_patterns_extend_from_options():
    from deadline_audit.checks import da501
    from analysis_support import build

    graph = build(TREE).graph
    lines = {(f.location.path.rsplit("/", 1)[-1], f.location.line) for f in da501.check(graph, {})}
    assert (".env", 3) in lines
    quiet = {(f.location.path.rsplit("/", 1)[-1], f.location.line)
             for f in da501.check(graph, {"exempt": ["XCODE_SEGMENT_*"]})}
    assert (".env", 3) not in quiet
    more = {(f.location.path.rsplit("/", 1)[-1], f.location.line)
            for f in da501.check(graph, {"patterns": ["*WORKERS*"]})}
    assert ("pipeline.yaml", 6) in more  # stages.encode.workers is now a knob, and dead


def test_a_configured_config_file_is_loaded_even_if_no_code_names_it():
    from deadline_audit.checks import da501
    from analysis_support import build

    graph = build(TREE).graph
    plain = {f.location.path for f in da501.check(graph, {})}
    assert not any(p.endswith("k8s/api.yaml") for p in plain)
    # a manifest stays out even when configured: it is never the program's config
    configured = {f.location.path for f in da501.check(graph, {"config-files": ["*/k8s/*.yaml"]})}
    assert not any(p.endswith("k8s/api.yaml") for p in configured)


def test_viper_keys_prefix_and_config_name():
    # viper loads gateway.yaml (SetConfigName without extension) and reads env GW_<KEY>
    # (SetEnvPrefix + key replacer): dead are the keys and the env name nothing asks for.
    result = analyse("da501/viper_go")
    assert rule_findings(result, "DA501") == [
        ("DA501", "da501/viper_go/.env", 2),  # GW_SERVER_SHUTDOWN_TIMEOUT
        ("DA501", "da501/viper_go/gateway.yaml", 5),  # server.write_timeout
        ("DA501", "da501/viper_go/gateway.yaml", 7),  # upstream.dial_timeout
    ]


def test_catalog_extension_from_configuration(tmp_path, monkeypatch):
    import shutil

    from deadline_audit import pipeline
    from deadline_audit.config import load_config

    root = tmp_path / "platform"
    shutil.copytree(FIXTURES / TREE, root)
    (root / "pyproject.toml").write_text(
        '[tool.deadline-audit.catalog.knobs]\nexempt = ["XCODE_SEGMENT_*"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = pipeline.analyse([root], load_config([root]), use_cache=False)
    lines = {(f.location.path, f.location.line) for f in result.findings if f.rule_id == "DA501"}
    assert ("platform/.env", 3) not in lines and ("platform/.env.example", 2) in lines


def test_files_only_tests_open_are_not_program_config():
    # ingest.json is loaded by the worker: its unread flushTimeout is dead. history.json is
    # opened only by a replay test: an event history, not configuration (seen on a real
    # workflow-samples tree, where recorded histories were reported key by key).
    result = analyse("da501/replay")
    assert rule_findings(result, "DA501") == [("DA501", "da501/replay/worker/ingest.json", 3)]


def test_an_api_document_the_program_loads_is_not_its_configuration():
    # billing/app.py loads both config/billing.yaml (its settings) and billing/api-spec.json
    # (the OpenAPI document it serves): the document's example `settle_timeout: 30` is part of
    # an API, not a knob, whatever the file is called (catalog knobs.toml `document_keys`).
    # billing/search.py loads search/invoices_index.json and hands it to the search cluster
    # whole: its `refresh_interval` is applied there, not dead
    tree = "da501/apidoc"
    assert rule_findings(analyse(tree), "DA501") == [
        ("DA501", f"{tree}/config/billing.yaml", 3),  # ledger_lock_timeout: nothing reads it
    ]


def test_a_word_holding_a_knob_word_is_not_a_knob():
    # RELEASE holds LEASE, THROTTLE and SETTLE hold TTL (catalog knobs.toml `false_friends`);
    # the lease knob beside them is still found, in the env file and in the docs
    tree = "da501/false_friends"
    assert rule_findings(analyse(tree), "DA501") == [
        ("DA501", f"{tree}/.env", 3),  # CHUNK_LEASE_SECONDS: nothing reads it
        ("DA501", f"{tree}/docs/releasing.md", 6),
    ]


def test_keys_that_are_data_in_a_loaded_json_table_are_not_knobs():
    # fixtures/da501_data_keys: site/links.json maps URL paths to pages
    # ("/guides/ttl/tuning_ttl", "/reference/timeouts") and build_links.py reads it whole
    # (`links.items()`): entries of a table, not knob names, so silent. app/settings.json's
    # cache_ttl_seconds is a knob nobody reads (request_timeout_seconds is read).
    result = analyse("da501_data_keys")
    assert rule_findings(result, "DA501") == [("DA501", "da501_data_keys/app/settings.json", 3)]


def test_a_documented_nested_settings_variable_the_model_does_not_have():
    # fixtures/da501_nested_docs: pydantic-settings with env_nested_delimiter="__". The
    # README documents APP_CACHE__STALE_TIMEOUT, but CacheSettings has no stale_timeout
    # (UpstreamSettings does: APP_UPSTREAM__STALE_TIMEOUT is read): a dead knob at line 7.
    # The other three rows name fields their models have.
    result = analyse("da501_nested_docs")
    assert rule_findings(result, "DA501") == [("DA501", "da501_nested_docs/README.md", 7)]
