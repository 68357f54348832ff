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


def rule_findings(result, rule_id: str) -> list[tuple[str, str, int]]:
    """Sorted (rule, path below fixtures/, line) of one rule's findings."""
    return sorted(where(f) for f in result.findings if f.rule_id == rule_id)


def finding_at(result, rule_id: str, path_suffix: str, line: int | None = None):
    """The rule's finding in the file ending with `path_suffix` (at `line` when given)."""
    return next(f for f in result.findings
                if f.rule_id == rule_id and f.location.path.endswith(path_suffix)
                and (line is None or f.location.line == line))
