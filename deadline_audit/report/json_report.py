"""`--format json`: SPEC §5, schema_version 1 (deadline_audit/schemas/findings-v1.json).

Version 1 only grows by optional fields; this reporter adds `label`, `raw`, `profile`,
`wins`, `default_location`, `transform` (flow), `fix` (finding), `column` (errors),
`lines_scanned` and `by_severity` (summary), and the top-level `inventory` of knobs
(built by inventory.py; serialised here as it is).
"""

from __future__ import annotations

import json
from typing import Any

from deadline_audit import __version__
from deadline_audit.findings import AnalysisResult, Finding, FlowStep, InputError, Location

SCHEMA_VERSION = 1


def location_dict(loc: Location) -> dict[str, Any]:
    out: dict[str, Any] = {"path": loc.path, "line": loc.line, "column": loc.column}
    if loc.end_line is not None:
        out["end_line"] = loc.end_line
    if loc.end_column is not None:
        out["end_column"] = loc.end_column
    return out


def _opt_location(loc: Location | None) -> dict[str, Any] | None:
    return location_dict(loc) if loc is not None else None


def flow_step_dict(step: FlowStep) -> dict[str, Any]:
    return {
        "node": step.node,
        "label": step.label,
        "value_seconds": step.value_seconds,
        "location": _opt_location(step.location),
        "layers": [
            {
                "path": layer.path,
                "line": layer.line,
                "value_seconds": layer.value_seconds,
                "raw": layer.raw,
                "profile": layer.profile,
                "wins": layer.wins,
            }
            for layer in step.layers
        ],
        "default_seconds": step.default_seconds,
        "default_location": _opt_location(step.default_location),
        "transform": step.transform,
    }


def finding_dict(f: Finding) -> dict[str, Any]:
    return {
        "rule_id": f.rule_id,
        "rule": f.rule,
        "severity": f.severity,
        "message": f.message,
        "location": location_dict(f.location),
        "related": [{"message": r.message, "location": location_dict(r.location)} for r in f.related],
        "flow": [flow_step_dict(s) for s in f.flow],
        "fix": f.fix,
        "fingerprint": f.fingerprint,
    }


def error_dict(e: InputError) -> dict[str, Any]:
    return {"path": e.path, "line": e.line, "column": e.column, "message": e.message}


def result_dict(result: AnalysisResult) -> dict[str, Any]:
    by_rule: dict[str, int] = {}
    by_severity = {"error": 0, "warning": 0, "info": 0}
    for f in result.findings:
        by_rule[f.rule_id] = by_rule.get(f.rule_id, 0) + 1
        by_severity[f.severity] = by_severity.get(f.severity, 0) + 1
    s = result.summary
    inventory = result.knob_inventory()  # first: building it may add an error
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "deadline-audit", "version": __version__},
        "findings": [finding_dict(f) for f in result.findings],
        "errors": [error_dict(e) for e in result.errors],
        "summary": {
            "files_scanned": s.files_scanned,
            "lines_scanned": s.lines_scanned,
            "findings": len(result.findings),
            "by_rule": dict(sorted(by_rule.items())),
            "by_severity": by_severity,
            "suppressed": s.suppressed,
            "baselined": s.baselined,
            "elapsed_s": round(s.elapsed_s, 3),
        },
        **({"inventory": inventory} if inventory is not None else {}),
    }


def render_json(result: AnalysisResult) -> str:
    return json.dumps(result_dict(result), indent=2, ensure_ascii=False) + "\n"
