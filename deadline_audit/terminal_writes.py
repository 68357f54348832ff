"""Which calls are terminal-state writes (SPEC §4): catalog words applied to call names.

A finishing verb with a unit of work (`finishRun`, `runs.Finish`, `mark_job_failed`), a
state verb with a state noun and a unit of work (`SetRunStatus`, `record_job_outcome`), or
SQL that updates a status column. Words live in `rules/catalog/terminal_writes.toml`.
"""

from __future__ import annotations

import re
from deadline_audit.facts import CallFact, Expr

_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SQL_TABLE = re.compile(r"(?is)\s*update\s+(?:\w+\.)?\"?(\w+)")


def tokens(name: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(name)]


class TerminalWrites:
    def __init__(self, catalog) -> None:
        data = catalog.file("terminal_writes")
        names = data.get("names", {})
        self.finish = set(names.get("finish_verbs", ()))
        self.state_verbs = set(names.get("state_verbs", ()))
        self.state_nouns = set(names.get("state_nouns", ()))
        self.work = set(names.get("work_nouns", ()))
        self.never = set(names.get("not_terminal", ()))
        self.never_states = set(names.get("not_terminal_states", ()))
        self.sql = [re.compile(p) for p in data.get("sql", {}).get("patterns", ())]

    def name_of(self, call: CallFact) -> str:
        callee = call.callee
        if callee.get("k") in ("method", "ext"):
            return callee.get("name", "").rsplit(".", 1)[-1]
        return callee.get("sym", "").rsplit(".", 1)[-1]

    def is_terminal(self, call: CallFact) -> bool:
        if any(self._sql(a) for a in call.args):
            return True
        name_tokens = tokens(self.name_of(call))
        if not name_tokens or self.never & set(name_tokens):
            return False
        if any(a.get("k") == "str" and a.get("v", "").lower() in self.never_states
               for a in list(call.args) + list(call.kw.values())):
            return False
        nouns = set(name_tokens) | set(self._receiver_tokens(call.callee))
        if not any(self._noun(t, self.work) for t in nouns):
            return False
        if any(self._verb(t, self.finish) for t in name_tokens):
            return True
        return any(self._verb(t, self.state_verbs) for t in name_tokens) and \
            any(self._noun(t, self.state_nouns) for t in name_tokens)

    def noun(self, call: CallFact) -> str:
        """The unit of work the write is about, for messages ("run", "job")."""
        tables = [m.group(1) for a in call.args if a.get("k") == "str"
                  for m in [_SQL_TABLE.match(a.get("v", ""))] if m]
        for t in tokens(self.name_of(call)) + self._receiver_tokens(call.callee) + tables:
            if self._noun(t, self.work):
                return t[:-1] if t not in self.work else t
        return "work"

    def _sql(self, expr: Expr) -> bool:
        return expr.get("k") == "str" and any(p.search(expr.get("v", "")) for p in self.sql)

    @staticmethod
    def _receiver_tokens(callee: Expr) -> list[str]:
        out: list[str] = []
        x = callee.get("x")
        while isinstance(x, dict):
            name = x.get("name")
            if not isinstance(name, str):  # an `env` expr names its variable with an Expr
                name = str(x.get("sym") or "").rsplit(".", 1)[-1]
            out.extend(tokens(name))
            x = x.get("x")
        return out

    @staticmethod
    def _verb(token: str, verbs: set[str]) -> bool:
        return token in verbs or any(token.startswith(v) and token[len(v):] in ("s", "es", "d", "ed", "ing")
                                     for v in verbs)

    @staticmethod
    def _noun(token: str, nouns: set[str]) -> bool:
        return token in nouns or (token.endswith("s") and token[:-1] in nouns)
