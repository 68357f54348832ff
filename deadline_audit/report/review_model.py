"""The architecture review's model (review.py builds it): plain rows that the renderers
(review_html.py, review_markdown.py) and the lease arithmetic (review_leases.py) only read,
and the text helpers they share."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

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
class Knob:
    """One entry of the knob inventory (inventory.build_inventory: the same data as the
    `inventory` of `check --format json`), with the timeout sites it reaches outside
    hidden test code."""

    entry: dict
    sites: list[dict] = field(default_factory=list)
    # sites a finding's flow carries it to beyond the graph's own edges (across a wire):
    # (rule id, site label, `path:line`)
    finding_sites: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.entry["name"]

    @property
    def kind(self) -> str:  # env | config
        return self.entry["kind"]

    @property
    def title(self) -> str:
        return f"${self.name}" if self.kind == "env" else self.name

    @property
    def effective_seconds(self) -> float | None:
        """The value in force: the winning setting, else the compiled default when there is one."""
        eff = self.entry.get("effective")
        if eff is not None:
            return eff.get("seconds")
        seconds = {d["seconds"] for d in self.entry["defaults"] if d.get("seconds") is not None}
        return seconds.pop() if len(seconds) == 1 else None

    @property
    def effective_text(self) -> str:
        """`30 min (30m)`, `120 s (compiled default)`, `:8080`, `unresolved`."""
        eff = self.entry.get("effective")
        if eff is not None:
            if eff.get("seconds") is None:
                return str(eff.get("raw"))
            text = format_seconds(eff["seconds"])
            raw = str(eff.get("raw") or "")
            return text if raw.replace(" ", "") in ("", text.replace(" ", "")) else f"{text} ({raw})"
        seconds = self.effective_seconds
        return f"{format_seconds(seconds)} (compiled default)" if seconds is not None else "unresolved"

    @property
    def winning(self) -> str:
        """Where the value in force is set: `path:line`, `profile prod: path:line`, the code."""
        eff = self.entry.get("effective")
        if eff is not None:
            return (f"profile {eff['profile']}: " if eff.get("profile") else "") + f"{eff['path']}:{eff['line']}"
        return "compiled default" if self.entry["defaults"] else "—"

    @property
    def settings(self) -> list[tuple[str, str, bool]]:
        """Every env layer and profile that sets it: (`[profile p: ]path:line`, raw, wins)."""
        if self.kind == "config":  # one value, in the loaded config file
            eff = self.entry["effective"]
            return [(f"{eff['path']}:{eff['line']}", str(eff["raw"]), False)]
        return [((f"profile {s['profile']}: " if s.get("profile") else "") + f"{s['path']}:{s['line']}",
                 str(s["raw"]), bool(s.get("wins")))
                for s in self.entry["layers"] + self.entry["profiles"]]

    @property
    def defaults(self) -> list[tuple[float | None, str, str]]:
        """Compiled defaults: (seconds, raw as written, `path:line`)."""
        return [(d.get("seconds"), str(d.get("raw")) if d.get("raw") is not None else "", f"{d['path']}:{d['line']}")
                for d in self.entry["defaults"]]

    @property
    def reads(self) -> list[str]:
        return [f"{r['path']}:{r['line']}" for r in self.entry["reads"]]

    @property
    def read_defaults(self) -> list[tuple[str, float | None, bool]]:
        """Where the code reads it, each with the compiled default read there: (`path:line`,
        seconds, has a default); defaults away from any read (config defaults) follow."""
        defaults = {at: sec for sec, _, at in self.defaults}
        out = [(at, defaults.get(at), at in defaults) for at in self.reads]
        return out + [(at, sec, True) for at, sec in defaults.items() if at not in self.reads]

    @property
    def unread_text(self) -> str:
        """What the read column says where no read location is known."""
        return "read (where is not known)" if self.entry.get("read") else "not read"

    @property
    def documented(self) -> list[str]:
        return [f"{d['path']}:{d['line']}" for d in self.entry.get("documented", [])]


@dataclass
class Source:
    """One root feeding a site: an env variable or config key (with its inventory entry),
    or a literal."""

    node: str
    label: str
    kind: str  # env | lit | cfg | sym
    knob: Knob | None = None  # env and config roots: their knob inventory entry
    chain: list[str] = field(default_factory=list)  # labels from the source to the site


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
        winners = sorted({s.knob.winning for s in self.sources
                          if s.knob is not None and s.knob.entry.get("effective") is not None})
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
    related_code: list[str] = field(default_factory=list)  # the source line of each related location ("" unknown)


@dataclass
class RuleRow:
    """A rule in the summary: every implemented rule, with or without findings."""

    id: str
    name: str
    severity: str  # as configured (`severity` table), else the rule's default
    summary: str
    findings: int
    checked: bool  # selected for this run (`select`/`ignore`)


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
    rules: list[RuleRow] = field(default_factory=list)
    knob_of: dict[str, Knob] = field(default_factory=dict)  # every knob by graph node, for the picture
    test_files_unread: int = 0  # test files read for their names only (no `include-tests`)

    @property
    def findings_of(self) -> list[tuple[RuleRow, list[tuple[int, "ReviewFinding"]]]]:
        """The findings grouped by rule, in rule order: (rule, [(index in findings, finding)])."""
        groups: dict[str, list[tuple[int, ReviewFinding]]] = {}
        for i, rf in enumerate(self.findings):
            groups.setdefault(rf.finding.rule_id, []).append((i, rf))
        rows = {r.id: r for r in self.rules}
        return [(rows.get(rid) or RuleRow(rid, items[0][1].finding.rule, items[0][1].finding.severity,
                                          items[0][1].summary, len(items), True), items)
                for rid, items in sorted(groups.items())]

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


# -- text shared by the renderers ---------------------------------------------------

@dataclass(frozen=True)
class Markup:
    """How a renderer marks text up: HTML escapes and tags, Markdown backticks."""

    text: Callable[[str], str]  # plain text, escaped
    code: Callable[[str], str]  # a location or a raw value
    strong: Callable[[str], str]
    aside: Callable[[str], str]  # `(wins)`, a transform


def settings_text(k: Knob, m: Markup) -> str:
    """Where a knob is set (`path:line = raw`, the winner marked), then its compiled defaults."""
    values = [m.code(where) + " = " + m.strong(raw) + (" " + m.aside("(wins)") if wins else "")
              for where, raw, wins in k.settings]
    defaults = [f"default {m.text(seconds_text(sec))} {m.code(at)}" for sec, _, at in k.defaults]
    return ("; ".join(values) or "not set") + (" · " + "; ".join(defaults) if defaults else "")


def flow_step_text(step, m: Markup) -> str:
    """One step of a finding's flow: label [transform] = value · layers · default, location."""
    text = m.strong(step.label or step.node)
    if step.transform:
        text += " " + m.aside(f"[{step.transform}]")
    if step.value_seconds is not None:
        text += " = " + m.text(format_seconds(step.value_seconds))
    for layer in step.layers:
        name = f"profile {layer.profile}: " if layer.profile else ""
        text += f" · {m.text(name)}{m.code(f'{layer.path}:{layer.line}')} = {m.text(layer.raw)}"
        text += " " + m.aside("(wins)") if layer.wins else ""
    if step.default_seconds is not None:
        text += " · default " + m.text(format_seconds(step.default_seconds))
        if step.default_location:
            text += " " + m.code(f"{step.default_location.path}:{step.default_location.line}")
    if step.location is not None and not step.layers:
        text += " " + m.code(f"{step.location.path}:{step.location.line}")
    return text


def flow_worth_showing(f: Finding) -> bool:
    """A flow says more than the finding's own location: several steps, or a value, a
    layer or a default (a lone step naming the flagged line is left out)."""
    if len(f.flow) != 1:
        return bool(f.flow)
    step = f.flow[0]
    here = step.location is not None and (step.location.path, step.location.line) == (f.location.path, f.location.line)
    return not here or bool(step.layers) or step.value_seconds is not None or step.default_seconds is not None


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
