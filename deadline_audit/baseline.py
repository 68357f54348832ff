"""Baseline files: the fingerprints of accepted findings, so CI fails only on new ones.

Format (JSON): {"schema_version": 1, "tool": "deadline-audit",
"findings": [{"fingerprint": "...", "rule_id": "DA101", "path": "...", "message": "..."}]}.
Only fingerprints are compared; the other keys help a reviewer read the file.
"""

from __future__ import annotations

import json
from pathlib import Path

from deadline_audit.findings import Finding


class BaselineError(Exception):
    pass


def read_baseline(path: Path) -> set[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise BaselineError(f"{path}: cannot read baseline: {e.strerror or e}") from e
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BaselineError(f"{path}: not a deadline-audit baseline (invalid JSON: {e})") from e
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise BaselineError(f"{path}: not a deadline-audit baseline (no `findings` list)")
    out = set()
    for entry in data["findings"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("fingerprint"), str):
            raise BaselineError(f"{path}: baseline entry without a `fingerprint`: {entry!r}")
        out.add(entry["fingerprint"])
    return out


def write_baseline(path: Path, findings: list[Finding]) -> None:
    entries = [
        {"fingerprint": f.fingerprint, "rule_id": f.rule_id, "path": f.location.path, "message": f.message}
        for f in findings
    ]
    payload = {"schema_version": 1, "tool": "deadline-audit", "findings": entries}
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def apply_baseline(findings: list[Finding], fingerprints: set[str]) -> tuple[list[Finding], int]:
    """Findings not in the baseline, and how many were baselined."""
    kept = [f for f in findings if f.fingerprint not in fingerprints]
    return kept, len(findings) - len(kept)
