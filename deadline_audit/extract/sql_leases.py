"""Row leases kept in SQL (DA103), for the Go and Python extractors.

A lease table is renewed by a statement that pushes the row's expiry to now plus the TTL:

    UPDATE partitions SET lease_until = now() + make_interval(secs => $3)
     WHERE partition = $1 AND owner = $2

run with the TTL bound to a placeholder (`pool.Exec(ctx, renewSQL, part, owner,
ttl.Seconds())`). The bound argument is a lease site of the catalog entry for the unit the
statement gives it (leases.toml `[sql]`). A statement that also takes a free or expired row
(`… OR lease_until < now()`, `IS NULL`, an INSERT) acquires the lease as well: a loop
running it retries taking the lease, it does not renew one (`acquires`).

Placeholders: `$n` (PostgreSQL drivers), `?` (MySQL, SQLite: counted from the left),
`:name` and `%(name)s` (SQLAlchemy, psycopg: a keyword of the parameters).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deadline_audit.catalog import Catalog, SiteSpec, sql_now_pattern
from deadline_audit.facts import Expr


def _param(i: int) -> str:
    """A placeholder, its groups numbered (a pattern may not repeat a group's name)."""
    return rf"(?:\$(?P<num{i}>\d+)|\?|:(?P<name{i}>[A-Za-z_]\w*)|%\((?P<pyname{i}>\w+)\)s|%s)"


def _second(i: int) -> str:
    return rf"interval\s*'1\s*(?P<unit{i}>second|millisecond)s?'"


# what is added to now(): the amount forms real schemas use
_AMOUNTS = (
    rf"make_interval\(\s*secs\s*(?:=>|:=)\s*{_param(0)}(?:\s*::\s*\w+)?\s*\)",
    rf"{_param(1)}(?:\s*::\s*\w+)?\s*\*\s*{_second(1)}",
    rf"{_second(2)}\s*\*\s*{_param(2)}",
    rf"\(\s*{_param(3)}\s*\|\|\s*'\s*(?P<unit3>second|millisecond)s?'\s*\)\s*::\s*interval",
    # an interval bound as it is (`now() + $2`, `now() + $2::interval`): a Go Duration, a timedelta
    rf"(?P<unit5>){_param(5)}(?:\s*::\s*interval)?(?!\s*(?:[*|/+-]|::))",
)


def _set_pattern(now: str) -> re.Pattern[str]:
    return re.compile(
        rf"(?:(?P<col>\w+)\s*=\s*)?(?:{now}\s*\+\s*\(?\s*(?:{'|'.join(f'(?:{a})' for a in _AMOUNTS)})"
        rf"|date_add\(\s*{now}\s*,\s*interval\s+{_param(4)}\s+(?P<unit4>second|microsecond)\s*\))",
        re.IGNORECASE)


_PLACEHOLDER = re.compile(r"\$\d+|\?|(?<!:):[A-Za-z_]\w*|%\(\w+\)s|%s")
_STATEMENT = re.compile(r"^\s*(?:with\b.*?\)\s*)?(update|insert)\b", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class LeaseBind:
    """The TTL a lease statement binds: by position among the binds (0-based) or by name."""

    spec: SiteSpec
    index: int | None
    name: str | None
    acquires: bool


class SqlLeaseKnowledge:
    """The catalog's `[sql]` table, compiled once per catalog."""

    def __init__(self, catalog: Catalog, lang: str) -> None:
        spec = catalog.file("leases").get("sql", {})
        self.methods = frozenset(spec.get(f"{lang}_methods", ()))
        self.builder_methods = frozenset(spec.get("builder_methods", ()))
        self.amount_keywords = tuple(spec.get("builder_amount_keywords", ()))
        self.acquire_lookups = frozenset(spec.get("acquire_lookups", ()))
        self.clocks = frozenset(f.lower() for f in (*spec.get("now_functions", ()), *spec.get("clocks", ())))
        prefix = "go:" if lang == "go" else "py:"
        self.sites = {unit: catalog.site(prefix + api) for unit, api in (spec.get("sites") or {}).items()}
        self._set = _set_pattern(sql_now_pattern(spec.get("now_functions", ())))

    def binds(self, text: str) -> list[LeaseBind]:
        """The TTLs a statement sets a lease column from (none when it is no lease reset)."""
        if "(" not in text or not _STATEMENT.match(text):
            return []
        found = []
        for m in self._set.finditer(text):
            groups = {k: v for k, v in m.groupdict().items() if v is not None}
            unit = next((v or "interval" for k, v in groups.items() if k.startswith("unit")), "second").lower()
            spec = self.sites.get("ms" if unit == "millisecond" else "us" if unit == "microsecond"
                                  else "interval" if unit == "interval" else "s")
            if spec is None:
                continue
            num = next((v for k, v in groups.items() if k.startswith("num")), None)
            name = next((v for k, v in groups.items() if k.startswith(("name", "pyname"))), None)
            index = None
            if num is not None:
                index = int(num) - 1
            elif name is None:  # `?` / `%s`: the placeholders up to this one, counted
                index = len(_PLACEHOLDER.findall(text[:m.end()])) - 1
            found.append(LeaseBind(spec, index, name, _acquires(text, m.group("col"))))
        return found


def _acquires(text: str, column: str | None) -> bool:
    """Does the statement also take a free or expired row (so a loop running it retries
    an acquisition rather than renewing a held lease)?"""
    if re.match(r"^\s*insert\b", text, re.IGNORECASE) or column is None:
        return True
    col = re.escape(column)
    # a queue claim (`… WHERE id = (SELECT … FOR UPDATE SKIP LOCKED …)`) takes a new row
    return bool(re.search(rf"{col}\s*(?:<=?|is\s+null)|(?:>=?)\s*[\w.]*{col}\b|\bowner\w*\s+is\s+null"
                          rf"|\bskip\s+locked\b", text, re.IGNORECASE))


def now_plus_amount(expr: Expr, clocks: frozenset[str]) -> Expr | None:
    """`<clock>() + amount` as a query builder or ORM writes it (`func.now() +
    func.make_interval(secs=ttl)`, `timezone.now() + timedelta(seconds=…)`): the amount,
    else None. `clocks`: lower-case last names of the calls that give the current time."""
    args = expr.get("args") or [] if expr.get("k") == "op" and expr.get("op") == "add" else []
    if len(args) < 2 or args[0].get("k") != "call":
        return None
    fn = args[0].get("fn") or {}
    name = str(fn.get("name") or fn.get("sym") or "").rsplit(".", 1)[-1].lower()
    if not name or name not in clocks:
        return None
    return args[1] if len(args) == 2 else {"k": "op", "op": "add", "args": args[1:]}
