"""Positions for libcst nodes without libcst's PositionProvider (SPEC §8).

libcst's `PositionProvider` re-generates the whole module's code to count characters and
costs more than the parse itself. The stdlib `ast` of the same source is ~6x cheaper and
carries positions; the extractor walks the libcst tree in source order (pre-order), so the
k-th libcst node of a kind (call, keyword, parameter, def, …) is the k-th `ast` node of
the same kind sorted by (start, -end). Each take is checked against a name the two trees
share (callee, keyword, parameter, def name); a mismatch or a count that does not add up
raises `Misaligned` and the caller falls back to `LibcstPositions` (correct, slow).

f-strings and match patterns are skipped on both sides (their inner positions differ
between parsers and carry nothing the extractor needs).
"""

from __future__ import annotations

import ast
from typing import Any

from deadline_audit.facts import Span


class Misaligned(Exception):
    pass


# kind -> ast node types
_KINDS: dict[type, str] = {
    ast.Call: "call",
    ast.keyword: "kw",
    ast.arg: "arg",
    ast.FunctionDef: "def",
    ast.AsyncFunctionDef: "def",
    ast.ClassDef: "class",
    ast.Lambda: "lambda",
    ast.Assign: "assign",
    ast.AnnAssign: "annassign",
    ast.AugAssign: "augassign",
    ast.For: "for",
    ast.AsyncFor: "for",
    ast.With: "with",
    ast.AsyncWith: "with",
    ast.NamedExpr: "namedexpr",
    ast.Subscript: "subscript",
    ast.Dict: "dict",
}
_SKIP = (ast.JoinedStr, ast.pattern)
_NUMBER_TYPES = (int, float, complex)
_LIST, _SCALAR = 0, 1
# Fields that never hold a node worth visiting: identifiers, flags, and the singleton
# `ctx` / operator nodes (shared by every walk over the stdlib tree: positions, marker passes).
LEAF_FIELDS = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "asname", "name", "level", "module",
                          "type_comment", "is_async", "simple", "conversion", "kind", "tag"})
_PLANS: dict[type, tuple[tuple[str, int], ...]] = {type(None): (), str: ()}


def _plan(node: ast.AST) -> tuple[tuple[str, int], ...]:
    """The child fields of a node type, in `_fields` order, and their shape."""
    cls = node.__class__
    if isinstance(node, _SKIP) or cls in (ast.Global, ast.Nonlocal):
        plan: tuple[tuple[str, int], ...] = ()
    else:
        fields = []
        for field in cls._fields:
            if field in LEAF_FIELDS:
                continue
            value = getattr(node, field, None)
            if isinstance(value, list):
                fields.append((field, _LIST))
            else:
                fields.append((field, _SCALAR))
        plan = tuple(fields)
    _PLANS[cls] = plan
    return plan


def _start_then_longest(n: Any) -> tuple[int, int, int, int]:
    return (n.lineno, n.col_offset, -(n.end_lineno or 0), -(n.end_col_offset or 0))


def _ast_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Name):
            return f.id
        if isinstance(f, ast.Attribute):
            return f.attr
        return None
    if isinstance(node, ast.keyword):
        return node.arg
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    return None


class AstPositions:
    """Spans from the stdlib `ast` of the same text, consumed in source order."""

    def __init__(self, text: str, tree: ast.Module | None = None) -> None:
        """`tree`: the stdlib tree of `text`, when the caller parsed it already."""
        if tree is None:
            tree = ast.parse(text)
        self.tree = tree  # kept for the marker passes (extract/py_marks.py)
        buckets: dict[str, list[Any]] = {k: [] for k in {*_KINDS.values(), "num"}}
        numbers = buckets["num"]
        kinds = _KINDS
        plans = _PLANS
        constant = ast.Constant
        number_types = _NUMBER_TYPES
        stack: list[ast.AST] = [tree]
        pop, push, extend = stack.pop, stack.append, stack.extend
        # the same nodes, in the same order, as `stack.extend(ast.iter_child_nodes(node))`,
        # minus leaves nothing is taken from (`ctx`, operators)
        while stack:
            node = pop()
            cls = node.__class__
            kind = kinds.get(cls)
            if kind is not None:
                buckets[kind].append(node)
            elif cls is constant:
                if node.value.__class__ in number_types:
                    numbers.append(node)
                continue
            plan = plans.get(cls)
            if plan is None:
                plan = _plan(node)
            for field, shape in plan:
                value = getattr(node, field)
                if shape == _LIST:
                    extend(value)  # a None in a list (`Dict.keys`, `kw_defaults`) has the empty plan
                elif value is not None:
                    push(value)
        for nodes in buckets.values():
            nodes.sort(key=_start_then_longest)
        self._buckets = buckets
        self._next = dict.fromkeys(buckets, 0)
        self._lines = text.split("\n")
        self._ascii = text.isascii()

    def take(self, kind: str, name: str | None = None) -> Span:
        i = self._next[kind]
        nodes = self._buckets[kind]
        if i >= len(nodes):
            raise Misaligned(f"more {kind} nodes in libcst than in ast")
        self._next[kind] = i + 1
        node = nodes[i]
        if name is not None and _ast_name(node) != name:
            raise Misaligned(f"{kind} #{i}: {name!r} vs {_ast_name(node)!r}")
        if self._ascii:  # columns are bytes + 1
            return Span(node.lineno, node.col_offset + 1, node.end_lineno or node.lineno, (node.end_col_offset or 0) + 1)
        return Span(node.lineno, self._col(node.lineno, node.col_offset),
                    node.end_lineno or node.lineno,
                    self._col(node.end_lineno or node.lineno, node.end_col_offset or 0))

    def finish(self) -> None:
        for kind, nodes in self._buckets.items():
            if self._next[kind] != len(nodes):
                raise Misaligned(f"{len(nodes) - self._next[kind]} {kind} nodes not visited")

    def _col(self, line: int, byte_col: int) -> int:
        """ast columns are UTF-8 byte offsets; ours are 1-based code points."""
        text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        if text.isascii():
            return byte_col + 1
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace")) + 1


class LibcstPositions:
    """The slow, always-correct fallback: libcst's own PositionProvider."""

    def __init__(self, positions: Any) -> None:
        self._positions = positions

    def take_node(self, node: Any) -> Span:
        r = self._positions[node]
        return Span(r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)
