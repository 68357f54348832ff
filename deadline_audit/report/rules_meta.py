"""Rule metadata for reporters: documentation from rules/ (rules_doc) when available,
else the fixed table of IDs, names and severities in config.RULES."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RuleMeta:
    id: str
    name: str
    severity: str
    summary: str = ""
    text: str = ""  # the whole markdown documentation
    sections: dict[str, str] = field(default_factory=dict)


def load_rule_meta() -> dict[str, RuleMeta]:
    from deadline_audit.config import RULES

    out = {rid: RuleMeta(rid, name, sev) for rid, (name, sev) in RULES.items()}
    try:
        from deadline_audit import rules_doc
    except ImportError:
        return out
    try:
        docs = rules_doc.load_rules()
    except Exception:  # documentation problems must not break reporting
        return out
    for d in docs:
        out[d.id] = RuleMeta(
            id=d.id,
            name=getattr(d, "name", "") or out.get(d.id, RuleMeta(d.id, "", "warning")).name,
            severity=getattr(d, "severity", "") or out.get(d.id, RuleMeta(d.id, "", "warning")).severity,
            summary=getattr(d, "summary", "") or "",
            text=getattr(d, "text", "") or "",
            sections=dict(getattr(d, "sections", {}) or {}),
        )
    return dict(sorted(out.items()))
