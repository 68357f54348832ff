"""Run the real pipeline on a fixture tree and read its findings as plain tuples."""

from __future__ import annotations

from pathlib import Path

from deadline_audit import pipeline
from deadline_audit.config import load_config

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def analyse(rel: str, **kwargs):
    root = FIXTURES / rel
    return pipeline.analyse([root], load_config([root]), use_cache=False, **kwargs)


def build(rel: str):
    root = FIXTURES / rel
    return pipeline.build([root], load_config([root]), use_cache=False)


def where(finding) -> tuple[str, str, int]:
    """(rule, path below fixtures/, line)."""
    path = Path(finding.location.path).resolve().relative_to(FIXTURES).as_posix()
    return finding.rule_id, path, finding.location.line


def rel(location) -> tuple[str, int]:
    return Path(location.path).resolve().relative_to(FIXTURES).as_posix(), location.line
