"""Every output format, rendered through the real CLI from a test-only rule's findings."""

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from da_cli_support import rule_registry, run_cli, sarif_schema, use_pipeline  # noqa: F401
from deadline_audit.findings import Finding, FlowStep, Layer, Location, Related

import jsonschema  # noqa: E402 - declared in the test extras: a missing one must fail, not skip

CLIENT = """import httpx

TIMEOUT = float(os.getenv("MODEL_TIMEOUT", "120"))
client = httpx.Client(timeout=TIMEOUT)  # a comment, "quoted", 100% sure
"""


def demo_findings():
    env = FlowStep(
        node="env:MODEL_TIMEOUT", label="MODEL_TIMEOUT", value_seconds=1800.0,
        location=Location(".env", 1),
        layers=(Layer(".env", 1, 1800.0, raw="30m", wins=True), Layer("config/.env.prod", 1, 3.6e-6, raw="3600", profile="prod")),
        default_seconds=120.0, default_location=Location("svc/client.py", 3, 11),
    )
    site = FlowStep(node="site:svc/client.py:4:10", label="httpx.Client(timeout=)", value_seconds=1800.0,
                    location=Location("svc/client.py", 4, 10), transform="number")
    return [
        Finding("DA501", "dead-timeout-knob", "warning",
                "MODEL_TIMEOUT is 30 min, which is, well: 100% \"wrong\",\nsecond line",
                Location("svc/client.py", 4, 10, 4, 39),
                related=[Related("lease set here (1800 s)", Location("svc/client.py", 3, 1))],
                flow=[env, site], fix="drop the timeout; bound the call by the lease"),
        Finding("DA501", "dead-timeout-knob", "info", "a second one", Location("ünïcode dir/x.py", 1, 1)),
    ]


@pytest.fixture
def project(tmp_path, monkeypatch, rule_registry):
    (tmp_path / ".git").mkdir()
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / "client.py").write_text(CLIENT, encoding="utf-8")
    (tmp_path / "ünïcode dir").mkdir()
    (tmp_path / "ünïcode dir" / "x.py").write_text("X = 1\n", encoding="utf-8")
    (tmp_path / ".env").write_text("MODEL_TIMEOUT=30m\n", encoding="utf-8")
    (tmp_path / "bad.yaml").write_bytes(b"a: \xff\n")
    monkeypatch.chdir(tmp_path)
    use_pipeline(monkeypatch)
    rule_registry("DA501", demo_findings)
    return tmp_path


def ours(findings):
    return [f for f in findings if f["rule_id"] == "DA501"]


def test_json_matches_schema_and_spec(project):
    result = run_cli("check", ".", "--format", "json", "--no-cache")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    schema = json.loads(resources.files("deadline_audit").joinpath("schemas/findings-v1.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(data, schema)
    assert data["schema_version"] == 1 and data["tool"]["name"] == "deadline-audit"
    first = ours(data["findings"])[0]
    assert first["location"] == {"path": "svc/client.py", "line": 4, "column": 10, "end_line": 4, "end_column": 39}
    assert first["flow"][0]["node"] == "env:MODEL_TIMEOUT"
    assert first["flow"][0]["layers"][0] == {"path": ".env", "line": 1, "value_seconds": 1800.0,
                                              "raw": "30m", "profile": None, "wins": True}
    assert first["flow"][0]["default_seconds"] == 120.0
    assert first["related"][0]["location"]["line"] == 3
    assert re.fullmatch(r"[0-9a-f]{64}", first["fingerprint"])
    assert {"path": "bad.yaml", "line": 1, "column": 4} .items() <= data["errors"][0].items()
    assert data["summary"]["by_rule"]["DA501"] == 2
    assert data["summary"]["findings"] == len(data["findings"])


def test_sarif_validates_against_the_2_1_0_schema(project):
    result = run_cli("check", ".", "--format", "sarif", "--output", "out.sarif", "--no-cache")
    assert result.exit_code == 1, result.output
    sarif = json.loads(Path("out.sarif").read_text(encoding="utf-8"))
    schema = sarif_schema()
    jsonschema.Draft7Validator(schema).validate(sarif) if "draft-07" in schema.get("$schema", "") else jsonschema.validate(sarif, schema)
    run = sarif["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert set(rules) >= {"DA101", "DA501", "DA502"}
    assert rules["DA502"]["defaultConfiguration"]["level"] == "note"
    assert rules["DA101"]["help"]["text"]
    res = [r for r in run["results"] if r["ruleId"] == "DA501"]
    first, second = res
    loc = first["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "svc/client.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 4, "startColumn": 10, "endLine": 4, "endColumn": 39}
    assert first["level"] == "warning" and second["level"] == "note"
    assert second["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "%C3%BCn%C3%AFcode%20dir/x.py"
    assert first["partialFingerprints"]["deadlineAudit/v1"]
    assert first["relatedLocations"][0]["message"]["text"] == "lease set here (1800 s)"
    steps = first["codeFlows"][0]["threadFlows"][0]["locations"]
    assert "MODEL_TIMEOUT = 30 min" in steps[0]["location"]["message"]["text"]
    assert rules[first["ruleId"]] is run["tool"]["driver"]["rules"][first["ruleIndex"]]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "bad.yaml"


def test_github_annotations_are_escaped(project):
    result = run_cli("check", ".", "--format", "github", "--no-cache")
    lines = [l for l in result.stdout.splitlines() if "DA501" in l]
    assert lines[0] == (
        "::warning file=svc/client.py,line=4,col=10,endLine=4,endColumn=39,title=DA501 dead-timeout-knob::"
        "MODEL_TIMEOUT is 30 min, which is, well: 100%25 \"wrong\",%0Asecond line"
        "%0Afix: drop the timeout; bound the call by the lease"
    )
    assert lines[1].startswith("::notice file=ünïcode dir/x.py,line=1,col=1,")
    assert any(l.startswith("::warning file=bad.yaml,line=1,col=4,") for l in result.stdout.splitlines())


def test_text_output_is_plain_with_snippet_flow_and_summary(project):
    result = run_cli("check", ".", "--no-cache")
    out = result.stdout
    assert "\x1b[" not in out
    assert "svc/client.py:4:10  DA501 dead-timeout-knob  warning" in out
    assert "  > 4 │ client = httpx.Client(timeout=TIMEOUT)" in out
    assert "    3 │ TIMEOUT = float(" in out
    assert "  flow  MODEL_TIMEOUT  .env:1 = 30m (wins) · config/.env.prod:1 = 3600 [prod] · default 120 s (svc/client.py:3)" in out
    assert "        → httpx.Client(timeout=) [number]  30 min (svc/client.py:4)" in out
    assert "  fix   drop the timeout; bound the call by the lease" in out
    assert re.search(r"Found \d+ findings \(\d+ errors?, \d+ warnings?, \d+ info\) in \d+ files?, \d+ lines?, [\d.]+ s\.", out)
    assert "bad.yaml:1:4: not valid UTF-8" in out
    assert re.search(r"^\d+ input files? could not be analysed \(listed above\)\.$", out, re.M)


def test_quiet_prints_first_lines_only(project):
    out = run_cli("check", ".", "--quiet", "--no-cache").stdout
    assert "svc/client.py:4:10  DA501 dead-timeout-knob  warning" in out
    assert "  flow  " not in out and not re.search(r"^Found ", out, re.M)


def test_markdown_has_table_and_sections(project):
    result = run_cli("check", ".", "--format", "markdown", "--output", "pr.md", "--no-cache")
    md = Path("pr.md").read_text(encoding="utf-8")
    assert "| Rule | Name | Severity | Findings |" in md
    assert "| DA501 | dead-timeout-knob |" in md
    assert "### 🟠 DA501 dead-timeout-knob — `svc/client.py:4:10`" in md
    assert "**Fix**: drop the timeout" in md
    assert result.stdout == ""


def test_suppressed_findings_are_counted(project):
    client = project / "svc" / "client.py"
    client.write_text(CLIENT.replace("# a comment", "# deadline-audit: ignore[DA501] accepted"), encoding="utf-8")
    data = json.loads(run_cli("check", ".", "--format", "json", "--no-cache").stdout)
    assert [f["location"]["path"] for f in ours(data["findings"])] == ["ünïcode dir/x.py"]
    assert data["summary"]["suppressed"] >= 1
