"""Human-readable durations and counts shared by the reporters."""

from __future__ import annotations

from deadline_audit.duration_text import _num, format_seconds  # noqa: F401  (re-export)


def plural(n: int, word: str, plural_word: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (plural_word or word + 's')}"
