"""The review as Markdown (a wiki page or a PR description): the HTML form's sections,
as tables, with the graph as Mermaid source."""

from __future__ import annotations

from deadline_audit import __version__
from deadline_audit.report.humanize import plural
from deadline_audit.report.review_model import (Markup, Review, count_text, flow_step_text, flow_worth_showing,
                                                seconds_text, settings_text, span_text, value_text)
from deadline_audit.report.review_graph import Picture

ICONS = {"error": "🔴", "warning": "🟠", "info": "🔵"}
MARKUP = Markup(text=str, code=lambda t: f"`{t}`", strong=str, aside=str)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    """Inline code that may itself hold backticks (a Go struct tag)."""
    ticks = "`"
    while ticks in text:
        ticks += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _fence(code: str) -> str:
    ticks = "```"
    while ticks in code:
        ticks += "`"
    return ticks


def render_markdown(review: Review, pictures: list[Picture]) -> str:
    out = [f"# {review.title}", "",
           f"deadline-audit {__version__} · {plural(review.files_scanned, 'file')}, "
           f"{plural(review.lines_scanned, 'line')} · {review.elapsed_s:g} s", ""]
    out += _summary(review) + _inventory(review) + _supervision(review) + _findings(review) + _graph(pictures)
    return "\n".join(out).rstrip("\n") + "\n"


def _summary(r: Review) -> list[str]:
    sev = r.by_severity
    out = ["## Summary", "",
           f"{plural(len(r.findings), 'finding')} ({sev['error']} errors, {sev['warning']} warnings, {sev['info']} info), "
           f"{plural(len(r.inventory), 'timeout site')}, {plural(len(r.leases), 'lease')}, "
           f"{plural(len(r.components), 'component')}.", ""]
    if r.rules:
        out += ["| Rule | Name | Severity | Findings |", "|---|---|---|---:|"]
        out += [f"| {rule.id} | {_cell(rule.name)} | {ICONS.get(rule.severity, '')} {rule.severity} "
                f"| {rule.findings if rule.checked else 'not selected'} |" for rule in r.rules]
        out.append("")
    if r.suppressed:
        out += [f"{plural(r.suppressed, 'finding')} suppressed inline or by per-file-ignores.", ""]
    out += ["### Components", "", "| Component | Files | Lines | Timeout sites |", "|---|---:|---:|---:|"]
    out += [f"| {_cell(c)} | {v['files']:,} | {v['lines']:,} | {v['sites']:,} |" for c, v in r.components.items()]
    out += ["", "### Env layers and profiles", ""]
    if r.env_files:
        layers = [e for e in r.env_files if e.role == "layer"]
        out += ["Later layers win.", "", "| File | Role |", "|---|---|"]
        for e in r.env_files:
            role = {"layer": f"layer {layers.index(e) + 1} of {len(layers)}" if e in layers else "layer",
                    "profile": f"profile {e.profile}", "doc": "documentation only",
                    "unlisted": "not a configured layer"}.get(e.role, e.role)
            out.append(f"| `{_cell(e.path)}` | {role} |")
    else:
        out.append("No env files: every value is the compiled default.")
    out += ["", "### Input errors", ""]
    if r.errors:
        out += [f"- `{e.path}{':' + str(e.line) if e.line else ''}`: {_cell(e.message)}" for e in r.errors]
    else:
        out.append("None: every input was analysed.")
    out.append("")
    return out


def _inventory(r: Review) -> list[str]:
    out = ["## Timeout inventory", "",
           "Detectors (leases, heartbeats, renewals, the timers of a lease helper) notice failure; allocators (transport, read and "
           "phase timeouts, context and server deadlines, ceilings, fallbacks) decide how long work may run.", ""]
    if r.test_files_unread:
        out += [f"{plural(r.test_files_unread, 'test file')} read for the names they spell only "
                "(`include-tests = true` analyses test code too).", ""]
    if not r.inventory:
        return out + ["No timeout site found.", ""]
    out += ["| Site | Component | Role | Class | Effective | Compiled default | Knobs: where set | Winning layer | Source chain | Findings |",
            "|---|---|---|---|---:|---:|---|---|---|---|"]
    for row in r.inventory:
        env, chains = [], []
        for s in row.sources:
            if s.knob is not None:
                env.append(f"{s.knob.title}: {settings_text(s.knob, MARKUP)}")
            chains.append(" → ".join(s.chain))
        out.append(
            f"| **{_cell(row.label)}** `{row.path}:{row.line}` | {_cell(row.component)} | {row.role} | {row.classification} "
            f"| {value_text(row.effective_seconds, row.implicit)} | {value_text(row.default_seconds, row.implicit)} "
            f"| {_cell('<br>'.join(env)) or '—'} | {_cell(row.winning)} | {_cell('<br>'.join(chains)) or '—'} "
            f"| {' '.join(row.findings)} |")
    out.append("")
    if r.knobs:
        out += ["### Timeout knobs", "", "Every env variable and config key that feeds a timeout site or is named like a "
                "timeout: its value in force, where each layer and profile sets it (later layers win; where none sets "
                "it, the compiled default applies), where the code reads it and the sites it reaches. The same data as "
                "the `inventory` of `check --format json`.", "",
                "| Knob | Effective | Winning layer | Set in (layers, profiles, config) | Read at, compiled default "
                "| Timeout sites reached |", "|---|---:|---|---|---|---|"]
        for k in r.knobs:
            sets = "<br>".join(f"`{where}` = {raw}" + (" (wins)" if wins else "") for where, raw, wins in k.settings)
            reads = "<br>".join(f"`{at}`" + (f" default {seconds_text(sec)}" if has else "")
                                for at, sec, has in k.read_defaults)
            sites = "<br>".join([f"{s.get('label') or '?'} `{s['path']}:{s['line']}`" for s in k.sites]
                                + [f"{label} `{at}` ({rid} flow)" for rid, label, at in k.finding_sites])
            out.append(f"| {_cell(k.title)} | {_cell(k.effective_text)} | {_cell(k.winning)} | {_cell(sets) or 'not set'} "
                       f"| {_cell(reads) or k.unread_text} | {_cell(sites) or '—'} |")
        out.append("")
    return out


def _supervision(r: Review) -> list[str]:
    out = ["## Supervision arithmetic", ""]
    if not r.leases:
        return out + ["No operation lease found: nothing supervises an operation with a renewable timer.", ""]
    out += ["L: the lease's TTL · R: renewals allowed · C: the hard cap the supervisor enforces · T: the smallest hard "
            "deadline on the supervised path · A: attempts. One attempt lives at most min(T, C).", "",
            "| Lease | L | R | C | T | A | At most |", "|---|---:|---:|---:|---:|---:|---:|"]
    for b in r.leases:
        out.append(
            f"| **{_cell(b.name)}** `{b.location.path}:{b.location.line}` ({_cell(b.helper)} → {_cell(b.operation)}) "
            f"| {span_text(b.ttl)} | {count_text(b.renewals)} ({_cell(b.renewals_how)}) | {span_text(b.cap)} ({_cell(b.cap_how)}) "
            f"| {span_text(b.deadline)} ({_cell(b.deadline_how)}) | {count_text(b.attempts_inside)} inside ({_cell(b.attempts_inside_how)})"
            + (f"; {_cell(b.outside)}" if b.outside else "") + f" | **{span_text(b.worst)}** |")
    out.append("")
    out += [f"- **{b.name}** (`{b.location.path}:{b.location.line}`): {b.sentence}" for b in r.leases]
    out.append("")
    return out


def _findings(r: Review) -> list[str]:
    out = ["## Findings", ""]
    if not r.findings:
        return out + ["No findings.", ""]
    for rule, items in r.findings_of:
        out += [f"### {ICONS.get(rule.severity, '')} {rule.id} {rule.name} ({plural(len(items), 'finding')})", ""]
        if rule.summary:
            out += [rule.summary, ""]
        if items[0][1].use_instead:
            out += [f"<details><summary>Use instead ({rule.id} documentation)</summary>", "",
                    _demote(items[0][1].use_instead), "", "</details>", ""]
        for _, rf in items:
            out += _finding(rf)
    return out


def _finding(rf) -> list[str]:
    f = rf.finding
    loc = f.location
    out = [f"#### {f.rule_id} — `{loc.path}:{loc.line}:{loc.column}`", "", f"**{f.severity}**: {f.message}", ""]
    if rf.snippet:
        width = len(str(rf.snippet[-1][1]))
        body = "\n".join(f"{'>' if hit else ' '} {n:>{width}} │ {text}" for hit, n, text in rf.snippet)
        fence = _fence(body)
        out += [fence, body, fence, ""]
    if flow_worth_showing(f):
        out += ["**Flow**", ""] + [f"1. {flow_step_text(step, MARKUP)}" for step in f.flow] + [""]
    if f.related:
        codes = rf.related_code or [""] * len(f.related)
        out += ["**Related**", ""] + [f"- `{x.location.path}:{x.location.line}` {x.message}" + (f": {_code(code)}" if code else "")
                                      for x, code in zip(f.related, codes)] + [""]
    if f.fix:
        out += [f"**Fix**: {f.fix}", ""]
    return out


def _demote(text: str) -> str:
    """Headings inside a rule's documentation sit below the rule's heading and its findings'
    (`###`, `####`); lines in fenced code (a Python comment) are left alone."""
    lines = text.splitlines()
    headings, fence = [], None
    for i, line in enumerate(lines):
        marker = line.lstrip()[:3]
        if marker in ("```", "~~~") and (fence is None or marker == fence):
            fence = None if fence else marker
        elif fence is None and line.startswith("#"):
            headings.append(i)
    if headings:
        shift = 5 - min(len(lines[i]) - len(lines[i].lstrip("#")) for i in headings)
        for i in headings:
            level = len(lines[i]) - len(lines[i].lstrip("#"))
            lines[i] = "#" * max(1, min(6, level + shift)) + lines[i].lstrip("#")
    return "\n".join(lines)


def _graph(pictures: list[Picture]) -> list[str]:
    out = ["## Timeout-flow graph", ""]
    if not pictures:
        return out + ["The graph has no flows to draw.", ""]
    for p in pictures:
        out += [f"### {p.component}", "", f"{plural(p.total_nodes, 'node')}" + (f", {p.shown_nodes:,} shown." if p.cut else "."), ""]
        out += [note for note in p.notes if "dot" not in note] + ([""] if p.notes else [])
        if p.full_svg_name:
            out += [f"[The full graph of {p.component} (SVG)]({p.full_svg_name})", ""]
        if p.shown_nodes:
            out += ["```mermaid", p.mermaid.rstrip("\n"), "```", ""]
    return out
