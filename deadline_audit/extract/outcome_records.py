"""Shared by the outcome marker passes (py_marks_outcomes, go_marks_outcomes): which of a
function's top-level statements are worth keeping as its `records` summary, i.e. may
record a state that a caller's timeout branch hands it (DA302 follows helpers by them)."""

from __future__ import annotations

import re
from functools import cache

from deadline_audit.facts import Expr

_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]{0,40}$")
_SQL = re.compile(r"(?i)\b(status|state|outcome|phase)\s*=")


def work_noun(word: str, nouns: set[str] | frozenset[str]) -> bool:
    """Is this lowercase word a work noun of the catalog, or a plain inflection of one:
    `jobs`, `restored`, `restorer`, `restoring`, `runner`, `exported`?"""
    if word in nouns:
        return True
    for suffix in ("s", "es", "d", "ed", "r", "er", "ers", "ing", "ings"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            stem = word[: -len(suffix)]
            if stem in nouns or stem + "e" in nouns or (len(stem) > 3 and stem[-1] == stem[-2] and stem[:-1] in nouns):
                return True
    return False


class WorkNouns:
    """`work_noun` memoized for one catalog's nouns: docstrings and doc comments repeat
    their words from function to function."""

    def __init__(self, nouns: tuple[str, ...]) -> None:
        self.nouns = set(nouns)
        self.memo: dict[str, bool] = {}

    def __call__(self, word: str) -> bool:
        hit = self.memo.get(word)
        if hit is None:
            hit = self.memo[word] = work_noun(word, self.nouns)
        return hit


@cache
def work_nouns(nouns: tuple[str, ...]) -> WorkNouns:
    """The memo for these nouns, one per catalog for the life of the process."""
    return WorkNouns(nouns)


def worth_recording(outcome: dict) -> bool:
    """An assignment of a constant-like value, a call that passes one (or SQL that sets a
    status), or a call whose name says it fails something."""
    expr = outcome.get("expr") or {}
    if outcome.get("how") == "assign":
        return _constant_like(expr) or expr.get("k") in ("obj", "call")
    if expr.get("k") != "call":
        return False
    if "fail" in str(expr.get("name", "")).lower():
        return True
    args = list(expr.get("args", ())) + list((expr.get("kw") or {}).values())
    return any(_constant_like(a) or (a.get("k") == "str" and _SQL.search(a.get("v", ""))) for a in args)


def _constant_like(expr: Expr) -> bool:
    k = expr.get("k")
    if k == "str":
        return bool(_IDENT.match(expr.get("v", "")))
    if k == "ref":
        last = str(expr.get("sym", "")).rsplit(".", 1)[-1]
        return last[:1].isupper()
    if k == "obj":
        return any(_constant_like(v) for v in (expr.get("fields") or {}).values())
    return False
