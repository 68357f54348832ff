"""The per-file fact cache (SPEC §7): a warm run on an unchanged tree parses nothing and
reports the same findings; a changed file is extracted again."""

from __future__ import annotations

import shutil

from analysis_support import FIXTURES
from deadline_audit import pipeline
from deadline_audit.config import load_config


def run(root):
    result = pipeline.analyse([root], load_config([root]), use_cache=True)
    return [(f.rule_id, f.location.path, f.location.line, f.message) for f in result.findings]


def test_warm_run_parses_nothing_and_reports_the_same(tmp_path, monkeypatch):
    root = tmp_path / "demo"
    shutil.copytree(FIXTURES / "demo", root, ignore=shutil.ignore_patterns(".deadline-audit-cache"))
    monkeypatch.chdir(tmp_path)
    cold = run(root)
    assert (root / ".deadline-audit-cache" / "facts").is_dir()

    def no_parsing(job, data, catalog):
        raise AssertionError(f"{job.display} was parsed on a warm run")

    monkeypatch.setattr(pipeline, "_dispatch", no_parsing)
    assert run(root) == cold
    assert sum(f[0] in ("DA101", "DA201") for f in cold) == 4  # 3 DA101 (§1.1) + 1 DA201 (§1.2 legacy handler)
    assert [f[:3] for f in cold if f[0] == "DA502"] == [("DA502", "demo/engine/config/.env", 1)]  # 30m vs 120 s


def test_changed_file_is_extracted_again(tmp_path, monkeypatch):
    root = tmp_path / "demo"
    shutil.copytree(FIXTURES / "demo", root, ignore=shutil.ignore_patterns(".deadline-audit-cache"))
    monkeypatch.chdir(tmp_path)
    run(root)
    (root / "engine" / "config" / ".env").write_text("MODEL_TIMEOUT=4h\n", encoding="utf-8")
    parsed = []
    real = pipeline._dispatch

    def counting(job, data, catalog):
        parsed.append(job.display)
        return real(job, data, catalog)

    monkeypatch.setattr(pipeline, "_dispatch", counting)
    findings = run(root)
    assert parsed == ["demo/engine/config/.env"]
    assert all("4 h" in message or "4h" in message or "240 min" in message or "14400" in message
               for rule, path, line, message in findings if path.endswith(".go") and rule == "DA101")


def test_no_cache_writes_nothing(tmp_path, monkeypatch):
    root = tmp_path / "demo"
    shutil.copytree(FIXTURES / "demo", root, ignore=shutil.ignore_patterns(".deadline-audit-cache"))
    monkeypatch.chdir(tmp_path)
    pipeline.analyse([root], load_config([root]), use_cache=False)
    assert not (root / ".deadline-audit-cache").exists()
