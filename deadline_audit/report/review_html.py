"""The review as one self-contained HTML file: inline CSS and SVG, no network, readable
without JavaScript; a few lines of inline JS only sort and filter the inventory."""

from __future__ import annotations

import re
from html import escape

from deadline_audit import __version__
from deadline_audit.report.humanize import plural
from deadline_audit.report.review_model import (Markup, Review, count_text, flow_step_text, flow_worth_showing,
                                                seconds_text, settings_text, span_text, value_text)
from deadline_audit.report.review_graph import ROLE_COLOURS, Picture
from deadline_audit.report.review_leases import LeaseBudget

SEVERITY_CLASS = {"error": "sev-error", "warning": "sev-warning", "info": "sev-info"}
MARKUP = Markup(text=escape, code=lambda t: f"<code>{escape(t)}</code>", strong=lambda t: f"<b>{escape(t)}</b>",
                aside=lambda t: f"<em>{escape(t)}</em>" if t == "(wins)" else f"<small>{escape(t)}</small>")


def render_html(review: Review, pictures: list[Picture]) -> str:
    body = [
        f"<header><h1>{escape(review.title)}</h1>",
        f"<p class=meta>deadline-audit {escape(__version__)} · {plural(review.files_scanned, 'file')}, "
        f"{plural(review.lines_scanned, 'line')} · {review.elapsed_s:g} s</p>",
        "<nav><a href='#summary'>Summary</a><a href='#inventory'>Timeout inventory</a>"
        "<a href='#supervision'>Supervision arithmetic</a><a href='#findings'>Findings</a>"
        "<a href='#graph'>Timeout-flow graph</a></nav></header><main>",
        _summary(review),
        _inventory(review),
        _supervision(review.leases),
        _findings(review),
        _graph(pictures),
        "</main>",
    ]
    return (
        "<!DOCTYPE html>\n<html lang=en>\n<head>\n<meta charset=utf-8>\n"
        "<meta name=viewport content='width=device-width, initial-scale=1'>\n"
        f"<title>{escape(review.title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body) + f"\n<script>{JS}</script>\n</body>\n</html>\n"
    )


def _loc(path: str, line: int, column: int | None = None) -> str:
    where = f"{path}:{line}" + (f":{column}" if column else "")
    return f"<code class=loc>{escape(where)}</code>"


def _table(head: list[str], rows: list[str], *, cls: str = "", attrs: str = "") -> str:
    ths = "".join(f"<th>{h}</th>" for h in head)
    return f"<table class='{cls}' {attrs}><thead><tr>{ths}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


# -- summary -------------------------------------------------------------------------

def _summary(r: Review) -> str:
    sev = r.by_severity
    cards = "".join(
        f"<div class='card {SEVERITY_CLASS[s]}'><b>{n}</b><span>{s}{'s' if n != 1 and s != 'info' else ''}</span></div>"
        for s, n in sev.items())
    cards += (f"<div class=card><b>{len(r.inventory)}</b><span>timeout sites</span></div>"
              f"<div class=card><b>{len(r.leases)}</b><span>leases</span></div>"
              f"<div class=card><b>{len(r.components)}</b><span>components</span></div>")
    out = ["<section id=summary><h2>Summary</h2>", f"<div class=cards>{cards}</div>", "<div class=grid><div>"]
    rows = []
    for rule in r.rules:
        count = (f"{rule.findings:,}" if rule.checked else "<small>not selected</small>")
        rid = f"<a href='#rule-{rule.id}'>{rule.id}</a>" if rule.findings else rule.id
        rows.append(f"<tr class='{'' if rule.findings else 'quiet'}' title='{escape(rule.summary)}'><td>{rid}</td>"
                    f"<td>{escape(rule.name)}</td><td><span class='badge {SEVERITY_CLASS.get(rule.severity, '')}'>"
                    f"{escape(rule.severity)}</span></td><td class=num>{count}</td></tr>")
    out.append("<h3>Findings by rule</h3>" + (_table(["Rule", "Name", "Severity", "Findings"], rows, cls="by-rule")
                                               if rows else "<p>No findings.</p>"))
    if r.suppressed:
        out.append(f"<p>{plural(r.suppressed, 'finding')} suppressed inline or by per-file-ignores.</p>")
    out.append("</div><div>")
    rows = [f"<tr><td>{escape(c)}</td><td class=num>{v['files']:,}</td><td class=num>{v['lines']:,}</td>"
            f"<td class=num>{v['sites']:,}</td></tr>" for c, v in r.components.items()]
    out.append("<h3>Components</h3>" + _table(["Component", "Files", "Lines", "Timeout sites"], rows, cls="components"))
    out.append("</div><div>")
    out.append("<h3>Env layers and profiles</h3>")
    if r.env_files:
        rows = []
        layers = [e for e in r.env_files if e.role == "layer"]
        for e in r.env_files:
            role = {"layer": f"layer {layers.index(e) + 1} of {len(layers)}" if e in layers else "layer",
                    "profile": f"profile <b>{escape(e.profile or '')}</b>", "doc": "documentation only",
                    "unlisted": "not a configured layer"}.get(e.role, escape(e.role))
            rows.append(f"<tr><td><code>{escape(e.path)}</code></td><td>{role}</td></tr>")
        out.append("<p>Later layers win; profiles are shown beside the layers.</p>"
                   + _table(["File", "Role"], rows, cls="env-files"))
    else:
        out.append("<p>No env files: every value is the compiled default.</p>")
    out.append("</div><div>")
    out.append("<h3>Input errors</h3>")
    if r.errors:
        items = "".join(f"<li>{_loc(e.path, e.line) if e.line else f'<code>{escape(e.path)}</code>'} "
                        f"{escape(e.message)}</li>" for e in r.errors)
        out.append(f"<ul class=errors>{items}</ul>")
    else:
        out.append("<p>None: every input was analysed.</p>")
    out.append("</div></div></section>")
    return "\n".join(out)


# -- inventory -----------------------------------------------------------------------

def _inventory(r: Review) -> str:
    roles = sorted({row.role for row in r.inventory})
    rows = []
    for row in r.inventory:
        env_cells, chains = [], []
        for s in row.sources:
            if s.knob is not None:
                env_cells.append(f"<div><b>{escape(s.knob.title)}</b>: {settings_text(s.knob, MARKUP)}</div>")
            chains.append("<div class=chain>" + " → ".join(escape(step) for step in s.chain) + "</div>")
        findings = " ".join(
            f"<a class='badge {SEVERITY_CLASS.get(r.findings[i].finding.severity, '')}' href='#finding-{i}'>{rid}</a>"
            for rid, i in row.finding_refs)
        rows.append(
            f"<tr data-role='{escape(row.role)}' data-class='{row.classification}'>"
            f"<td data-value='{escape(row.label)}'><b>{escape(row.label)}</b><br>{_loc(row.path, row.line, row.column)}</td>"
            f"<td>{escape(row.component)}</td>"
            f"<td><span class=role style='background:{ROLE_COLOURS.get(row.role, '#fff')}'>{escape(row.role)}</span></td>"
            f"<td>{row.classification}</td>"
            f"<td class=num data-value='{_num(row.effective_seconds)}'>{escape(value_text(row.effective_seconds, row.implicit))}</td>"
            f"<td class=num data-value='{_num(row.default_seconds)}'>{escape(value_text(row.default_seconds, row.implicit))}</td>"
            f"<td>{''.join(env_cells) or '—'}</td>"
            f"<td>{escape(row.winning)}</td>"
            f"<td>{''.join(chains) or '—'}</td>"
            f"<td>{findings}</td></tr>")
    knobs = _knobs(r)
    options = "".join(f"<option>{escape(role)}</option>" for role in roles)
    controls = ("<div class=controls id=inventory-controls hidden>"
                "<input type=search id=inventory-filter placeholder='Filter: name, file, env variable…'>"
                f"<select id=inventory-role><option value=''>all roles</option>{options}</select>"
                "<select id=inventory-class><option value=''>detectors and allocators</option>"
                "<option value=detector>detectors</option><option value=allocator>allocators</option>"
                "<option value=other>other</option></select> <span id=inventory-count></span></div>")
    head = ["Site", "Component", "Role", "Class", "Effective", "Compiled default", "Knobs: where set",
            "Winning layer", "Source chain", "Findings"]
    return ("<section id=inventory><h2>Timeout inventory</h2>"
            "<p>Every place a duration takes effect. <b>Detectors</b> (leases, heartbeats, renewals, the timers of a lease helper) "
            "notice failure; <b>allocators</b> (transport, read and phase timeouts, context and server deadlines, "
            "ceilings, fallbacks) decide how long work may run. Click a column header to sort.</p>"
            + (f"<p class=note>{plural(r.test_files_unread, 'test file')} read for the names they spell only "
               "(<code>include-tests = true</code> analyses test code too).</p>" if r.test_files_unread else "")
            + (controls + "<div class=wide>" + _table(head, rows, cls="inventory sortable", attrs="id=inventory-table")
               + "</div>" if rows else "<p>No timeout site found.</p>") + knobs + "</section>")


def _knobs(r: Review) -> str:
    """The knob inventory (the JSON `inventory`): every timeout knob, where it is set,
    what wins, its compiled defaults, who reads it and the timeout sites it reaches."""
    if not r.knobs:
        return ""
    rows = []
    for k in r.knobs:
        sets = "<br>".join(f"<code>{escape(where)}</code> = {escape(raw)}" + (" <em>(wins)</em>" if wins else "")
                           for where, raw, wins in k.settings) or "not set"
        reads = "<br>".join(_loc(*at.rsplit(":", 1)) + (f" default <b>{escape(seconds_text(sec))}</b>" if has else "")
                            for at, sec, has in k.read_defaults) or f"<em>{escape(k.unread_text)}</em>"
        sites = "".join(f"<div>{escape(s.get('label') or '?')} {_loc(s['path'], s['line'])}</div>" for s in k.sites[:MAX_SITES])
        if len(k.sites) > MAX_SITES:
            sites += f"<div><small>and {len(k.sites) - MAX_SITES:,} more</small></div>"
        sites += "".join(f"<div>{escape(label)} {_loc(*at.rsplit(':', 1))} <small>({escape(rid)} flow)</small></div>"
                         for rid, label, at in k.finding_sites)
        docs = f"<br><small>documented in {escape(', '.join(k.documented))}</small>" if k.documented else ""
        rows.append(f"<tr data-kind='{k.kind}'><td><b>{escape(k.title)}</b>{docs}</td>"
                    f"<td class=num data-value='{_num(k.effective_seconds)}'>{escape(k.effective_text)}</td>"
                    f"<td>{escape(k.winning)}</td><td>{sets}</td><td>{reads}</td>"
                    f"<td data-value='{len(k.sites)}'>{sites or '—'}</td></tr>")
    head = ["Knob", "Effective", "Winning layer", "Set in (layers, profiles, config)", "Read at, compiled default",
            "Timeout sites reached"]
    return ("<h3>Timeout knobs</h3><p>Every env variable and config key that feeds a timeout site or is named like a "
            "timeout: its value in force, where each layer and profile sets it (later layers win; where none sets "
            "it, the compiled default applies), where the code reads it and the sites it reaches. The same data as "
            "the <code>inventory</code> of <code>check --format json</code>.</p><div class=wide>"
            + _table(head, rows, cls="knobs") + "</div>")


MAX_SITES = 6


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.9g}"


# -- supervision ---------------------------------------------------------------------

def _supervision(leases: list[LeaseBudget]) -> str:
    out = ["<section id=supervision><h2>Supervision arithmetic</h2>"]
    if not leases:
        out.append("<p>No operation lease found: nothing supervises an operation with a renewable timer.</p></section>")
        return "\n".join(out)
    out.append("<p>For each lease: its TTL <b>L</b>, the renewals allowed <b>R</b>, the hard cap <b>C</b> the "
               "supervisor enforces, the smallest hard deadline <b>T</b> on the supervised path and the attempts "
               "<b>A</b>. One attempt lives at most min(T, C).</p>")
    rows = []
    for b in leases:
        rows.append(
            f"<tr class=lease><td><b>{escape(b.name)}</b><br>{_loc(b.location.path, b.location.line, b.location.column)}"
            f"<br><small>{escape(b.helper)} → {escape(b.operation)}</small></td>"
            f"<td class=num>{escape(span_text(b.ttl))}"
            + (f"<br><small>default {escape(span_text(b.ttl_default))}</small>" if b.ttl_default != b.ttl else "")
            + f"</td><td class=num>{count_text(b.renewals)}<br><small>{escape(b.renewals_how)}</small></td>"
            f"<td class=num>{escape(span_text(b.cap))}<br><small>{escape(b.cap_how)}</small></td>"
            f"<td class=num>{escape(span_text(b.deadline))}<br><small>{escape(b.deadline_how)}</small></td>"
            f"<td class=num>{count_text(b.attempts_inside)} inside<br><small>{escape(b.attempts_inside_how)}</small>"
            + (f"<br><small>{escape(b.outside)}</small>" if b.outside else "")
            + f"</td><td class=num><b>{escape(span_text(b.worst))}</b></td></tr>"
            f"<tr class=verdict><td colspan=7>{escape(b.sentence)}</td></tr>")
    out.append(_table(["Lease", "L (TTL)", "R (renewals)", "C (hard cap)", "T (hard deadline)", "A (attempts)",
                       "At most"], rows, cls="supervision"))
    out.append("</section>")
    return "\n".join(out)


# -- findings ------------------------------------------------------------------------

def _markdown(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).render(text)


def _findings(r: Review) -> str:
    out = ["<section id=findings><h2>Findings</h2>"]
    if not r.findings:
        out.append("<p>No findings.</p></section>")
        return "\n".join(out)
    for rule, items in r.findings_of:
        sev = SEVERITY_CLASS.get(rule.severity, "")
        out.append(f"<h3 class=rule id='rule-{rule.id}'><span class='badge {sev}'>{escape(rule.severity)}</span> "
                   f"{escape(rule.id)} {escape(rule.name)} <small>· {plural(len(items), 'finding')}</small></h3>"
                   + (f"<p class=rule-summary>{escape(rule.summary)}</p>" if rule.summary else ""))
        use_instead = items[0][1].use_instead
        if use_instead:
            out.append(f"<details class=use-instead><summary>Use instead ({escape(rule.id)} documentation)</summary>"
                       f"{_markdown(use_instead)}</details>")
        out += [_finding(i, rf) for i, rf in items]
    out.append("</section>")
    return "\n".join(out)


def _finding(i: int, rf) -> str:
    f = rf.finding
    parts = [f"<article class='finding {SEVERITY_CLASS.get(f.severity, '')}' id='finding-{i}'>",
             f"<h4>{escape(f.rule_id)} — {_loc(f.location.path, f.location.line, f.location.column)}</h4>",
             f"<p class=message>{escape(f.message)}</p>"]
    if rf.snippet:
        width = len(str(rf.snippet[-1][1]))
        code = "\n".join(
            (f"<mark>{'>'} {n:>{width}} │ {escape(text)}</mark>" if hit else f"  {n:>{width}} │ {escape(text)}")
            for hit, n, text in rf.snippet)
        parts.append(f"<pre class=snippet>{code}</pre>")
    if flow_worth_showing(f):
        items = [f"<li>{flow_step_text(step, MARKUP)}</li>" for step in f.flow]
        parts.append(f"<div class=flow><b>Flow</b><ol>{''.join(items)}</ol></div>")
    if f.related:
        items = "".join(f"<li>{_loc(x.location.path, x.location.line, x.location.column)} {escape(x.message)}"
                        + (f"<pre class=line>{escape(code)}</pre>" if code else "") + "</li>"
                        for x, code in zip(f.related, rf.related_code or [""] * len(f.related)))
        parts.append(f"<div class=related><b>Related</b><ul>{items}</ul></div>")
    if f.fix:
        parts.append(f"<p class=fix><b>Fix:</b> {escape(f.fix)}</p>")
    parts.append("</article>")
    return "".join(parts)


# -- graph ---------------------------------------------------------------------------

def _graph(pictures: list[Picture]) -> str:
    out = ["<section id=graph><h2>Timeout-flow graph</h2>"]
    if not pictures:
        out.append("<p>The graph has no flows to draw.</p></section>")
        return "\n".join(out)
    legend = "".join(f"<span class=role style='background:{colour}'>{escape(role)}</span> "
                     for role, colour in ROLE_COLOURS.items() if role not in ("sym", "lit"))
    out.append(f"<p class=legend>Colour by role: {legend} · sites with a finding, or related to one, have a red border.</p>")
    for p in pictures:
        out.append(f"<figure class=picture><figcaption><b>{escape(p.component)}</b> — {plural(p.total_nodes, 'node')}"
                   + (f", {p.shown_nodes:,} shown" if p.cut else "") + "</figcaption>")
        for note in p.notes:
            out.append(f"<p class=note>{escape(note)}</p>")
        if p.full_svg_name:
            out.append(f"<p><a href='{escape(p.full_svg_name)}'>The full graph of {escape(p.component)} (SVG)</a></p>")
        if p.svg:
            out.append(f"<div class='{_svg_class(p.svg)}'>{p.svg}</div>")
        elif p.shown_nodes:
            out.append(f"<pre class=mermaid>{escape(p.mermaid)}</pre>")
        out.append("</figure>")
    out.append("</section>")
    return "\n".join(out)


def _svg_class(svg: str) -> str:
    """Pictures up to about two screens wide are fitted to the page; wider ones keep their
    size (labels stay readable) and scroll."""
    match = re.search(r'<svg[^>]*\bwidth="([\d.]+)pt"', svg)
    return "svg fit" if match and float(match.group(1)) <= FIT_WIDTH_PT else "svg"


FIT_WIDTH_PT = 2200

CSS = """
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#fff;--soft:#f6f8fa;--err:#cf222e;--warn:#bc4c00;--info:#0969da}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 -apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
header{padding:18px 28px 8px;border-bottom:1px solid var(--line);background:var(--soft)}
header h1{margin:0 0 4px;font-size:22px}
.meta{margin:0 0 8px;color:var(--muted)}
nav a{margin-right:16px;color:var(--info);text-decoration:none;font-weight:600}
main{padding:8px 28px 40px;max-width:1500px}
h2{margin-top:28px;border-bottom:1px solid var(--line);padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0 16px;width:100%}
th,td{border:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);position:sticky;top:0}
table.by-rule,table.components,table.env-files{width:auto}
table.knobs td{font-size:13px}table.knobs code{overflow-wrap:anywhere}table.knobs td:first-child{overflow-wrap:anywhere;min-width:180px}
td.num{text-align:right;white-space:nowrap}
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--soft);padding:1px 4px;border-radius:4px}
.cards{display:flex;gap:12px;flex-wrap:wrap}
.grid{display:flex;gap:32px;flex-wrap:wrap;align-items:flex-start}.grid>div{max-width:560px}
.card{border:1px solid var(--line);border-radius:8px;padding:10px 16px;min-width:110px;background:var(--soft)}
.card b{display:block;font-size:24px}.card span{color:var(--muted)}
.card.sev-error b{color:var(--err)}.card.sev-warning b{color:var(--warn)}.card.sev-info b{color:var(--info)}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;color:#fff;background:var(--muted);text-decoration:none}
.badge.sev-error{background:var(--err)}.badge.sev-warning{background:var(--warn)}.badge.sev-info{background:var(--info)}
.role{display:inline-block;border:1px solid #ccc;border-radius:4px;padding:0 5px;font-size:12px;white-space:nowrap}
.chain{font-size:12px;color:var(--muted)}
table.inventory td{font-size:13px}
.sortable th{cursor:pointer;user-select:none}
.wide{overflow-x:auto}
table.supervision td.num{white-space:normal;min-width:90px}
table.supervision small{display:block}
.sortable th[aria-sort=ascending]::after{content:" ▲"}.sortable th[aria-sort=descending]::after{content:" ▼"}
.controls{display:flex;gap:8px;align-items:center;margin:8px 0}
.controls input{width:320px;padding:4px 8px}
tr.quiet td{color:var(--muted)}tr.quiet .badge{opacity:.45}
h3.rule{margin-top:22px}.rule-summary{margin:0 0 6px;color:var(--muted)}
tr.verdict td{background:#fffbe6;border-top:none;font-weight:600}
tr.lease td{border-bottom:none}
small{color:var(--muted)}
article.finding{border:1px solid var(--line);border-left:5px solid var(--muted);border-radius:6px;padding:4px 14px 10px;margin:14px 0}
article.sev-error{border-left-color:var(--err)}article.sev-warning{border-left-color:var(--warn)}article.sev-info{border-left-color:var(--info)}
article h4{font-size:14px;margin:10px 0 6px}
pre{background:var(--soft);padding:8px 10px;border-radius:6px;overflow:auto;font:12px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre mark{background:#fff1a8}
.related pre.line{margin:2px 0 4px;padding:2px 8px;white-space:pre-wrap}
.flow ol,.related ul{margin:4px 0 8px}
details.use-instead{background:#f0f7ff;border-radius:6px;padding:6px 10px}
details summary{cursor:pointer;font-weight:600}
figure.picture{margin:16px 0;border:1px solid var(--line);border-radius:6px;padding:8px}
.svg{overflow:auto;max-height:900px}
.svg svg{max-width:none;height:auto}.svg.fit svg{max-width:100%}
.note{color:var(--warn)}
"""

JS = """
(function(){
  var table=document.getElementById('inventory-table'); if(!table) return;
  var body=table.tBodies[0], rows=Array.prototype.slice.call(body.rows);
  var box=document.getElementById('inventory-controls'); box.hidden=false;
  var text=document.getElementById('inventory-filter'), role=document.getElementById('inventory-role'),
      cls=document.getElementById('inventory-class'), count=document.getElementById('inventory-count');
  function apply(){
    var q=text.value.toLowerCase(), shown=0;
    rows.forEach(function(r){
      var ok=(!q||r.textContent.toLowerCase().indexOf(q)>=0)&&(!role.value||r.dataset.role===role.value)&&(!cls.value||r.dataset.class===cls.value);
      r.hidden=!ok; if(ok) shown++;
    });
    count.textContent=shown+' of '+rows.length+' sites';
  }
  [text,role,cls].forEach(function(el){el.addEventListener('input',apply);});
  Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th,i){
    th.addEventListener('click',function(){
      var dir=th.getAttribute('aria-sort')==='ascending'?-1:1;
      Array.prototype.forEach.call(table.tHead.rows[0].cells,function(o){o.removeAttribute('aria-sort');});
      th.setAttribute('aria-sort',dir>0?'ascending':'descending');
      function key(r){var c=r.cells[i];var v=c.dataset.value;if(v!==undefined){var n=parseFloat(v);return isNaN(n)?(v===''?Infinity:v):n;}return c.textContent.trim().toLowerCase();}
      rows.sort(function(a,b){var x=key(a),y=key(b);if(typeof x===typeof y)return (x<y?-1:x>y?1:0)*dir;return (typeof x==='number'?-1:1)*dir;});
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
  apply();
})();
"""
