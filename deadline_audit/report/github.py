"""`--format github`: workflow commands that GitHub Actions shows as annotations.

    ::error file=a.go,line=3,col=5,endLine=3,endColumn=9,title=DA101 shadowed-lease::message

Escaping follows the Actions toolkit (`@actions/core` command.ts): in the message `%`,
CR and LF are percent-encoded; in properties `:` and `,` are too. info -> `notice`.
"""

from __future__ import annotations

from deadline_audit.findings import AnalysisResult, Finding

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, props: dict[str, object], message: str) -> str:
    rendered = ",".join(f"{k}={escape_property(str(v))}" for k, v in props.items() if v is not None)
    return f"::{kind} {rendered}::{escape_data(message)}"


def finding_line(f: Finding) -> str:
    loc = f.location
    props = {
        "file": loc.path,
        "line": loc.line,
        "col": loc.column,
        "endLine": loc.end_line,
        "endColumn": loc.end_column if loc.end_line in (None, loc.line) else None,
        "title": f"{f.rule_id} {f.rule}",
    }
    message = f.message + (f"\nfix: {f.fix}" if f.fix else "")
    return _command(COMMANDS.get(f.severity, "warning"), props, message)


def render_github(result: AnalysisResult) -> str:
    lines = [finding_line(f) for f in result.findings]
    for e in result.errors:
        props = {"file": e.path, "line": e.line, "col": e.column if e.line else None,
                 "title": "deadline-audit: input not analysed"}
        lines.append(_command("warning", props, e.message))
    return "".join(line + "\n" for line in lines)
