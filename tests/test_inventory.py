"""The knob inventory of `check --format json` (SPEC §5 additive `inventory`)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from typer.testing import CliRunner

from analysis_support import FIXTURES, analyse
from deadline_audit.cli import app

SCHEMA = Path(__file__).resolve().parent.parent / "deadline_audit" / "schemas" / "findings-v1.json"


def by_name(result):
    return {e["name"]: e for e in result.knob_inventory()}


def test_env_knob_with_layers_profiles_defaults_and_reads():
    inv = by_name(analyse("da502/layered"))
    up = inv["RELAY_UPSTREAM_TIMEOUT"]
    assert up["effective"]["raw"] == "5m" and up["effective"]["seconds"] == 300.0
    assert up["effective"]["layer"] == "layer" and up["effective"]["path"].endswith("deploy/.env")
    assert [(lay["raw"], lay["wins"]) for lay in up["layers"]] == [("20s", False), ("5m", True)]
    assert [(d["seconds"], d["raw"], d["via"]) for d in up["defaults"]] == [(30.0, "30s", "helper lookupDuration")]
    assert up["documented"][0]["path"].endswith(".env.example") and up["read"] is True
    render = inv["RELAY_RENDER_TIMEOUT"]
    assert render["effective"]["profile"] == "production" and render["effective"]["seconds"] == 150.0
    assert sorted((p["profile"], p["raw"]) for p in render["profiles"]) == [("production", "150"), ("staging", "7200")]
    grace = inv["RELAY_GRACE"]  # milliseconds, as the consuming code says
    assert grace["effective"]["seconds"] == 5.0 and [d["seconds"] for d in grace["defaults"]] == [0.5]


def test_config_keys_of_loaded_files_and_unread_flags():
    inv = analyse("da501/platform").knob_inventory()
    keys = {e["name"]: e for e in inv if e["kind"] == "config"}
    assert keys["stages.probe.deadline"]["read"] is True
    assert keys["stages.encode.stall_timeout"]["read"] is False
    assert keys["stages.encode.stall_timeout"]["effective"]["seconds"] == 300.0
    assert not any("k8s" in e["node"] for e in inv)
    env = {e["name"]: e for e in inv if e["kind"] == "env"}
    assert env["XCODE_SEGMENT_LEASE"]["read"] is False
    assert env["XCODE_PROBE_TIMEOUT"]["defaults"][0]["via"] == "struct tag"
    # two helper levels (settingDuration -> setting -> os.Getenv(envPrefix + key))
    thumbs = env["XCODE_THUMBNAIL_TIMEOUT"]
    assert [(r["path"].rsplit("/", 1)[-1], r["line"], r["via"]) for r in thumbs["reads"]] == [
        ("thumbs.go", 22, "helper settingDuration")]
    assert [(d["seconds"], d["raw"]) for d in thumbs["defaults"]] == [(10.0, "10s")]


def test_inventory_reaches_timeout_sites_and_validates_against_the_schema(tmp_path, monkeypatch):
    monkeypatch.chdir(FIXTURES)
    out = CliRunner().invoke(app, ["check", "--no-cache", "--format", "json", "--exit-zero", "demo"])
    data = json.loads(out.stdout)
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    model = next(e for e in data["inventory"] if e["name"] == "MODEL_TIMEOUT")
    assert model["effective"]["seconds"] == 1800.0
    assert model["sites"], "MODEL_TIMEOUT feeds the model client's deadline"
    assert all(s["role"] for s in model["sites"])


def test_inventory_of_every_knob_fixture_validates(monkeypatch):
    monkeypatch.chdir(FIXTURES)
    schema = json.loads(SCHEMA.read_text())
    for tree in ("da501/platform", "da501/viper_go", "da502/layered", "da502/goyaml"):
        out = CliRunner().invoke(app, ["check", "--no-cache", "--format", "json", "--exit-zero", tree])
        data = json.loads(out.stdout)
        jsonschema.validate(data, schema)
        assert data["inventory"], tree
