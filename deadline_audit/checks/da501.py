"""DA501 dead-timeout-knob: a timeout or supervision knob set in an env file, a loaded
config file, or documented (documentation env files, Markdown), that no code reads.

Knob names (patterns), library/runtime names (exempt) and files that are not the
program's configuration are catalog data (rules/catalog/knobs.toml), extended by the
rule's options. What "read" means is knobs.py: name-based across the whole tree, case-
insensitive, precision first (a name the code spells anywhere counts as read).
"""

from __future__ import annotations

import re

from collections.abc import Iterable
from fnmatch import fnmatchcase

from deadline_audit.extract.markdown import is_env_name
from deadline_audit.findings import Finding, FlowStep, Location
from deadline_audit.graph import TimeoutGraph
from deadline_audit.knobs import (false_friends, knob_catalog, knob_index, knob_settings, loaded_config_files,
                                  matches)

_KEY_NAME = re.compile(r"[A-Za-z0-9_][\w-]*")

RULE_ID, RULE_NAME, SEVERITY = "DA501", "dead-timeout-knob", "warning"


def check(graph: TimeoutGraph, options: dict) -> Iterable[Finding]:
    idx = knob_index(graph)
    patterns, exempt, _ = knob_settings(graph, options)
    friends = false_friends(graph)
    seen: set[tuple[str, int, str]] = set()
    loaded = loaded_config_files(graph, idx, options)
    # a lowercase name in the docs documents a config key only when the program's own
    # config has it (a README's Kubernetes or CI snippet documents someone else's keys)
    config_leaves = {cv.key.rsplit(".", 1)[-1].lower() for p in loaded for cv in graph.files[p].config_values}

    def knob(name: str) -> bool:
        """An env knob: a knob name that no library or runtime owns."""
        return matches(name, patterns, friends) and not matches(name, exempt)

    def key_knob(dotted: str) -> bool:
        """A config key: judged by its last component (`exempt` lists env names). A key
        that is data rather than a name (a URL path, `"/how-tos/ttl/configure_ttl"`, or
        words with spaces) is an entry of a table the program reads whole, not a knob."""
        leaf = dotted.rsplit(".", 1)[-1]
        if not _KEY_NAME.fullmatch(leaf):
            return False
        return not leaf.isdigit() and matches(leaf, patterns, friends)

    def emit(name: str, loc: Location, how: str, node: str) -> Finding | None:
        key = (loc.path, loc.line, name)
        if key in seen:
            return None
        seen.add(key)
        message = (f"{name} is {how}, but no code reads it: changing it changes nothing. "
                   f"Read it where the limit is applied, or delete it and its documentation.")
        return Finding(RULE_ID, RULE_NAME, SEVERITY, message, loc,
                       flow=[FlowStep(node=node, label=name, location=loc)])

    foreign = _foreign_code_roots(graph)
    history = list(knob_catalog(graph).get("not_documentation", ()))
    for path, facts in sorted(graph.files.items()):
        if facts.kind in ("env", "markdown") and _under(path, foreign):
            continue  # code we do not analyse (a JS or Rust app) may read these names
        if facts.kind == "env":
            how = {"layer": "set in this env layer", "profile": f"set in the {facts.profile} profile",
                   "doc": "documented in this example env file"}.get(facts.env_role or "", "set in this env file")
            items = [(v.name, v.span) for v in facts.env_values] + [(m.name, m.span) for m in facts.knob_mentions]
            for name, span in items:
                if knob(name) and not idx.env_read(name):
                    found = emit(name, Location(path, span.line, span.column, span.end_line, span.end_column),
                                 how, f"env:{name}")
                    if found:
                        yield found
        elif facts.kind == "markdown":
            if any(fnmatchcase(path.lower(), g) for g in history):
                continue
            for m in facts.knob_mentions:
                name = m.name
                env = is_env_name(name)
                if not (knob(name) if env else key_knob(name)) or name in idx.constants:
                    continue
                if not env and name.rsplit(".", 1)[-1].lower() not in config_leaves:
                    continue  # a lowercase name no loaded config file has: an API parameter, not a knob
                read = idx.env_read(name) if env else idx.key_read(name)
                if not read:
                    found = emit(name, Location(path, m.span.line, m.span.column, m.span.end_line, m.span.end_column),
                                 "documented here", f"env:{name}" if env else f"cfg:*#{name}")
                    if found:
                        yield found
    for path in loaded:
        for cv in graph.files[path].config_values:
            if not key_knob(cv.key) or idx.key_read(cv.key):
                continue
            found = emit(cv.key, Location(path, cv.span.line, cv.span.column, cv.span.end_line, cv.span.end_column),
                         "set in this config file, which the program loads", f"cfg:{path}#{cv.key}")
            if found:
                yield found


def _foreign_code_roots(graph: TimeoutGraph) -> list[str]:
    """Folders holding an app in a language the analyser does not read (catalog
    `foreign_manifests`: a manifest with a runtime dependency table)."""
    manifests = knob_catalog(graph).get("foreign_manifests", {})
    roots = []
    for path, facts in graph.files.items():
        name = path.rsplit("/", 1)[-1]
        prefix = manifests.get(name)
        if prefix and any(cv.key.startswith(prefix) for cv in facts.config_values):
            roots.append(path[: -len(name)])
    return roots


def _under(path: str, roots: list[str]) -> bool:
    return any(path.startswith(root) for root in roots)
