"""Test support: run the real CLI in-process and register a test-only rule.

The reporters and the CLI are exercised through the real pipeline; a test-only rule
registered here emits findings built in the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from deadline_audit import checks


def use_pipeline(monkeypatch) -> None:
    """The real pipeline runs; kept as a hook so tests state that they depend on it."""
    from deadline_audit import pipeline

    assert hasattr(pipeline, "analyse")


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


def sarif_schema() -> dict:
    """The SARIF 2.1.0 schema, kept beside the tests (a copy of `shared/schemas/`), so a
    clean clone anywhere validates its SARIF instead of skipping."""
    return json.loads((Path(__file__).resolve().parent / "schemas" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
