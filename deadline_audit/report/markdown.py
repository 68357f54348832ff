"""`--format markdown`: a pull-request comment — a summary table, then one section per
finding with its snippet, flow and fix."""

from __future__ import annotations

from collections.abc import Callable

from deadline_audit.findings import AnalysisResult, Finding
from deadline_audit.report.humanize import plural
from deadline_audit.report.text import flow_lines

ICONS = {"error": "🔴", "warning": "🟠", "info": "🔵"}


def _escape_cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _fence(code: str) -> str:
    ticks = "```"
    while ticks in code:
        ticks += "`"
    return ticks


def _section(f: Finding, read_lines: Callable[[str], list[str]]) -> list[str]:
    loc = f.location
    out = [f"### {ICONS.get(f.severity, '')} {f.rule_id} {f.rule} — `{loc.path}:{loc.line}:{loc.column}`", ""]
    out += [f"**{f.severity}**: {f.message}", ""]
    try:
        lines = read_lines(loc.path)
    except OSError:
        lines = []
    if 1 <= loc.line <= len(lines):
        first = max(1, loc.line - 1)
        width = len(str(loc.line))
        body = "\n".join(
            f"{'>' if n == loc.line else ' '} {n:>{width}} │ {lines[n - 1].rstrip()}" for n in range(first, loc.line + 1)
        )
        fence = _fence(body)
        out += [fence, body, fence, ""]
    flow = flow_lines(f.flow)
    if flow:
        out.append("**Flow**")
        out.append("")
        out += [f"- {line.removeprefix('→ ')}" for line in flow]
        out.append("")
    if f.related:
        out.append("**Related**")
        out.append("")
        out += [f"- `{r.location.path}:{r.location.line}` {r.message}" for r in f.related]
        out.append("")
    if f.fix:
        out += [f"**Fix**: {f.fix}", ""]
    return out


def render_markdown(result: AnalysisResult, *, read_lines: Callable[[str], list[str]] | None = None) -> str:
    if read_lines is None:
        from deadline_audit.source_lines import make_line_reader

        read_lines = make_line_reader()
    s = result.summary
    out = ["## deadline-audit", ""]
    n = len(result.findings)
    if n == 0:
        out.append(f"No findings in {plural(s.files_scanned, 'file')} ({plural(s.lines_scanned, 'line')}).")
        out.append("")
    else:
        counts: dict[tuple[str, str, str], int] = {}
        for f in result.findings:
            key = (f.rule_id, f.rule, f.severity)
            counts[key] = counts.get(key, 0) + 1
        out.append(f"Found {plural(n, 'finding')} in {plural(s.files_scanned, 'file')} ({plural(s.lines_scanned, 'line')}).")
        out.append("")
        out.append("| Rule | Name | Severity | Findings |")
        out.append("|---|---|---|---:|")
        for (rid, name, sev), c in sorted(counts.items()):
            out.append(f"| {rid} | {_escape_cell(name)} | {ICONS.get(sev, '')} {sev} | {c} |")
        out.append("")
    if s.suppressed or s.baselined:
        out.append(f"Not shown: {s.suppressed} suppressed, {s.baselined} in the baseline.")
        out.append("")
    for f in result.findings:
        out += _section(f, read_lines)
    if result.errors:
        out.append("<details><summary>Inputs not analysed ({})</summary>".format(len(result.errors)))
        out.append("")
        for e in result.errors:
            where = e.path + (f":{e.line}" if e.line else "")
            out.append(f"- `{where}`: {_escape_cell(e.message)}")
        out.append("")
        out.append("</details>")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
