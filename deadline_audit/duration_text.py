"""Durations in words (a leaf beside durations.py): 30 min, 120 s, 3.6 µs.

The graph, the checks and the reporters all say durations the same way; this module
imports nothing of the package, so none of them reaches up into report/ for it.
"""

from __future__ import annotations

import math


def _num(v: float) -> str:
    """At most 3 decimals, no trailing zeros, thousands separated: 1800 -> "1,800"."""
    r = round(v, 3)
    if r == int(r):
        return f"{int(r):,}"
    return f"{r:,.3f}".rstrip("0").rstrip(".")


def format_seconds(seconds: float | None) -> str:
    """30 min, 120 s, 2 h, 3.6 µs, 250 ms, 0 s; None -> "unresolved".

    Seconds below 10 minutes (and below an hour when not whole minutes), minutes up to
    48 hours unless a whole number of hours, whole days beyond 48 hours.
    """
    if seconds is None:
        return "unresolved"
    if math.isnan(seconds):
        return "unresolved"
    if math.isinf(seconds):
        return "no limit" if seconds > 0 else "-∞"
    sign = "-" if seconds < 0 else ""
    s = abs(seconds)
    if s == 0:
        return "0 s"
    if s < 1e-6:
        return f"{sign}{_num(s * 1e9)} ns"
    if s < 1e-3:
        return f"{sign}{_num(s * 1e6)} µs"
    if s < 1:
        return f"{sign}{_num(s * 1e3)} ms"
    if s < 600 or (s < 3600 and s % 60):
        return f"{sign}{_num(s)} s"
    if s >= 2 * 86400 and s % 86400 == 0:
        return f"{sign}{_num(s / 86400)} d"
    if s >= 3600 and s % 3600 == 0:
        return f"{sign}{_num(s / 3600)} h"
    if s < 48 * 3600:
        return f"{sign}{_num(s / 60)} min"
    return f"{sign}{_num(s / 3600)} h"
