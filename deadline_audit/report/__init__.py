"""Reporters: each renders an `AnalysisResult` (findings.py) to a string.

Kept import-light: the CLI imports a reporter only for the format it prints.
"""

from __future__ import annotations

from collections.abc import Callable

from deadline_audit.findings import AnalysisResult

FORMATS = ("text", "json", "sarif", "github", "markdown")


def render(
    result: AnalysisResult,
    fmt: str,
    *,
    quiet: bool = False,
    color: bool = False,
    read_lines: Callable[[str], list[str]] | None = None,
) -> str:
    """Render `result` in one of FORMATS (text without colour unless `color`)."""
    if fmt == "text":
        from deadline_audit.report.text import render_text

        return render_text(result, quiet=quiet, color=color, read_lines=read_lines)
    if fmt == "json":
        from deadline_audit.report.json_report import render_json

        return render_json(result)
    if fmt == "sarif":
        from deadline_audit.report.sarif import render_sarif

        return render_sarif(result)
    if fmt == "github":
        from deadline_audit.report.github import render_github

        return render_github(result)
    if fmt == "markdown":
        from deadline_audit.report.markdown import render_markdown

        return render_markdown(result, read_lines=read_lines)
    raise ValueError(f"unknown output format {fmt!r} (expected one of {', '.join(FORMATS)})")
