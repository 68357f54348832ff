"""The rule registry: one module per rule, each a query over the timeout-flow graph.

A check is `fn(graph: TimeoutGraph, options: dict) -> Iterable[Finding]`. Rules without a
registered check are documented in `rules/` but reported as not implemented yet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib import import_module

from deadline_audit.findings import Finding

Check = Callable[..., Iterable[Finding]]

# rule id -> module under deadline_audit.checks that defines `check(graph, options)`
_BUILTIN = {
    "DA101": "da101",
    "DA201": "da201",
    "DA202": "da202",
    "DA102": "da102",
    "DA103": "da103",
    "DA301": "da301",
    "DA302": "da302",
    "DA401": "da401",
    "DA402": "da402",
    "DA403": "da403",
    "DA501": "da501",
    "DA502": "da502",
}

_extra: dict[str, Check] = {}


def register_check(rule_id: str, fn: Check) -> None:
    """Register a check from outside the package (tests use it for a test-only rule)."""
    _extra[rule_id] = fn


def unregister_check(rule_id: str) -> None:
    _extra.pop(rule_id, None)


def implemented_rules() -> set[str]:
    return set(_BUILTIN) | set(_extra)


def get_check(rule_id: str) -> Check | None:
    if rule_id in _extra:
        return _extra[rule_id]
    module = _BUILTIN.get(rule_id)
    if module is None:
        return None
    return import_module(f"deadline_audit.checks.{module}").check
