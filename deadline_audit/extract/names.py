"""Test code, unless `include-tests`: the names a `.go` / `.py` test file spells, nothing else.

Findings in test code are not reported by default, and its values must not decide
production's (a test's 1 ms timeout passed to a production constructor is not a deployed
value), so such a file is not parsed. What production analysis still needs from it is
DA501's "does any code spell this knob": a test that sets or reads `WORKER_LEASE_TTL`
keeps the knob alive. Every quoted literal whose whole text is a name (`"LEASE_TTL"`,
`` `env:"LEASE_TTL"` ``'s inner quotes, `'lease.ttl'`) or an env assignment
(`"LEASE_TTL=5s"`) counts, as the full extractors count string literals; config file
names count as named. Over-counting a name only makes DA501 quieter.
"""

from __future__ import annotations

import re

from deadline_audit.extract.go_text import named_by_literal
from deadline_audit.facts import FileFacts

# the inside of a one-line '…', "…" or `…` literal; escapes are rare in names and only
# cut a literal short
_QUOTED = re.compile(rb"""(["'`])([^"'`\\\r\n]{1,200})\1""")


def extract_names(path: str, kind: str, source: bytes, module: str | None) -> FileFacts:
    """Pure: the names and config files a test file's literals spell."""
    facts = FileFacts(path=path, kind=kind, module=module or "",
                      lines=source.count(b"\n") + (0 if source.endswith(b"\n") or not source else 1))
    keys: dict[str, None] = {}
    files: dict[str, None] = {}
    for m in _QUOTED.finditer(source):
        named = named_by_literal(m.group(2).decode("utf-8", "replace").strip())
        if named is not None:
            (files if named[0] == "file" else keys)[named[1]] = None
    facts.config_keys_read = list(keys)
    facts.config_files_named = list(files)
    return facts
