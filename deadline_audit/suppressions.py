"""Inline suppression comments (SPEC §6).

    x = client(timeout=30)  # deadline-audit: ignore[DA101] the lease is advisory here
    # deadline-audit: ignore[DA101,DA102] reason          (Python, YAML, TOML, env)
    <!-- deadline-audit: ignore[DA501] reason -->        (Markdown)
    // deadline-audit:ignore DA101 reason                (Go; `ignore[DA101]` works too)
    # deadline-audit: ignore                             (no IDs: every rule)

A comment suppresses findings on its own line; a comment that is alone on its line also
suppresses findings on the next line ("the line above"). A trailing comment after code
does not reach the next line, so it cannot silence more than its author saw.
Prefixes are accepted as IDs ("DA1"), like --select.
"""

from __future__ import annotations

import re

_COMMENT_LEADERS = ("#", "//", "<!--", "/*", ";")
_DIRECTIVE = re.compile(
    r"(?P<leader>#|//|<!--|/\*|;)\s*deadline-audit:\s*ignore"
    r"(?:\[(?P<bracket>[^\]]*)\]|(?P<spaced>(?:\s+DA\d*(?:\s*,\s*DA\d*)*)(?=\s|$|-->|\*/)))?",
    re.IGNORECASE,
)


class Directive:
    """One suppression comment: `rules` is None for "all rules"."""

    __slots__ = ("rules", "standalone")

    def __init__(self, rules: tuple[str, ...] | None, standalone: bool) -> None:
        self.rules = rules
        self.standalone = standalone

    def covers(self, rule_id: str) -> bool:
        if self.rules is None:
            return True
        rid = rule_id.upper()
        return any(r == "ALL" or rid.startswith(r) for r in self.rules)


def parse_line(text: str) -> Directive | None:
    """The suppression directive on one source line, if any."""
    if "deadline-audit" not in text.lower():
        return None
    m = _DIRECTIVE.search(text)
    if m is None:
        return None
    ids_text = m.group("bracket") if m.group("bracket") is not None else m.group("spaced")
    rules: tuple[str, ...] | None = None
    if ids_text is not None:
        ids = tuple(p.strip().upper() for p in ids_text.split(",") if p.strip())
        rules = ids or None
    standalone = text.lstrip().startswith(_COMMENT_LEADERS) and text.lstrip().find(m.group(0)) == 0
    return Directive(rules, standalone)


def is_suppressed(rule_id: str, line: int, lines: list[str]) -> bool:
    """Is a finding of `rule_id` on 1-based `line` suppressed by a comment on that line,
    or by a comment alone on the line above?"""
    if 1 <= line <= len(lines):
        d = parse_line(lines[line - 1])
        if d is not None and d.covers(rule_id):
            return True
    if 2 <= line <= len(lines) + 1:
        d = parse_line(lines[line - 2])
        if d is not None and d.standalone and d.covers(rule_id):
            return True
    return False
