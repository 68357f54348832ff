"""Redis Lua scripts that reset a key's expiry (DA103), for the Go extractor.

A hand-written Redis lock renews itself with a script that checks the token and resets
the expiry in one step:

    var refresh = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then
        return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)
    refresh.Run(ctx, rdb, []string{key}, token, ttl.Milliseconds())

The command that sets the expiry names the argument that carries the TTL (`ARGV[2]`);
the run passes it at that place after the keys. Such an argument is a lease site of the
catalog entry for the command (leases.toml `[go.scripts]`: `PEXPIRE` in milliseconds,
`EXPIRE` in seconds, both renewals). A script is read from a `NewScript` of the catalog
bound to a package variable, or given inline (or as a string constant) to `Eval`.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Any

from deadline_audit.catalog import Catalog, SiteSpec


class ScriptKnowledge:
    """What the catalog says about scripts, compiled once per catalog."""

    def __init__(self, catalog: Catalog) -> None:
        spec = catalog.file("leases").get("go", {}).get("scripts", {})
        self.constructors = tuple(spec.get("constructors", ()))
        self.run_methods = frozenset(spec.get("run_methods", ()))
        self.eval_methods = frozenset(spec.get("eval_methods", ()))
        self.methods = self.run_methods | self.eval_methods
        self.sites: dict[str, SiteSpec] = {}
        for command, entry in (spec.get("commands") or {}).items():
            site = catalog.site(entry.get("api", ""))
            if site is not None:
                self.sites[command.upper()] = site
        names = "|".join(re.escape(c) for c in self.sites) or "(?!)"
        self._pattern = re.compile(
            rf"""redis\.p?call\(\s*['"]({names})['"]\s*,\s*KEYS\[\d+\]\s*,\s*ARGV\[(\d+)\]""", re.I)

    def is_constructor(self, qualified: str) -> bool:
        return any(fnmatchcase(qualified, p) for p in self.constructors)

    def ttl_arguments(self, text: str) -> list[tuple[SiteSpec, int]]:
        """(site spec, index among the call's arguments) of each TTL the script sets:
        `ARGV[n]` is argument 3 + n - 1 of `Run(ctx, client, keys, args...)` and of
        `Eval(ctx, script, keys, args...)`."""
        return [(self.sites[m.group(1).upper()], 3 + int(m.group(2)) - 1) for m in self._pattern.finditer(text)]


def is_script_text(node: Any) -> bool:
    return node is not None and node.type in ("interpreted_string_literal", "raw_string_literal")
