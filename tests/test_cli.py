import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from da_cli_support import rule_registry, run_cli, use_pipeline  # noqa: F401
from deadline_audit.findings import Finding, Location

ROOT = Path(__file__).resolve().parents[1]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_help_does_not_import_heavy_modules():
    code = (
        "import sys\n"
        "from deadline_audit.cli import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('libcst', 'networkx'))\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), cwd=ROOT)
    assert "Usage" in out.stdout, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "HEAVY=", out.stdout


def test_python_m_works():
    out = subprocess.run([sys.executable, "-m", "deadline_audit", "--version"], capture_output=True, text=True, env=_env())
    assert out.returncode == 0 and out.stdout.startswith("deadline-audit ")


def test_process_exit_codes_and_complete_output(tmp_path):
    """The process leaves without interpreter teardown (cli._leave): exit codes and
    every byte written must be exactly what they were."""
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "deadline_audit", *args], capture_output=True, text=True,
                              env=_env(), cwd=ROOT)

    out = cli("check", "fixtures/demo", "--no-cache", "--sarif-output", str(tmp_path / "r.sarif"))
    assert out.returncode == 1, out.stderr
    assert out.stdout.rstrip().splitlines()[-1].startswith("Found 5 findings")
    assert len(json.loads((tmp_path / "r.sarif").read_text(encoding="utf-8"))["runs"][0]["results"]) == 5
    assert cli("check", "fixtures/demo", "--no-cache", "--exit-zero").returncode == 0
    assert cli("check", "--no-such-option").returncode == 2
    big = cli("check", "fixtures/demo", "--no-cache", "--format", "json")
    assert big.returncode == 1 and len(json.loads(big.stdout)["findings"]) == 5


@pytest.mark.parametrize("command", ["check", "graph", "why", "report", "rules", "explain"])
def test_every_command_help_shows_examples(command):
    result = run_cli(command, "--help")
    assert result.exit_code == 0 and "Examples" in result.output and "deadline-audit " + command in result.output


@pytest.fixture
def project(tmp_path, monkeypatch, rule_registry):
    (tmp_path / "a.py").write_text("A = 1\nB = 2\n", encoding="utf-8")
    (tmp_path / "broken.json").write_bytes(b"\x00\x01")
    monkeypatch.chdir(tmp_path)
    use_pipeline(monkeypatch)
    emitted = []
    rule_registry("DA501", lambda: list(emitted))
    return emitted


def warn(line=1, severity="warning"):
    return Finding("DA501", "dead-timeout-knob", severity, "knob nobody reads", Location("a.py", line, 1))


def test_exit_codes_follow_fail_on(project):
    assert run_cli("check", "--no-cache").exit_code == 0
    project.append(warn(severity="warning"))
    assert run_cli("check", "--no-cache").exit_code == 1  # default: any finding fails
    assert run_cli("check", "--no-cache", "--fail-on", "warning").exit_code == 1
    assert run_cli("check", "--no-cache", "--fail-on", "error").exit_code == 0
    assert run_cli("check", "--no-cache", "--fail-on", "never").exit_code == 0
    assert run_cli("check", "--no-cache", "--exit-zero").exit_code == 0
    assert run_cli("check", "--no-cache", "--ignore", "DA5").exit_code == 0
    assert run_cli("check", "--no-cache", "--select", "DA1,DA2").exit_code == 0


def test_config_fail_on_applies_and_cli_overrides_it(project, tmp_path):
    (tmp_path / "deadline-audit.toml").write_text('fail-on = "error"\n', encoding="utf-8")
    project.append(warn())
    assert run_cli("check", "--no-cache").exit_code == 0
    assert run_cli("check", "--no-cache", "--fail-on", "info").exit_code == 1


def test_unparsable_inputs_only_fail_with_strict(project):
    result = run_cli("check", "--no-cache")
    assert result.exit_code == 0 and "broken.json" in result.output
    assert run_cli("check", "--no-cache", "--strict").exit_code == 1
    assert run_cli("check", "--no-cache", "--strict", "--exit-zero").exit_code == 0


def test_usage_errors_exit_2(project):
    assert run_cli("check", "does-not-exist").exit_code == 2
    assert run_cli("check", "--format", "xml").exit_code == 2
    assert run_cli("check", "--new-from-rev", "HEAD~1").exit_code == 2
    assert run_cli("report", ".", "-o", "review.xml").exit_code == 2  # no format for that suffix
    assert run_cli("why", "a.py").exit_code == 2
    assert run_cli("explain", "DA999").exit_code == 2


def test_baseline_round_trip(project, tmp_path):
    project.extend([warn(1), warn(2)])
    result = run_cli("check", "--no-cache", "--write-baseline", "baseline.json")
    assert result.exit_code == 0
    assert len(json.loads((tmp_path / "baseline.json").read_text())["findings"]) == 2
    result = run_cli("check", "--no-cache", "--baseline", "baseline.json", "--format", "json")
    data = json.loads(result.stdout)
    assert result.exit_code == 0 and data["summary"]["baselined"] == 2 and data["findings"] == []
    (tmp_path / "a.py").write_text("NEW = 0\nA = 1\nB = 2\n", encoding="utf-8")
    project[:] = [warn(1), warn(2), warn(3)]  # line 1 is new, lines 2-3 moved
    data = json.loads(run_cli("check", "--no-cache", "--baseline", "baseline.json", "--format", "json").stdout)
    assert [f["location"]["line"] for f in data["findings"]] == [1]


def test_rules_lists_all_twelve():
    result = run_cli("rules", "--format", "json")
    rows = json.loads(result.stdout)
    assert [r["id"] for r in rows] == ["DA101", "DA102", "DA103", "DA201", "DA202", "DA301", "DA302",
                                       "DA401", "DA402", "DA403", "DA501", "DA502"]
    assert rows[0]["name"] == "shadowed-lease" and rows[-1]["severity"] == "info"
    assert all(isinstance(r["implemented"], bool) for r in rows)
    text = run_cli("rules").stdout
    assert "DA403" in text and "wire-unit-mismatch" in text


def test_explain_prints_the_rule_documentation():
    pytest.importorskip("deadline_audit.rules_doc")
    result = run_cli("explain", "DA101")
    assert result.exit_code == 0, result.output
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert section in result.stdout
    assert run_cli("explain", "shadowed-lease").stdout == result.stdout


def test_a_crashing_check_keeps_the_other_findings_and_exits_2(project, rule_registry):
    project.append(warn())

    def broken():
        raise RuntimeError("boom")

    rule_registry("DA502", broken)
    result = run_cli("check", ".", "--format", "json")
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert [f["rule_id"] for f in data["findings"]] == ["DA501"]
    assert any("internal error in the DA502 check: RuntimeError: boom" in e["message"] for e in data["errors"])
