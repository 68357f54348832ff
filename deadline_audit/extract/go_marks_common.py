"""Shared by the Go marker passes of DA102/DA103: which function a node sits in, and
the few expressions a pass must hand to the graph (a mux, a handler, a client), named
the way the Go extractor names symbols (facts.py: `sym:go:<ip>.<Func>.<local>`)."""

from __future__ import annotations

import bisect
from typing import Any

from deadline_audit.extract.go_text import Positions, ascii_text, default_alias, unquote
from deadline_audit.facts import Expr, FileFacts, FunctionFact


class GoMarkContext:
    """One file's functions by position, its imports and its declared symbols."""

    def __init__(self, root: Any, source: bytes, facts: FileFacts, pos: Positions | None = None) -> None:
        self.src = source
        self.facts = facts
        self.pos = pos if pos is not None else Positions(source)
        self.at = self.pos.at  # per-instance fast paths, as in the extractor
        if source.isascii():
            self.text = ascii_text(source.decode("ascii"))
        self.pfx = f"sym:go:{facts.module or ''}."
        fns = sorted(facts.functions, key=lambda f: (f.span.line, f.span.column))
        self._starts = [(f.span.line, f.span.column) for f in fns]
        self._fns = fns
        self.by_start = {(f.span.line, f.span.column): f for f in fns}
        self.by_sym = {f.sym: f for f in fns}
        self._decls: set[str] | None = None
        self._typed: dict[str, str] | None = None
        self.imports = _imports(root, self)

    def text(self, node: Any) -> str:  # replaced per instance for an all-ASCII source
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def function_at(self, node: Any) -> FunctionFact | None:
        """The innermost function whose span contains `node`."""
        line, col = self.at(node)
        i = bisect.bisect_right(self._starts, (line, col)) - 1
        while i >= 0:
            fn = self._fns[i]
            s = fn.span
            if (s.end_line, s.end_column) >= (line, col):
                return fn
            i -= 1
        return None

    def decls(self) -> set[str]:
        if self._decls is None:
            self._decls = {d.sym for d in self.facts.decls}
        return self._decls

    def typed_locals(self) -> dict[str, str]:
        """Symbol → declared type of every typed local and parameter of the file."""
        if self._typed is None:
            self._typed = {d.sym: d.type for d in self.facts.decls if d.type and d.kind in ("local", "param")}
        return self._typed

    def name_ref(self, name: str, fn: FunctionFact | None) -> Expr:
        """An identifier as the extractor names it: a local of the innermost function
        (or an enclosing one) that declares it, else a package-level symbol."""
        decls = self.decls()
        while fn is not None:
            sym = f"{fn.sym}.{name}"
            if sym in decls:
                return {"k": "ref", "sym": sym}
            fn = self.by_sym.get(fn.enclosing) if fn.enclosing else None
        return {"k": "ref", "sym": self.pfx + name}

    def expr(self, node: Any, fn: FunctionFact | None, depth: int = 0) -> Expr:
        """A small expression: identifiers, `pkg.Name`, `x.f`, calls, func literals."""
        t = node.type
        if depth > 8:
            return {"k": "unknown", "text": self.text(node)[:80]}
        if t == "identifier":
            return self.name_ref(self.text(node), fn)
        if t == "selector_expression":
            operand, field = node.child_by_field_name("operand"), node.child_by_field_name("field")
            name = self.text(field)
            if operand.type == "identifier" and self.text(operand) in self.imports:
                ip = self.imports[self.text(operand)]
                return {"k": "ref", "sym": f"sym:go:{ip}.{name}"}
            return {"k": "field", "x": self.expr(operand, fn, depth + 1), "name": name}
        if t in ("parenthesized_expression", "unary_expression") and node.named_children:
            return self.expr(node.named_children[-1], fn, depth + 1)
        if t == "func_literal":
            lit = self.by_start.get(tuple(self.at(node)))
            return {"k": "fnref", "sym": lit.sym} if lit else {"k": "unknown", "text": "func literal"}
        if t == "call_expression":
            callee = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            arg_nodes = [a for a in (args.named_children if args is not None else []) if a.type != "comment"]
            return {"k": "call", "fn": self.callee(callee, fn, depth + 1),
                    "args": [self.expr(a, fn, depth + 1) for a in arg_nodes], "at": self.at(node)}
        return {"k": "unknown", "text": self.text(node)[:80]}

    def callee(self, node: Any, fn: FunctionFact | None, depth: int) -> Expr:
        if node.type == "identifier":
            ref = self.name_ref(self.text(node), fn)
            return {"k": "fnref", "sym": ref["sym"]} if ref["sym"].startswith(self.pfx) else ref
        if node.type == "selector_expression":
            operand, field = node.child_by_field_name("operand"), node.child_by_field_name("field")
            name = self.text(field)
            if operand.type == "identifier" and self.text(operand) in self.imports:
                # a module function or an external one: the graph resolves only the former
                return {"k": "fnref", "sym": f"sym:go:{self.imports[self.text(operand)]}.{name}"}
            return {"k": "method", "x": self.expr(operand, fn, depth + 1), "name": name}
        return self.expr(node, fn, depth)

    def mark(self, fn: FunctionFact | None, marker: dict[str, Any]) -> None:
        if fn is not None:
            fn.markers.append(marker)


def top_level_specs(root: Any, decl_type: str, spec_type: str) -> list[Any]:
    """The `spec_type` nodes of the file's top-level `decl_type` declarations, whether
    written alone or grouped in parentheses (`import (…)`, `var (…)`)."""
    found = []
    for decl in root.named_children:
        if decl.type != decl_type:
            continue
        stack = list(decl.named_children)
        while stack:
            node = stack.pop()
            if node.type == spec_type:
                found.append(node)
            else:
                stack.extend(node.named_children)
    return found


def _imports(root: Any, ctx: GoMarkContext) -> dict[str, str]:
    """Import alias → import path, from the top-level import declarations."""
    found: dict[str, str] = {}
    for node in top_level_specs(root, "import_declaration", "import_spec"):
        path_node = node.child_by_field_name("path")
        name_node = node.child_by_field_name("name")
        path = unquote(ctx.text(path_node)) if path_node is not None else ""
        alias = ctx.text(name_node) if name_node is not None else default_alias(path)
        if alias not in ("_", "."):
            found[alias] = path
    return found

