"""DA502 default-drift on layered env files (root .env, deploy/.env, profiles) where
precedence decides the verdict, with defaults from a Go helper, a Python helper, a direct
read with a millisecond name and a pydantic-settings prefix."""

from __future__ import annotations

from analysis_support import analyse, finding_at, rel, rule_findings, where

TREE = "da502/layered"


def test_drifted_knobs_are_reported_at_the_line_that_deploys_them():
    result = analyse(TREE)
    assert rule_findings(result, "DA502") == [
        ("DA502", f"{TREE}/.env", 4),  # RELAY_DRAIN_TIMEOUT 45 vs env_float default 3.0: 15x
        ("DA502", f"{TREE}/deploy/.env", 2),  # RELAY_UPSTREAM_TIMEOUT: deploy/.env's 5m wins over 20s, 10x
        ("DA502", f"{TREE}/deploy/.env", 5),  # RELAY_PROXY_CONNECT_TIMEOUT (prefix relay_proxy_) 30 vs 2.0
        ("DA502", f"{TREE}/deploy/.env", 7),  # RELAY_GRACE 5000 vs 500, milliseconds by the consuming code
        ("DA502", f"{TREE}/deploy/.env.production", 2),  # RELAY_SWEEP_INTERVAL_MS: only profile, 5000 vs 500
        ("DA502", f"{TREE}/worker/queues.yaml", 2),  # loaded file's 30m vs .get("visibility_timeout", 120)
    ]
    # silent: RELAY_IDLE_TIMEOUT (root 10m is 20x but deploy/.env's 45s wins), RELAY_POLL_INTERVAL
    # (9x), RELAY_BATCH_SIZE (not a timeout), RELAY_RENDER_TIMEOUT (staging 7200 loses to
    # production 150), RELAY_PROXY_READ_TIMEOUT (equal), .env.example (documentation),
    # sweeper.ack_timeout (20 vs 30), RELAY_FLUSH_INTERVAL (10x, but a count: no unit anywhere),
    # RELAY_HANDSHAKE_TIMEOUT=300 (lookupDuration ignores a bare number: 10 s is what runs),
    # RELAY_PROXY_READ_TIMEOUT (the 0.5 default in a test is not a compiled default).


def test_message_names_the_winning_layer_both_values_and_the_default():
    result = analyse(TREE)
    f = finding_at(result, "DA502", "deploy/.env", 2)
    assert "RELAY_UPSTREAM_TIMEOUT is deployed as 5m (300 s)" in f.message
    assert "deploy/.env:2" in f.message and "10\u00d7 larger" in f.message and "30 s" in f.message
    assert [rel(r.location) for r in f.related] == [(f"{TREE}/relay/settings.go", 39)]
    assert f.flow[0].node == "env:RELAY_UPSTREAM_TIMEOUT"
    assert [(lay.path.rsplit("layered/", 1)[-1], lay.wins) for lay in f.flow[0].layers] == [
        (".env", False), ("deploy/.env", True)]
    f = finding_at(result, "DA502", ".env.production", 2)
    assert "production profile" in f.message and "500 ms" in f.message
    f = finding_at(result, "DA502", "layered/.env", 4)
    assert "15\u00d7 larger" in f.message
    assert [rel(r.location) for r in f.related] == [(f"{TREE}/worker/limits.py", 11)]


def test_ratio_option():
    from analysis_support import build
    from deadline_audit.checks import da502

    graph = build(TREE).graph
    names = {f.flow[0].node for f in da502.check(graph, {"ratio": 8})}
    assert "env:RELAY_POLL_INTERVAL" in names  # 9x
    assert "env:RELAY_IDLE_TIMEOUT" not in names


def test_config_key_against_the_default_the_code_applies_without_it():
    result = analyse(TREE)
    f = finding_at(result, "DA502", "queues.yaml", 2)
    assert "sweeper.visibility_timeout is set to 30m" in f.message and "120 s" in f.message
    assert [rel(r.location) for r in f.related] == [(f"{TREE}/worker/queues.py", 7)]
    assert f.flow[0].node.endswith("queues.yaml#sweeper.visibility_timeout")


def test_units_come_from_the_consuming_code():
    f = finding_at(analyse(TREE), "DA502", "deploy/.env", 7)
    assert "RELAY_GRACE is deployed as 5000 (5 s)" in f.message and "500 ms" in f.message
    assert f.flow[0].value_seconds == 5.0 and f.flow[0].default_seconds == 0.5


def test_go_config_struct_defaults_against_the_loaded_yaml():
    # defaults set in a composite literal before yaml.Unmarshal are the compiled defaults
    # of the keys the fields' tags name; the parent key comes from the holding field's tag
    result = analyse("da502/goyaml")
    assert rule_findings(result, "DA502") == [("DA502", "da502/goyaml/config/app.yaml", 5)]
    f = finding_at(result, "DA502", "app.yaml", 5)
    assert "worker.lease_ttl is set to 10m" in f.message and "30 s" in f.message
    assert [rel(r.location) for r in f.related] == [("da502/goyaml/internal/settings/settings.go", 31)]
    # silent: read_timeout (equal), shutdown_grace (1.5x), poll_interval (2x)


def test_env_read_through_django_environ_and_python_decouple():
    # fixtures/da502_env_libs: `env.int("CHECKOUT_TIMEOUT", default=30)` (django-environ,
    # a method of an environ.Env object) deployed at 600 (20x) and decouple's
    # `config("CARRIER_READ_TIMEOUT", default=3, cast=float)` deployed at 45 (15x) drift;
    # `env("STOCK_SYNC_TIMEOUT", default=20)` deployed at 40 (2x) does not.
    result = analyse("da502_env_libs")
    assert sorted(where(f) for f in result.findings) == [
        ("DA502", "da502_env_libs/.env", 1), ("DA502", "da502_env_libs/.env", 3)]


def test_pydantic_settings_nested_models():
    # fixtures/da50x_nested_settings: `http: HttpSettings` on a BaseSettings with
    # env_prefix="APP_" and env_nested_delimiter="__": APP_HTTP__READ_TIMEOUT=300 deploys
    # http.read_timeout (default 10: 30x, DA502); APP_HTTP__CONNECT_TIMEOUT is read (5 vs 3:
    # no drift); APP_HTTP__RETRY_TIMEOUT, documented only, names no field (DA501).
    result = analyse("da50x_nested_settings")
    assert sorted(where(f) for f in result.findings) == [
        ("DA501", "da50x_nested_settings/.env.example", 4), ("DA502", "da50x_nested_settings/.env", 1)]


def test_a_model_field_filled_from_a_loaded_file_drifts_from_its_own_default():
    # fixtures/da401_config_models: StageConfig.timeout_s defaults to 600 and is filled from
    # pipelines.yaml (`Pipelines(**yaml.safe_load(fh)["pipelines"])`): the transcode table's
    # 7200 is 12x that default (reported at the YAML line, the default related). The other
    # values are within 10x of their defaults (90 vs 600, 30 min vs 5 min, 20 s vs 10 s).
    result = analyse("da401_config_models")
    assert rule_findings(result, "DA502") == [("DA502", "da401_config_models/studio/config/pipelines.yaml", 5)]
    f = finding_at(result, "DA502", "config/pipelines.yaml", 5)
    assert [rel(r.location) for r in f.related] == [("da401_config_models/studio/studio/models.py", 15)]


def test_reader_helper_with_an_empty_default_of_its_own():
    # fixtures/da502_reader_empty_default: `seconds_from_env(key, fallback)` reads
    # `os.environ.get(key, "").strip()` and returns `fallback` when it is empty: the
    # fallback is the compiled default. The production profile's 240 s fetch timeout is 16×
    # the 15 s default (reported at the profile line); the parse timeout's 4× is silent.
    result = analyse("da502_reader_empty_default")
    found = sorted(where(f) for f in result.findings if f.rule_id == "DA502")
    assert found == [("DA502", "da502_reader_empty_default/.env.production", 2)]
    f = next(f for f in result.findings if f.rule_id == "DA502")
    assert "16×" in f.message and "15 s" in f.message
    assert [rel(r.location) for r in f.related] == [("da502_reader_empty_default/scanner/config.py", 13)]
