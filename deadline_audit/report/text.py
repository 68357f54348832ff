"""`--format text`: one block per finding, grouped by file (SPEC §5 "Text output").

    path:line:col  DA101 shadowed-lease  error
      message
        198 │ previous line
      > 199 │ the line
      flow  MODEL_TIMEOUT  .env:38 = 30m · config/.env:1 = 30m (wins) · default 120 s (client.go:67)
            → models.Config.Timeout (client.go:12) → …
      fix   what to do
      related  path:line:col  message

Colours and hyperlinks only when `color` is true (the CLI passes "stdout is a terminal");
otherwise plain text without escape codes. Lines are never wrapped.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.text import Text

from deadline_audit.findings import AnalysisResult, Finding, FlowStep, Location
from deadline_audit.report.humanize import format_seconds, plural

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _loc_text(loc: Location) -> str:
    return f"{loc.path}:{loc.line}:{loc.column}"


def _short(loc: Location) -> str:
    return f"{loc.path}:{loc.line}"


def _step_values(step: FlowStep) -> list[str]:
    parts = []
    for layer in step.layers:
        raw = layer.raw or format_seconds(layer.value_seconds)
        tag = f" [{layer.profile}]" if layer.profile else ""
        parts.append(f"{layer.path}:{layer.line} = {raw}{tag}{' (wins)' if layer.wins else ''}")
    if not step.layers and step.value_seconds is not None:
        parts.append(format_seconds(step.value_seconds))
    if step.default_seconds is not None:
        where = f" ({_short(step.default_location)})" if step.default_location else ""
        parts.append(f"default {format_seconds(step.default_seconds)}{where}")
    return parts


def flow_lines(flow: list[FlowStep]) -> list[str]:
    """The flow block's lines (without the leading `flow  ` / indentation)."""
    out = []
    for i, step in enumerate(flow):
        text = step.label or step.node
        if i:
            text = f"→ {text}"
            if step.transform:
                text += f" [{step.transform}]"
        values = _step_values(step)
        if values:
            text += "  " + " · ".join(values)
        if step.location is not None and not step.layers:
            text += f" ({_short(step.location)})"
        out.append(text)
    return out


def _snippet(loc: Location, read_lines: Callable[[str], list[str]]) -> list[tuple[bool, int, str]]:
    try:
        lines = read_lines(loc.path)
    except OSError:
        return []
    if not 1 <= loc.line <= len(lines):
        return []
    first = max(1, loc.line - 1)
    return [(n == loc.line, n, lines[n - 1].expandtabs(4).rstrip()) for n in range(first, loc.line + 1)]


def _link(path: str) -> str:
    return "file://" + str((Path.cwd() / path).resolve())


def finding_header(f: Finding, color: bool = False) -> Text:
    t = Text()
    t.append(_loc_text(f.location), style=f"bold link {_link(f.location.path)}" if color else "")
    t.append("  ")
    t.append(f.rule_id, style="bold" if color else "")
    t.append(f" {f.rule}  ")
    t.append(f.severity, style=SEVERITY_STYLE.get(f.severity, "") if color else "")
    return t


def finding_block(f: Finding, read_lines: Callable[[str], list[str]], color: bool = False) -> list[Text]:
    dim = "dim" if color else ""
    lines = [finding_header(f, color)]
    for msg_line in f.message.splitlines() or [""]:
        lines.append(Text("  " + msg_line))
    snippet = _snippet(f.location, read_lines)
    if snippet:
        width = len(str(snippet[-1][1]))
        for primary, n, code in snippet:
            t = Text("  > " if primary else "    ", style="bold red" if (primary and color) else "")
            t.append(f"{n:>{width}} │ ", style=dim)
            t.append(code, style="bold" if (primary and color) else "")
            lines.append(t)
    for i, text in enumerate(flow_lines(f.flow)):
        t = Text("  flow  " if i == 0 else "        ", style="bold blue" if color else "")
        t.append(text)
        lines.append(t)
    if f.fix:
        for i, fix_line in enumerate(f.fix.splitlines()):
            t = Text("  fix   " if i == 0 else "        ", style="bold green" if color else "")
            t.append(fix_line)
            lines.append(t)
    for r in f.related:
        t = Text("  related  ", style=dim)
        t.append(_loc_text(r.location), style=f"link {_link(r.location.path)}" if color else "")
        t.append(f"  {r.message}")
        lines.append(t)
    return lines


def summary_lines(result: AnalysisResult) -> list[str]:
    counts = {"error": 0, "warning": 0, "info": 0}
    for f in result.findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    s = result.summary
    n = len(result.findings)
    by_sev = f"{plural(counts['error'], 'error')}, {plural(counts['warning'], 'warning')}, {counts['info']:,} info"
    out = [
        f"Found {plural(n, 'finding')} ({by_sev}) in {plural(s.files_scanned, 'file')}, "
        f"{plural(s.lines_scanned, 'line')}, {s.elapsed_s:.2f} s."
    ]
    extra = []
    if s.suppressed:
        extra.append(f"{s.suppressed:,} suppressed")
    if s.baselined:
        extra.append(f"{s.baselined:,} in the baseline")
    if extra:
        out.append(f"Not shown: {', '.join(extra)}.")
    if result.errors:
        paths = len({e.path for e in result.errors})
        out.append(f"{plural(paths, 'input file')} could not be analysed (listed above).")
    return out


def _error_line(e) -> str:
    where = e.path + (f":{e.line}" if e.line else "") + (f":{e.column}" if e.line and e.column else "")
    return f"{where}: {e.message}"


def render_lines(result: AnalysisResult, *, quiet: bool = False, color: bool = False,
                 read_lines: Callable[[str], list[str]] | None = None) -> list[Text]:
    if read_lines is None:
        from deadline_audit.source_lines import make_line_reader

        read_lines = make_line_reader()
    out: list[Text] = []
    current_path = None
    for f in result.findings:
        if quiet:
            out.append(finding_header(f, color))
            continue
        if out and f.location.path != current_path:
            out.append(Text(""))  # a blank line between files
        current_path = f.location.path
        out.extend(finding_block(f, read_lines, color))
        out.append(Text(""))
    if result.errors:
        if not quiet:
            if out and out[-1].plain:
                out.append(Text(""))
            out.append(Text("errors (inputs not analysed, or only partly):", style="bold red" if color else ""))
        for e in result.errors:
            out.append(Text(("  " if not quiet else "") + _error_line(e)))
        if not quiet:
            out.append(Text(""))
    if not quiet:
        for line in summary_lines(result):
            out.append(Text(line, style="bold" if color else ""))
    return out


def render_text(result: AnalysisResult, *, quiet: bool = False, color: bool = False,
                read_lines: Callable[[str], list[str]] | None = None) -> str:
    lines = render_lines(result, quiet=quiet, color=color, read_lines=read_lines)
    if not color:
        return "".join(t.plain + "\n" for t in lines)
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, color_system="truecolor", soft_wrap=True, width=10_000)
    for t in lines:
        console.print(t, soft_wrap=True, highlight=False)
    return buf.getvalue()


def print_text(result: AnalysisResult, console: Console, *, quiet: bool = False,
               read_lines: Callable[[str], list[str]] | None = None) -> None:
    """Print straight to a rich console (colours and links as the console decides)."""
    color = console.is_terminal and not console.no_color
    for t in render_lines(result, quiet=quiet, color=color, read_lines=read_lines):
        console.print(t, soft_wrap=True, highlight=False)
