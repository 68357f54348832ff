"""From what the checks emitted to what the user sees (the last pipeline step).

`finalize` applies, in order: fingerprints (computed on everything the checks emitted, so
they do not depend on configuration), rule selection (select/ignore), severity overrides,
per-file-ignores and inline suppressions (both counted as suppressed), de-duplication and
a deterministic order (path, line, column, rule).
"""

from __future__ import annotations

from collections.abc import Callable

import pathspec

from deadline_audit import testfiles
from deadline_audit.config import Config, best_match, rule_enabled
from deadline_audit.fingerprints import assign_fingerprints, fingerprint_path
from deadline_audit.findings import Finding
from deadline_audit.source_lines import make_line_reader
from deadline_audit.suppressions import is_suppressed

__all__ = ["finalize", "make_line_reader", "severity_for", "sort_key"]


def sort_key(f: Finding) -> tuple:
    return (f.location.path, f.location.line, f.location.column, f.rule_id, f.message)


def severity_for(rule_id: str, default: str, overrides: dict[str, str]) -> str:
    """The most specific `severity` entry matching the rule wins."""
    best, level = -1, default
    for selector, sev in overrides.items():
        score = best_match([selector], rule_id)
        if score > best:
            best, level = score, sev
    return level


class _PerFileIgnores:
    def __init__(self, config: Config) -> None:
        self.root = config.root
        self.entries = [
            (pathspec.GitIgnoreSpec.from_lines([glob]), rules) for glob, rules in config.per_file_ignores.items()
        ]

    def ignores(self, f: Finding) -> bool:
        if not self.entries:
            return False
        rel = fingerprint_path(f.location.path, self.root)
        for spec, rules in self.entries:
            if spec.match_file(rel) and best_match(rules, f.rule_id) >= 0:
                return True
        return False


def finalize(
    findings: list[Finding], config: Config, read_lines: Callable[[str], list[str]] | None = None
) -> tuple[list[Finding], int]:
    """The findings to report, and how many were suppressed (inline or per-file)."""
    read_lines = read_lines or make_line_reader()
    assign_fingerprints(findings, read_lines, config.root)
    per_file = _PerFileIgnores(config)
    tests = None if config.include_tests else testfiles.for_config(config)
    kept: list[Finding] = []
    suppressed = 0
    seen: set[tuple] = set()
    for f in findings:
        if not rule_enabled(f.rule_id, config.select, config.ignore):
            continue
        f.severity = severity_for(f.rule_id, f.severity, config.severity)
        if per_file.ignores(f) or (tests is not None and tests.holds(f.location.path)):
            suppressed += 1
            continue
        try:
            lines = read_lines(f.location.path)
        except OSError:
            lines = []
        if is_suppressed(f.rule_id, f.location.line, lines):
            suppressed += 1
            continue
        key = (f.rule_id, f.location, f.message)
        if key in seen:
            continue
        seen.add(key)
        kept.append(f)
    kept.sort(key=sort_key)
    return kept, suppressed
