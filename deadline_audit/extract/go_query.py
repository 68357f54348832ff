"""One native query pass over a Go file for every consumer of tree-sitter Queries.

A QueryCursor pass costs about a third of the parse whatever it looks for: the cursor
walks the whole tree in C, and matching the patterns is the small part (measured on a
real tree: one pattern ≈ 0.14 s, eighteen patterns at once ≈ 0.20 s, the parse ≈ 0.4 s).
The marker passes and the extractor had one cursor per query, up to nine passes per file.
They now name their patterns as *groups* (`queries(catalog) -> {group: query text}` in a
pass module, see go_marks.py); the union of all groups runs once per file, on the first
request, and its matches are handed back per group, in the cursor's order.
"""

from __future__ import annotations

from typing import Any

import tree_sitter_go as tsgo
from tree_sitter import Language, Query, QueryCursor

GO = Language(tsgo.language())


class SharedQuery:
    """The compiled union of query groups, and which group owns each pattern."""

    def __init__(self, groups: dict[str, str]) -> None:
        owner: list[str] = []
        for name, text in groups.items():
            owner.extend([name] * Query(GO, text).pattern_count)
        self.query = Query(GO, "\n".join(groups.values()))
        if self.query.pattern_count != len(owner):  # a group's text must be whole patterns
            raise ValueError("query groups do not split into whole patterns")
        self.owner = owner
        self.groups = tuple(groups)


class FileMatches:
    """The matches of a SharedQuery over one tree, run on the first `get`."""

    __slots__ = ("shared", "root", "by_group")

    def __init__(self, shared: SharedQuery, root: Any) -> None:
        self.shared = shared
        self.root = root
        self.by_group: dict[str, list[dict[str, list[Any]]]] | None = None

    def get(self, group: str) -> list[dict[str, list[Any]]]:
        """The captures of each match of `group`'s patterns, in match order."""
        if self.by_group is None:
            owner = self.shared.owner
            by_group: dict[str, list[dict[str, list[Any]]]] = {name: [] for name in self.shared.groups}
            for index, caps in QueryCursor(self.shared.query).matches(self.root):
                by_group[owner[index]].append(caps)
            self.by_group = by_group
        return self.by_group[group]
