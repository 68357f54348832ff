"""Typing-only stubs left out of the libcst parse (SPEC §8).

An `@overload` signature is replaced at import time by the implementation that follows
it: it never runs, so nothing in it is a fact (its defaults repeat the implementation's).
SDKs carry many of them (openai-python: about 7 % of the lines its resources parse), and
libcst's parse costs per line. The stdlib tree is parsed first anyway (py_positions.py):
it finds the stubs, they are removed from it, and the text libcst parses has their lines
blanked, so every other line and column stays where it was and the two trees still pair.
"""

from __future__ import annotations

import ast
import re

_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")
_BODIES = ("body", "orelse", "finalbody")
_TRY_STAR = (ast.TryStar,) if hasattr(ast, "TryStar") else ()


def strip_stubs(tree: ast.Module, text: str, decorators: frozenset[str]) -> str | None:
    """Remove the stub definitions from `tree` (in place) and return `text` with their lines
    blanked (the first becomes `pass`, so a body left with only stubs stays a body);
    None when there is none."""
    if not decorators or not any(d in text for d in decorators):
        return None
    spans: list[tuple[int, int, int]] = []  # (first line, last line, column), 1-based lines
    _strip(tree, decorators, spans)
    if not spans:
        return None
    parts = _LINE_BREAK.split(text)  # line i (0-based) is parts[2 * i], its break parts[2 * i + 1]
    for first, last, col in spans:
        head = parts[2 * (first - 1)]
        parts[2 * (first - 1)] = head[:col] + "pass"
        for line in range(first, last):
            parts[2 * line] = ""
    return "".join(parts)


def _strip(node: ast.AST, decorators: frozenset[str], spans: list[tuple[int, int, int]]) -> None:
    """Stubs in the statement lists of `node` and of the blocks nested in it (classes,
    `if`, `try`), where overloads live; not inside functions."""
    for field in _BODIES:
        body = getattr(node, field, None)
        if not isinstance(body, list):
            continue
        for i, stmt in enumerate(body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if _is_stub(stmt, decorators):
                    first = stmt.decorator_list[0].lineno  # the `@` line; the indent is the def's
                    spans.append((first, stmt.end_lineno or stmt.lineno, stmt.col_offset))
                    body[i] = ast.Pass(lineno=first, col_offset=stmt.col_offset,
                                       end_lineno=first, end_col_offset=stmt.col_offset + 4)
            elif isinstance(stmt, (ast.ClassDef, ast.If, ast.Try, *_TRY_STAR)):
                _strip(stmt, decorators, spans)
                for handler in getattr(stmt, "handlers", ()):
                    _strip(handler, decorators, spans)


def _is_stub(fn: ast.FunctionDef | ast.AsyncFunctionDef, decorators: frozenset[str]) -> bool:
    for d in fn.decorator_list:
        name = d.id if isinstance(d, ast.Name) else d.attr if isinstance(d, ast.Attribute) else None
        if name in decorators:
            return True
    return False
