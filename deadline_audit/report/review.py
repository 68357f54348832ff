"""`deadline-audit report`: the architecture review, as one model rendered twice
(review_html.py, review_markdown.py).

`analyse_for_review` runs the same pipeline as `check` but keeps the graph; `build_review`
turns graph + findings into plain rows: the summary, the timeout inventory (every site,
its values per env layer and profile, where they come from), the supervision arithmetic
of every lease (review_leases.py) and the findings with their rule's advice. Renderers
only format these rows.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from deadline_audit.findings import Finding, InputError
from deadline_audit.report.humanize import format_seconds

# Roles that detect failure (a renewable supervision) vs roles that allocate time (SPEC §1).
DETECTOR_ROLES = ("lease", "heartbeat", "renewal")
TIMER_ROLES = ("timer", "ticker")  # detectors inside a lease helper; elsewhere plain timers
ALLOCATOR_ROLES = ("transport_deadline", "read_timeout", "phase_timeout", "context_deadline",
                   "server_write_deadline", "ceiling", "fallback")
NOT_TIMEOUTS = ("terminal_write", "sleep")  # sites that bound nothing: a write, a pause
OTHER = "(other files)"  # the component of files in folders without code


@dataclass
class EnvFileRow:
    path: str
    role: str  # layer | profile | doc | unlisted
    profile: str | None = None
    rank: int | None = None  # layers: precedence, later wins


@dataclass
class Source:
    """One root feeding a site: an env variable (with its layers) or a literal/config key."""

    node: str
    label: str
    kind: str  # env | lit | cfg | sym
    raw_by_file: dict[str, str] = field(default_factory=dict)  # env file path -> raw text
    winner: str | None = None  # env file path whose value wins
    defaults: list[tuple[float | None, str]] = field(default_factory=list)  # (seconds, "path:line")
    chain: list[str] = field(default_factory=list)  # labels from the source to the site


@dataclass
class Knob:
    """An env variable that feeds timeout sites: its value in every layer and profile."""

    name: str
    raw_by_file: dict[str, str]
    winner: str | None
    defaults: list[tuple[float | None, str]]
    sites: int


@dataclass
class InventoryRow:
    site: str
    label: str
    role: str
    classification: str  # detector | allocator | other
    component: str
    path: str
    line: int
    column: int
    effective_seconds: float | None
    default_seconds: float | None
    implicit: bool
    sources: list[Source]
    findings: list[str] = field(default_factory=list)  # rule ids reported at this site
    finding_refs: list[tuple[str, int]] = field(default_factory=list)  # (rule id, index in Review.findings)

    @property
    def winning(self) -> str:
        """Where the effective value comes from: the winning env file, else the code."""
        winners = sorted({s.winner for s in self.sources if s.winner})
        if winners:
            return ", ".join(winners)
        if self.implicit:
            return "library default"
        if any(s.kind == "env" for s in self.sources):
            return "compiled default"
        return "code" if self.sources else "—"


@dataclass
class ReviewFinding:
    finding: Finding
    snippet: list[tuple[bool, int, str]]
    use_instead: str  # the rule's "Use instead" section (Markdown)
    summary: str


@dataclass
class Review:
    title: str
    roots: list[str]
    files_scanned: int
    lines_scanned: int
    elapsed_s: float
    findings: list[ReviewFinding]
    errors: list[InputError]
    suppressed: int
    components: dict[str, dict[str, int]]  # component -> {"files", "lines", "sites"}
    env_files: list[EnvFileRow]
    inventory: list[InventoryRow]
    leases: list  # review_leases.LeaseBudget
    graph: object  # TimeoutGraph, for the picture
    internal_errors: int  # checks that crashed: the command exits 2
    component_of: dict[str, str]  # path -> component
    knobs: list[Knob] = field(default_factory=list)
    test_sites_hidden: int = 0  # sites in test code, left out unless `include-tests`
    hidden_paths: set[str] = field(default_factory=set)  # test code left out of the inventory and pictures

    @property
    def by_rule(self) -> list[tuple[str, str, str, int]]:
        counts = Counter((f.finding.rule_id, f.finding.rule, f.finding.severity) for f in self.findings)
        return [(rid, name, sev, n) for (rid, name, sev), n in sorted(counts.items())]

    @property
    def by_severity(self) -> dict[str, int]:
        counts = Counter(f.finding.severity for f in self.findings)
        return {sev: counts.get(sev, 0) for sev in ("error", "warning", "info")}

    @property
    def layer_paths(self) -> list[str]:
        return [e.path for e in self.env_files if e.role == "layer"]

    @property
    def profile_paths(self) -> list[str]:
        return [e.path for e in self.env_files if e.role == "profile"]


# -- running the pipeline ------------------------------------------------------------

def analyse_for_review(paths: list[Path], config, *, jobs: int = 1, use_cache: bool = True) -> Review:
    """The `check` pipeline (build, checks, suppressions), keeping the graph for the review."""
    from deadline_audit import pipeline
    from deadline_audit.postprocess import finalize, make_line_reader

    started = time.perf_counter()
    built = pipeline.build(paths, config, jobs=jobs, use_cache=use_cache)
    raw = pipeline.run_checks(built, config)
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
    inventory = _inventory(graph, findings, component_of, _lease_labels(graph))
    hidden: set[str] = set()  # test code: left out unless `include-tests`
    if not getattr(config, "include_tests", False):
        is_test = _test_code(config)
        hidden = {f.path for f in built.facts if f.kind in ("python", "go") and is_test(f.path)}
    shown = [row for row in inventory if row.path not in hidden]
    components = _component_sizes(built.facts, component_of, shown)
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
        inventory=shown,
        knobs=_knobs(graph, shown),
        leases=[b for b in lease_budgets(graph) if b.location.path not in hidden],
        graph=graph,
        component_of=component_of,
        test_sites_hidden=len(inventory) - len(shown),
        hidden_paths=hidden,
        internal_errors=getattr(built, "internal_errors", 0),
    )


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


def _test_code(config):
    """path -> is it test code (catalog `tests.patterns`, relative to the config root)?"""
    import pathspec

    from deadline_audit.catalog import load_catalog

    patterns = load_catalog(getattr(config, "catalog", {}) or {}).file("tests").get("tests", {}).get("patterns", [])
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    root = getattr(config, "root", None)

    def holds(path: str) -> bool:
        rel = path
        if root is not None:
            try:
                rel = (Path.cwd() / path).resolve().relative_to(root).as_posix()
            except (ValueError, OSError):
                rel = path
        return spec.match_file(rel)

    return holds


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
               labels: dict[str, str]) -> list[InventoryRow]:
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
            implicit=bool(a.get("implicit")), sources=_sources(graph, node),
            findings=sorted({rid for rid, _ in at_site.get((path, int(a.get("line") or 0)), [])}),
            finding_refs=at_site.get((path, int(a.get("line") or 0)), []),
        ))
    rows.sort(key=lambda r: (r.component, r.path, r.line, r.column))
    return rows


def _sources(graph, site: str) -> list[Source]:
    g = graph.g
    roots = sorted(graph.sources(site), key=lambda n: (not n.startswith("env:"), n))
    env_roots = [r for r in roots if r.startswith("env:")]
    out = []
    for root in roots:
        a = g.nodes[root]
        kind = a.get("kind", root.split(":", 1)[0])
        if kind == "lit" and env_roots and _is_env_default(graph, root, env_roots):
            continue  # the compiled default of an env read: shown with that env variable
        source = Source(node=root, label=str(a.get("label", root)), kind=kind)
        if kind == "env":
            for layer in a.get("layers", []) + a.get("profiles", []):
                source.raw_by_file[layer["path"]] = layer["raw"]
                if layer.get("wins"):
                    source.winner = layer["path"]
            source.defaults = [(r.get("default_seconds"), f"{r['path']}:{r['line']}") for r in a.get("reads", [])]
        source.chain = _chain(graph, root, site)
        out.append(source)
    return out


def _knobs(graph, inventory: list[InventoryRow]) -> list[Knob]:
    feeds: dict[str, int] = {}
    for row in inventory:
        for source in row.sources:
            if source.kind == "env":
                feeds[source.node] = feeds.get(source.node, 0) + 1
    out = []
    for node, count in sorted(feeds.items()):
        a = graph.g.nodes[node]
        layers = a.get("layers", []) + a.get("profiles", [])
        out.append(Knob(
            name=str(a.get("label", node)), raw_by_file={lay["path"]: lay["raw"] for lay in layers},
            winner=next((lay["path"] for lay in layers if lay.get("wins")), None),
            defaults=[(r.get("default_seconds"), f"{r['path']}:{r['line']}") for r in a.get("reads", [])],
            sites=count))
    return out


def _is_env_default(graph, lit: str, env_roots: list[str]) -> bool:
    """A literal that is the compiled default of one of the env reads feeding the site
    (same file as the read, same value)."""
    a = graph.g.nodes[lit]
    return any(read.get("path") == a.get("path") and read.get("default_seconds") == a.get("value_seconds")
               for env in env_roots for read in graph.g.nodes[env].get("reads", []))


def _chain(graph, source: str, site: str) -> list[str]:
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
            defaults = sorted({format_seconds(r["default_seconds"]) for r in g.nodes[previous].get("reads", [])
                               if r.get("default_seconds") is not None})
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
    return ReviewFinding(
        finding=f, snippet=snippet,
        use_instead=(meta.sections.get("Use instead", "") if meta else "").strip(),
        summary=meta.summary if meta else "",
    )


def seconds_text(value: float | None) -> str:
    return format_seconds(value) if value is not None else "unresolved"


def value_text(value: float | None, implicit: bool = False) -> str:
    """An inventory value: `30 min`, `600 s (library default)`, `unresolved`."""
    if value is None:
        return "no limit (library default)" if implicit else "unresolved"
    return format_seconds(value) + (" (library default)" if implicit else "")


def count_text(value: float | None) -> str:
    """R and A: `3`, `∞`, `unknown`."""
    if value is None:
        return "unknown"
    return "∞" if value == float("inf") else f"{int(value):,}"


def span_text(seconds: float | None) -> str:
    """A duration a reader adds up: `1 h 30 min`, `40 min`, `2 h`, `90 s`, `∞`."""
    if seconds is None:
        return "unknown"
    if seconds == float("inf"):
        return "∞"
    s = round(seconds)
    if abs(seconds - s) > 1e-6 or s < 60 or (s < 600 and s % 60):
        return format_seconds(seconds)
    hours, rest = divmod(s, 3600)
    minutes, secs = divmod(rest, 60)
    parts = []
    if hours:
        parts.append(f"{hours:,} h")
    if minutes:
        parts.append(f"{minutes} min")
    if secs:
        parts.append(f"{secs} s")
    return " ".join(parts)


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
