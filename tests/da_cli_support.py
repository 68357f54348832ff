"""Test support: run the real CLI in-process and register a test-only rule.

`use_pipeline(monkeypatch)` keeps the real `pipeline.analyse` when the whole pipeline is
importable; while parts of it (graph.py) are still missing it substitutes a minimal
stand-in built from the real discovery, check registry and postprocess, so the reporters
and the CLI are exercised either way.
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from deadline_audit import checks
from deadline_audit.findings import AnalysisResult, Summary


def _standin_analyse(paths, config, *, jobs=1, use_cache=True, progress=False):
    from deadline_audit.discovery import discover
    from deadline_audit.postprocess import finalize, make_line_reader

    started = time.perf_counter()
    files, errors = discover(paths, config)
    raw = []
    for rule_id in sorted(checks._extra):
        raw.extend(checks.get_check(rule_id)(None, {}))
    findings, suppressed = finalize(raw, config, make_line_reader())
    summary = Summary(files_scanned=len(files), lines_scanned=sum(f.lines for f in files),
                      findings=len(findings), suppressed=suppressed,
                      elapsed_s=time.perf_counter() - started)
    return AnalysisResult(findings=findings, errors=errors, summary=summary)


def use_pipeline(monkeypatch) -> None:
    from deadline_audit import pipeline

    try:
        importlib.import_module("deadline_audit.graph")
        for rule_id in checks._BUILTIN:
            checks.get_check(rule_id)
        if hasattr(pipeline, "analyse"):
            return
    except ImportError:
        pass  # the pipeline is not complete yet in this checkout
    monkeypatch.setattr(pipeline, "analyse", _standin_analyse, raising=False)


@pytest.fixture
def rule_registry():
    """`register(rule_id, make_findings)`: a test-only check emitting `make_findings()`."""
    registered = []

    def register(rule_id, make_findings):
        checks.register_check(rule_id, lambda graph, options: make_findings())
        registered.append(rule_id)

    yield register
    for rule_id in registered:
        checks.unregister_check(rule_id)


def run_cli(*args: str, cwd: Path | None = None):
    from deadline_audit.cli import app

    runner = CliRunner()
    return runner.invoke(app, list(args), catch_exceptions=False)


def shared_dir() -> Path | None:
    """/work/shared in development; `../shared` beside the clone in CI."""
    here = Path(__file__).resolve()
    candidates = [here.parents[2] / "shared"] + [p / "shared" for p in here.parents]
    for c in candidates:
        if (c / "schemas" / "sarif-schema-2.1.0.json").is_file():
            return c
    return None
