"""The one internal model every output is rendered from.

Checks produce `Finding`s; the pipeline adds input errors and a summary; reporters
(text, json, sarif, github, markdown) only read these dataclasses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

SEVERITIES = ("error", "warning", "info")
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


@dataclass(frozen=True)
class Location:
    """A span in an input file: POSIX path relative to the cwd, 1-based lines and
    columns counted in Unicode code points."""

    path: str
    line: int
    column: int = 1
    end_line: int | None = None
    end_column: int | None = None


@dataclass(frozen=True)
class Related:
    message: str
    location: Location


@dataclass(frozen=True)
class Layer:
    """One env layer or profile that sets a variable."""

    path: str
    line: int
    value_seconds: float | None
    raw: str = ""
    profile: str | None = None  # None for a layer, the profile name for a profile
    wins: bool = False


@dataclass(frozen=True)
class FlowStep:
    """One node on the way from a value's source to where it takes effect."""

    node: str  # graph node id, e.g. "env:MODEL_TIMEOUT", "sym:go:app/models.Config.Timeout"
    label: str  # what a reader sees, e.g. "models.Config.Timeout"
    value_seconds: float | None = None
    location: Location | None = None
    layers: tuple[Layer, ...] = ()
    default_seconds: float | None = None
    default_location: Location | None = None
    transform: str | None = None  # transform on the edge into this step


@dataclass
class Finding:
    rule_id: str
    rule: str
    severity: str
    message: str
    location: Location
    related: list[Related] = field(default_factory=list)
    flow: list[FlowStep] = field(default_factory=list)
    fix: str | None = None
    fingerprint: str = ""  # filled by the pipeline (see fingerprints.py)

    @property
    def source_node(self) -> str | None:
        return self.flow[0].node if self.flow else None


@dataclass(frozen=True)
class InputError:
    """An input that could not be analysed (or only partly): reported, never fatal."""

    path: str
    message: str
    line: int | None = None
    column: int | None = None


@dataclass
class Summary:
    files_scanned: int = 0
    lines_scanned: int = 0
    findings: int = 0
    by_rule: dict[str, int] = field(default_factory=dict)
    suppressed: int = 0
    baselined: int = 0
    elapsed_s: float = 0.0
    internal_errors: int = 0  # checks that crashed (reported under errors): exit code 2


@dataclass
class AnalysisResult:
    findings: list[Finding]
    errors: list[InputError]
    summary: Summary
    # env/config knobs (inventory.py): plain JSON-able data, or a function that builds it
    # when a reporter asks (the pipeline defers it: only JSON output carries it)
    inventory: list[dict] | Callable[[], list[dict] | None] | None = None

    def knob_inventory(self) -> list[dict] | None:
        if callable(self.inventory):
            self.inventory = self.inventory()
        return self.inventory
