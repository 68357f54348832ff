"""`--format sarif`: SARIF 2.1.0 for code scanning (SPEC §5).

Artifact URIs are relative to the repository root (the nearest ancestor of the current
directory holding `.git`, else the current directory) with `uriBaseId` `%SRCROOT%`;
`originalUriBaseIds` says where that is. Columns are Unicode code points.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from deadline_audit import __version__
from deadline_audit.findings import AnalysisResult, Finding, Location
from deadline_audit.report.humanize import format_seconds
from deadline_audit.report.rules_meta import load_rule_meta

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
FINGERPRINT_KEY = "deadlineAudit/v1"


def repository_root(start: Path | None = None) -> Path:
    start = Path(os.path.abspath(start or Path.cwd()))
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return start


class _Uris:
    def __init__(self, srcroot: Path) -> None:
        self.srcroot = srcroot
        self.cwd = Path.cwd()

    def artifact(self, path: str) -> dict[str, Any]:
        absolute = Path(os.path.abspath(self.cwd / path))
        try:
            rel = absolute.relative_to(self.srcroot).as_posix()
        except ValueError:
            return {"uri": absolute.as_uri()}
        return {"uri": quote(rel), "uriBaseId": "%SRCROOT%"}

    def physical(self, loc: Location) -> dict[str, Any]:
        region: dict[str, Any] = {"startLine": max(1, loc.line), "startColumn": max(1, loc.column)}
        if loc.end_line is not None:
            region["endLine"] = max(loc.end_line, region["startLine"])
        if loc.end_column is not None:
            region["endColumn"] = max(1, loc.end_column)
        return {"artifactLocation": self.artifact(loc.path), "region": region}


def _rules(result: AnalysisResult) -> list[dict[str, Any]]:
    meta = load_rule_meta()
    for f in result.findings:  # a rule registered at run time (plugins, tests)
        if f.rule_id not in meta:
            from deadline_audit.report.rules_meta import RuleMeta

            meta[f.rule_id] = RuleMeta(f.rule_id, f.rule, f.severity)
    rules = []
    for rid, m in sorted(meta.items()):
        what = m.sections.get("What it does", "").strip()
        rule: dict[str, Any] = {
            "id": rid,
            "name": m.name,
            "shortDescription": {"text": m.summary or m.name},
            "fullDescription": {"text": what or m.summary or m.name},
            "defaultConfiguration": {"level": LEVELS.get(m.severity, "warning")},
            "properties": {"tags": ["timeouts", "reliability"], "severity": m.severity},
        }
        if m.text:
            rule["help"] = {"text": m.text, "markdown": m.text}
        else:
            rule["help"] = {"text": f"{rid} {m.name}: run `deadline-audit explain {rid}` for details."}
        rules.append(rule)
    return rules


def _step_message(step) -> str:
    text = step.label or step.node
    if step.value_seconds is not None:
        text += f" = {format_seconds(step.value_seconds)}"
    if step.default_seconds is not None:
        text += f" (default {format_seconds(step.default_seconds)})"
    if step.layers:
        layers = ", ".join(
            f"{l.path}:{l.line} = {l.raw or format_seconds(l.value_seconds)}{' (wins)' if l.wins else ''}"
            for l in step.layers
        )
        text += f" [{layers}]"
    return text


def _result(f: Finding, rule_index: dict[str, int], uris: _Uris) -> dict[str, Any]:
    text = f.message + (f"\nFix: {f.fix}" if f.fix else "")
    out: dict[str, Any] = {
        "ruleId": f.rule_id,
        "ruleIndex": rule_index[f.rule_id],
        "level": LEVELS.get(f.severity, "warning"),
        "message": {"text": text},
        "locations": [{"physicalLocation": uris.physical(f.location)}],
        "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint} if f.fingerprint else {},
    }
    if f.related:
        out["relatedLocations"] = [
            {"id": i, "physicalLocation": uris.physical(r.location), "message": {"text": r.message}}
            for i, r in enumerate(f.related, start=1)
        ]
    if f.flow:
        steps = []
        for step in f.flow:
            tfl: dict[str, Any] = {"location": {"message": {"text": _step_message(step)}}}
            if step.location is not None:
                tfl["location"]["physicalLocation"] = uris.physical(step.location)
            steps.append(tfl)
        out["codeFlows"] = [{"threadFlows": [{"locations": steps}]}]
    if not out["partialFingerprints"]:
        del out["partialFingerprints"]
    return out


def sarif_dict(result: AnalysisResult, *, srcroot: Path | None = None) -> dict[str, Any]:
    srcroot = Path(os.path.abspath(srcroot)) if srcroot else repository_root()
    uris = _Uris(srcroot)
    rules = _rules(result)
    rule_index = {r["id"]: i for i, r in enumerate(rules)}
    notifications = []
    for e in result.errors:
        phys: dict[str, Any] = {"artifactLocation": uris.artifact(e.path)}
        if e.line:
            phys["region"] = {"startLine": e.line, **({"startColumn": e.column} if e.column else {})}
        notifications.append(
            {
                "level": "warning",
                "message": {"text": f"{e.path}: {e.message}"},
                "locations": [{"physicalLocation": phys}],
                "descriptor": {"id": "input-error"},
            }
        )
    base_uri = srcroot.as_uri().rstrip("/") + "/"
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "deadline-audit",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": rules,
                    }
                },
                "invocations": [
                    {"executionSuccessful": True, "toolExecutionNotifications": notifications}
                ],
                "originalUriBaseIds": {"%SRCROOT%": {"uri": base_uri}},
                "columnKind": "unicodeCodePoints",
                "results": [_result(f, rule_index, uris) for f in result.findings],
            }
        ],
    }


def render_sarif(result: AnalysisResult, *, srcroot: Path | None = None) -> str:
    return json.dumps(sarif_dict(result, srcroot=srcroot), indent=2, ensure_ascii=False) + "\n"
