"""Finding fingerprints (SPEC §5): stable across unrelated edits, moved code and line shifts.

fingerprint = sha256(rule ID, path, the primary line's text with whitespace folded, the
flow's source node or "", occurrence index). The occurrence index tells identical
(rule, path, text, source) tuples in one file apart by their order (by line, then column);
the line number itself never enters the hash, so code that moves keeps its fingerprint.
The path is relative to the configuration root (where the baseline lives) when the file is
under it, so the fingerprint does not depend on the directory the tool was run from.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from deadline_audit.findings import Finding


def normalise_line(text: str) -> str:
    return " ".join(text.split())


def fingerprint_path(display: str, root: Path | None) -> str:
    if root is None:
        return display
    try:
        return (Path.cwd() / display).resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return display


def compute_fingerprint(rule_id: str, path: str, line_text: str, source: str | None, occurrence: int) -> str:
    h = hashlib.sha256()
    for part in (rule_id, path, normalise_line(line_text), source or "", str(occurrence)):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def assign_fingerprints(
    findings: list[Finding], read_lines: Callable[[str], list[str]], root: Path | None = None
) -> None:
    """Set `fingerprint` on every finding (in place)."""
    keyed = []
    for f in findings:
        try:
            lines = read_lines(f.location.path)
        except OSError:
            lines = []
        text = lines[f.location.line - 1] if 1 <= f.location.line <= len(lines) else ""
        path = fingerprint_path(f.location.path, root)
        keyed.append(((f.rule_id, path, normalise_line(text), f.source_node or ""), f))
    counts: dict[tuple, int] = {}
    for key, f in sorted(keyed, key=lambda kf: (kf[0], kf[1].location.line, kf[1].location.column)):
        n = counts.get(key, 0)
        counts[key] = n + 1
        f.fingerprint = compute_fingerprint(key[0], key[1], key[2], key[3] or None, n)
