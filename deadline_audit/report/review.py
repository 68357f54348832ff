"""`deadline-audit report`: the architecture review, as one model (review_model.py)
rendered twice (review_html.py, review_markdown.py).

`analyse_for_review` runs the same pipeline as `check` but keeps the graph; `build_review`
turns graph + findings into plain rows: the summary, the timeout inventory (every site,
its values per env layer and profile, where they come from), the supervision arithmetic
of every lease (review_leases.py) and the findings with their rule's advice. Renderers
only format these rows.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path, PurePosixPath

from deadline_audit.findings import Finding
from deadline_audit.report.humanize import format_seconds
from deadline_audit.report.review_model import (ALLOCATOR_ROLES, DETECTOR_ROLES, NOT_TIMEOUTS, OTHER, TIMER_ROLES,
                                                EnvFileRow, InventoryRow, Knob, Review, ReviewFinding, RuleRow, Source)


# -- running the pipeline ------------------------------------------------------------

def analyse_for_review(paths: list[Path], config, *, jobs: int = 1, use_cache: bool = True) -> Review:
    """The `check` pipeline (build, checks, suppressions), keeping the graph for the review."""
    from deadline_audit import pipeline
    from deadline_audit.postprocess import finalize, make_line_reader

    started = time.perf_counter()
    built = pipeline.build(paths, config, jobs=jobs, use_cache=use_cache)
    raw = pipeline.run_checks(built, config, jobs=jobs)
    read_lines = make_line_reader()
    findings, suppressed = finalize(raw, config, read_lines)
    return build_review(built, findings, suppressed=suppressed, config=config, roots=paths,
                        elapsed_s=time.perf_counter() - started, read_lines=read_lines)


def build_review(built, findings: list[Finding], *, suppressed: int = 0, config=None,
                 roots: list[Path] | None = None, elapsed_s: float = 0.0, read_lines=None) -> Review:
    from deadline_audit.report.review_leases import lease_budgets

    graph = built.graph
    if read_lines is None:
        from deadline_audit.postprocess import make_line_reader

        read_lines = make_line_reader()
    component_of = assign_components(built.facts, getattr(config, "components", {}) or {},
                                     getattr(config, "root", None))
    # test code is in the graph only with `include-tests` (testfiles.py): nothing to hide,
    # but the reader is told how much of the tree was read for its names only
    test_files = 0
    if not getattr(config, "include_tests", False):
        from deadline_audit.testfiles import for_config

        tests = for_config(config)
        test_files = sum(1 for f in built.facts if f.kind in ("python", "go") and tests.holds(f.path))
    knobs = _knobs(built, config)  # first: building the knob inventory may add an input error
    inventory = _inventory(graph, findings, component_of, _lease_labels(graph), knobs)
    components = _component_sizes(built.facts, component_of, inventory)
    env_files = sorted(
        (EnvFileRow(f.path, f.env_role or "layer", f.profile, f.layer_rank) for f in built.facts if f.kind == "env"),
        key=lambda e: ({"layer": 0, "profile": 1, "unlisted": 2, "doc": 3}.get(e.role, 4), e.rank or 0, e.path))
    names = [_root_name(r) for r in (roots or [])]
    return Review(
        title="Timeout architecture review" + (f": {', '.join(names)}" if names else ""),
        roots=names,
        files_scanned=built.files_scanned,
        lines_scanned=built.lines_scanned,
        elapsed_s=round(elapsed_s, 2),
        findings=[_review_finding(f, read_lines) for f in findings],
        errors=list(built.errors),
        suppressed=suppressed,
        components=components,
        env_files=env_files,
        inventory=inventory,
        rules=_rules(findings, config),
        knob_of=knobs,
        knobs=_shown_knobs(knobs, findings),
        leases=lease_budgets(graph),
        graph=graph,
        component_of=component_of,
        internal_errors=getattr(built, "internal_errors", 0),
        test_files_unread=test_files,
    )


def _rules(findings: list[Finding], config) -> list[RuleRow]:
    """Every implemented rule (and any rule that reported), its findings and whether it ran."""
    from deadline_audit.checks import implemented_rules
    from deadline_audit.report.rules_meta import load_rule_meta

    meta = load_rule_meta()
    counts = Counter(f.rule_id for f in findings)
    from deadline_audit.postprocess import severity_for

    severities = getattr(config, "severity", None) or {}
    out = []
    for rid in sorted(implemented_rules() | set(counts)):
        m = meta.get(rid)
        reported = next((f for f in findings if f.rule_id == rid), None)
        out.append(RuleRow(
            id=rid, name=reported.rule if reported else (m.name if m else rid),
            severity=reported.severity if reported else severity_for(rid, m.severity if m else "warning", severities),
            summary=m.summary if m else "", findings=counts.get(rid, 0),
            checked=bool(counts.get(rid)) or config is None or config.rule_enabled(rid)))
    return out


def _lease_labels(graph) -> dict[str, str]:
    """Lease sites by their own name (`lease model_call`), else by their helper's."""
    return {lease.id: f"lease {lease.name}" if lease.name else f"lease ({(lease.helper or '?').rsplit('.', 1)[-1]})"
            for lease in graph.leases()}


def _component_sizes(facts, component_of: dict[str, str], inventory) -> dict[str, dict[str, int]]:
    """Files, lines and timeout sites per component; folders holding no code (config,
    docs, CI) are pooled under OTHER, and `component_of` is updated to say so."""
    code = {component_of.get(f.path) for f in facts if f.kind in ("python", "go")}
    sizes: dict[str, dict[str, int]] = {}
    for item in facts:
        name = component_of.get(item.path, OTHER)
        if name not in code:
            name = component_of[item.path] = OTHER
        size = sizes.setdefault(name, {"files": 0, "lines": 0, "sites": 0})
        size["files"] += 1
        size["lines"] += item.lines
    for row in inventory:
        sizes.setdefault(row.component, {"files": 0, "lines": 0, "sites": 0})["sites"] += 1
    return dict(sorted(sizes.items()))


def _root_name(root) -> str:
    """How the review names an analysed path: `.` is named after its folder."""
    path = Path(root)
    return path.resolve().name if path.as_posix() in (".", "") else path.as_posix()


# -- components ----------------------------------------------------------------------

def assign_components(facts, configured: dict[str, list[str]], root: Path | None) -> dict[str, str]:
    """path -> component: the configured component whose globs match (relative to the
    config root), else the first folder below the files' common folder (a Go module or a
    Python project side by side), else the folder itself."""
    from fnmatch import fnmatchcase

    paths = [f.path for f in facts]
    out: dict[str, str] = {}
    rel_root = None
    if root is not None:
        try:
            rel_root = Path(root).resolve()
        except OSError:
            rel_root = None
    common = _common_folder(paths)
    for path in paths:
        name = None
        if configured:
            rel = path
            if rel_root is not None:
                try:
                    rel = (Path.cwd() / path).resolve().relative_to(rel_root).as_posix()
                except ValueError:
                    rel = path
            name = next((c for c, globs in configured.items() if any(fnmatchcase(rel, g) for g in globs)), None)
        if name is None:
            parts = PurePosixPath(path).parts[len(common):]
            name = parts[0] if len(parts) > 1 else (PurePosixPath(*common).name if common else ".") or "."
        out[path] = name
    return out


def _common_folder(paths: list[str]) -> tuple[str, ...]:
    folders = [PurePosixPath(p).parts[:-1] for p in paths]
    if not folders:
        return ()
    common = folders[0]
    for parts in folders[1:]:
        n = 0
        while n < min(len(common), len(parts)) and common[n] == parts[n]:
            n += 1
        common = common[:n]
    return common


def package_of(path: str) -> str:
    """The folder a file sits in: a Go package, a Python package."""
    parent = PurePosixPath(path).parent.as_posix()
    return parent if parent != "." else "(root)"


# -- inventory -----------------------------------------------------------------------

def classification(role: str | None, in_lease_helper: bool = False) -> str:
    if role in DETECTOR_ROLES or (role in TIMER_ROLES and in_lease_helper):
        return "detector"
    if role in ALLOCATOR_ROLES:
        return "allocator"
    return "other"


def _inventory(graph, findings: list[Finding], component_of: dict[str, str],
               labels: dict[str, str], knobs: dict[str, Knob]) -> list[InventoryRow]:
    g = graph.g
    at_site: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for i, f in enumerate(findings):
        at_site.setdefault((f.location.path, f.location.line), []).append((f.rule_id, i))
    helpers = set(graph.lease_helpers(graph.declared_leases))
    helpers |= {c for h in helpers for c in graph.closures.get(h, ())}
    rows = []
    for node, a in g.nodes(data=True):
        if a.get("kind") != "site" or a.get("role") in NOT_TIMEOUTS:
            continue
        path = a.get("path", "")
        rows.append(InventoryRow(
            site=node, label=labels.get(node) or str(a.get("label", node)), role=str(a.get("role") or "?"),
            classification=classification(a.get("role"), a.get("function") in helpers),
            component=component_of.get(path, "—"), path=path, line=int(a.get("line") or 0),
            column=int(a.get("column") or 0),
            effective_seconds=a.get("effective_seconds"), default_seconds=a.get("default_seconds"),
            implicit=bool(a.get("implicit")), sources=_sources(graph, node, knobs),
            findings=sorted({rid for rid, _ in at_site.get((path, int(a.get("line") or 0)), [])}),
            finding_refs=at_site.get((path, int(a.get("line") or 0)), []),
        ))
    rows.sort(key=lambda r: (r.component, r.path, r.line, r.column))
    return rows


def _sources(graph, site: str, knobs: dict[str, Knob]) -> list[Source]:
    g = graph.g
    roots = sorted(graph.sources(site), key=lambda n: (not n.startswith("env:"), n))
    env_knobs = [knobs[r] for r in roots if r in knobs and knobs[r].kind == "env"]
    out = []
    for root in roots:
        a = g.nodes[root]
        kind = a.get("kind", root.split(":", 1)[0])
        if kind == "lit" and _is_env_default(a, env_knobs):
            continue  # the compiled default of an env read: shown with that env variable
        knob = knobs.get(root)
        out.append(Source(node=root, label=str(a.get("label", root)), kind=kind, knob=knob,
                          chain=_chain(graph, root, site, knob)))
    return out


def _knobs(built, config) -> dict[str, Knob]:
    """The knob inventory (the JSON `inventory`) by graph node; a config key is also
    found under its `cfg:*#key` node (a key read from any loaded file)."""
    from deadline_audit.pipeline import knob_inventory

    options = (getattr(config, "rule_options", None) or {}).get("DA501", {})
    out: dict[str, Knob] = {}
    for entry in knob_inventory(built, options) or []:
        knob = Knob(entry, list(entry["sites"]))
        out[entry["node"]] = knob
        if entry["kind"] == "config":
            out.setdefault(f"cfg:*#{entry['name']}", knob)
    return out


def _shown_knobs(knobs: dict[str, Knob], findings: list[Finding]) -> list[Knob]:
    """The knobs the table lists: those that reach a timeout site, are named like a
    timeout, or start a finding's flow (a value sent across a wire to a clamp); the
    site such a flow ends at is noted with the knob."""
    for f in findings:
        knob = knobs.get(f.flow[0].node) if len(f.flow) > 1 else None
        end = f.flow[-1] if knob is not None else None
        if end is None or end.node in {s["id"] for s in knob.sites} or end.location is None:
            continue
        row = (f.rule_id, end.label or end.node, f"{end.location.path}:{end.location.line}")
        if row not in knob.finding_sites:
            knob.finding_sites.append(row)
    unique = {id(k): k for k in knobs.values()}.values()
    return [k for k in unique if k.sites or k.finding_sites or k.entry.get("timeout_like")]


def _is_env_default(lit: dict, env_knobs: list[Knob]) -> bool:
    """A literal that is the compiled default of one of the env reads feeding the site
    (same file as the read, same value)."""
    return any(d["path"] == lit.get("path") and d.get("seconds") == lit.get("value_seconds")
               for knob in env_knobs for d in knob.entry["defaults"])


def _chain(graph, source: str, site: str, knob: Knob | None) -> list[str]:
    """`env → helper default → field → site` as labels: `$MODEL_TIMEOUT`, `envDuration
    default 120 s`, `config.Config.ModelTimeout`, …, `http.Client.Timeout`; other
    transforms in brackets."""
    g = graph.g
    path = graph.flow_path(source, site)
    out = []
    for previous, node in zip([None, *path], path):
        a = g.nodes[node]
        label = str(a.get("label", node))
        transform = None
        if previous is not None:
            edges = g.get_edge_data(previous, node) or {}
            transform = next((e.get("transform") for e in edges.values() if e.get("transform")), None)
        if previous is not None and g.nodes[previous].get("kind") == "env":
            defaults = sorted({format_seconds(sec) for sec, _, _ in (knob.defaults if knob else ()) if sec is not None})
            helper = transform[5:] + " " if transform and transform.startswith("call ") else ""
            if defaults:
                out.append(f"{helper}default {', '.join(defaults)}")
            transform = None if helper else transform
        if a.get("kind") == "env":
            label = f"${label}"
        elif transform and transform not in ("identity", "env_read"):
            label += f" [{transform}]"
        out.append(label)
    return out


# -- findings ------------------------------------------------------------------------

def _review_finding(f: Finding, read_lines) -> ReviewFinding:
    from deadline_audit.report.rules_meta import load_rule_meta

    meta = load_rule_meta().get(f.rule_id)
    snippet: list[tuple[bool, int, str]] = []
    try:
        lines = read_lines(f.location.path)
    except OSError:
        lines = []
    if 1 <= f.location.line <= len(lines):
        first, last = max(1, f.location.line - 2), min(len(lines), f.location.line + 1)
        snippet = [(n == f.location.line, n, lines[n - 1].expandtabs(4).rstrip()) for n in range(first, last + 1)]
    shown = {(f.location.path, n) for _, n, _ in snippet}
    return ReviewFinding(
        finding=f, snippet=snippet,
        use_instead=(meta.sections.get("Use instead", "") if meta else "").strip(),
        summary=meta.summary if meta else "",
        related_code=["" if (r.location.path, r.location.line) in shown else _line_at(read_lines, r.location.path, r.location.line)
                      for r in f.related],  # a line the snippet already shows is not quoted again
    )


def _line_at(read_lines, path: str, line: int, width: int = 160) -> str:
    """One source line, trimmed, for a related location: the other side of a wire, the
    ceiling, the declared state."""
    try:
        lines = read_lines(path)
    except OSError:
        return ""
    text = lines[line - 1].strip() if 1 <= line <= len(lines) else ""
    return text if len(text) <= width else text[:width - 1] + "…"


# -- rendering -------------------------------------------------------------------------

REVIEW_FORMATS = ("html", "markdown")


def render_review(review: Review, fmt: str, *, output_stem: str | None = None) -> tuple[str, dict[str, str]]:
    """(the report's text, extra files to write beside it: {name: text}). HTML embeds SVG
    rendered by Graphviz; Markdown carries Mermaid source."""
    from deadline_audit.report.review_graph import pictures

    if fmt == "html":
        from deadline_audit.report.review_html import render_html

        drawn, files = pictures(review, full_svg_stem=output_stem)
        return render_html(review, drawn), files
    if fmt == "markdown":
        from deadline_audit.report.review_markdown import render_markdown

        drawn, _ = pictures(review, render_svg=False)
        return render_markdown(review, drawn), {}
    raise ValueError(f"unknown report format {fmt!r} (expected one of {', '.join(REVIEW_FORMATS)})")


def format_for(output: Path | None, requested: str | None) -> str | None:
    """The report format: as requested, else from the output's suffix (.html/.htm,
    .md/.markdown), else Markdown on stdout. None: the suffix says nothing we write."""
    if requested:
        return requested
    if output is None:
        return "markdown"
    suffix = output.suffix.lower()
    if suffix in (".html", ".htm"):
        return "html"
    if suffix in (".md", ".markdown"):
        return "markdown"
    return None
