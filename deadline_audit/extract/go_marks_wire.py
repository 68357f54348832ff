"""DA401/DA402 marks on Go files: clamps and fallbacks written as `if` statements.

`min(x, MAX)` needs no mark: the extractor already gives `{"k": "op", "op": "min"}` with
its position. What the expression language cannot hold is a guarded assignment:

- `FunctionFact.markers += {"m": "ceiling", "form": "if", "subject": Expr, "bound": Expr,
  "line", "col", "assign": [line, col] | None, "ret": int | None}` for
  `if x > MAX { x = MAX }` (also `>=`, `MAX < x`) and `if x > MAX { return MAX }`;
- `FunctionFact.markers += {"m": "fallback", "form": "if", "trigger": "zero",
  "subject": Expr, "line", "col", "assign": [line, col] | None, "ret": int | None}` for
  `if x <= 0 { x = D }` (also `== 0`, `< 1`, `x == ""`) and `if x <= 0 { return D }`, and
  `d := D; if x > 0 { d = f(x) }` (`assign`: the statement giving D).

- `FunctionFact.markers += {"m": "case", "switch": [line, col], "subject": Expr,
  "values": [Expr] | None, "line", "end"}` for each clause of an expression `switch`
  (`values` None: the `default:` clause), so that a clamp written under
  `case CmdUpload:` applies only to payloads whose discriminator says so.

- `FunctionFact.markers += {"m": "payload", "items": [[key, Expr]], "line", "col"}` for a
  map literal with string keys (`map[string]any{"type": "backup", "timeout_seconds": 600}`):
  a wire payload candidate, as a Python dict literal is.

- `FunctionFact.markers += {"m": "key_set", "name": local, "key": k, "line", "col"}` for
  `body["timeout_seconds"] = t`: a key a map payload gets after its literal.

`assign` is the position of the guarded assignment (the extractor's `Binding` there holds
the bound / default value with its full expression); `ret` is the index of the guarded
`return` among the function's own returns (`FunctionFact.returns`, source order).
"""

from __future__ import annotations

import re
from typing import Any

from deadline_audit.catalog import Catalog
from deadline_audit.extract.go_marks_common import GoMarkContext
from deadline_audit.facts import FileFacts

_QUERIES = {
    # only the comparisons a clamp or a fallback tests, in an `if` without init or else
    # (`if err != nil` is the commonest `if` and never one)
    "wire.ifs": """
        (if_statement !initializer !alternative
                      condition: (binary_expression left: (_) @l operator: ["<" "<=" ">" ">=" "=="] right: (_) @r) @cond
                      consequence: (block) @body) @if
    """,
    # `if err != nil || d > maxD { return maxD }`: a clamp that also covers a failed parse
    "wire.or_ifs": """
        (if_statement !initializer !alternative
                      condition: (binary_expression operator: "||"
                                  right: (binary_expression left: (_) @l operator: [">" ">="] right: (_) @r) @cond)
                      consequence: (block) @body) @if
    """,
    "wire.switches": "(expression_switch_statement value: (_) @subject) @switch",
    "wire.maps": "(composite_literal type: (map_type) body: (literal_value) @body) @lit",
    # `body["timeout_seconds"] = t` after a map literal: a key the payload gets later
    "wire.key_sets": """
        (assignment_statement
            left: (expression_list . (index_expression operand: (identifier) @name
                                                       index: (interpreted_string_literal) @key) .)) @assign
    """,
}
_ZERO = {"0", '""', "0.0"}


def queries(catalog: Catalog) -> dict[str, str]:
    return _QUERIES


def run(tree: Any, source: bytes, facts: FileFacts, catalog: Catalog) -> None:
    if b"if " not in source or not facts.functions:
        return
    ctx = tree.context()
    if b"switch" in source:
        _cases(tree, ctx)
    if b"map[string]" in source:
        _map_payloads(tree, ctx)
        _key_sets(tree, ctx)
    orders: dict[int, list[int]] = {}  # function node id → start bytes of its valued returns
    for caps in [*tree.matches("wire.ifs"), *tree.matches("wire.or_ifs")]:
        node, cond, body = caps["if"][0], caps["cond"][0], caps["body"][0]
        if node.child_by_field_name("alternative") is not None or node.child_by_field_name("initializer") is not None:
            continue
        stmts = [c for c in body.named_children if c.type != "comment"]
        if len(stmts) == 1 and stmts[0].type == "statement_list":
            stmts = [c for c in stmts[0].named_children if c.type != "comment"]
        if len(stmts) > 1 and all(st.type == "expression_statement" for st in stmts[:-1]):
            stmts = stmts[-1:]  # `slog.Warn("clamping", …); x = MAX`: a log line before the clamp
        if len(stmts) != 1:
            continue
        op = _operator(cond, ctx)
        left, right = caps["l"][0], caps["r"][0]
        lt, rt = ctx.text(left).strip(), ctx.text(right).strip()
        fn = ctx.function_at(node)
        if fn is None:
            continue
        stmt = stmts[0]
        line, col = ctx.at(node)
        if op in (">", ">=", "<", "<="):
            subject, bound = (left, right) if op in (">", ">=") else (right, left)
            st, bt = ctx.text(subject).strip(), ctx.text(bound).strip()
            target = _guarded(stmt, ctx, node, fn, orders)
            if target is not None and bt not in _ZERO and _is_bound(bound) and (
                    _plain(target[0]) == _plain(bt) and (target[1] is None or _plain(target[1]) == _plain(st))):
                mark = {"m": "ceiling", "form": "if", "subject": ctx.expr(subject, fn),
                        "bound": ctx.expr(bound, fn), "line": line, "col": col,
                        "assign": target[2], "ret": target[3]}
                if stmt.type == "assignment_statement":
                    # the value itself: a field of a struct declared in another file is no
                    # binding this file can name (`c.Upstream.RPCDeadline = Duration(max)`)
                    mark["value"] = ctx.expr(stmt.child_by_field_name("right").named_children[0], fn)
                fn.markers.append(mark)
                continue
        if (op in ("<=", "==") and rt in _ZERO) or (op == "<" and rt == "1"):
            target = _guarded(stmt, ctx, node, fn, orders)
            if target is not None and (target[1] is None or target[1] == lt):
                fn.markers.append({"m": "fallback", "form": "if", "trigger": "zero", "subject": ctx.expr(left, fn),
                                   "line": line, "col": col, "assign": target[2], "ret": target[3]})
        elif op == ">" and rt in _ZERO:
            # `d := D; if x > 0 { d = f(x) }`: d keeps its default D when x is zero
            target = _guarded(stmt, ctx, node, fn, orders)
            default = _default_before(node, target[1], ctx) if target is not None and target[1] else None
            if default is not None and lt in target[0]:
                fn.markers.append({"m": "fallback", "form": "if", "trigger": "zero", "subject": ctx.expr(left, fn),
                                   "line": line, "col": col, "assign": default, "ret": None})


_CONVERSION = re.compile(r"^(?:[\w]+\.)?[A-Z]\w*\((.*)\)$", re.S)
_ACCESSOR = re.compile(r"^(.*\w)\.[A-Z]\w*\(\)$", re.S)


def _plain(text: str) -> str:
    """The value a clamp compares or assigns, without a type conversion or an accessor of
    a defined type (`c.X.Std() > max` then `c.X = Duration(max)`: x against max)."""
    text = text.strip()
    for _ in range(2):
        m = _CONVERSION.match(text) or _ACCESSOR.match(text)
        if m is None:
            break
        text = m.group(1).strip()
    return text


def _cases(tree: Any, ctx: GoMarkContext) -> None:
    for caps in tree.matches("wire.switches"):
        switch, subject = caps["switch"][0], caps["subject"][0]
        fn = ctx.function_at(switch)
        if fn is None:
            continue
        where = ctx.at(switch)
        subject_expr = ctx.expr(subject, fn)
        for clause in switch.named_children:
            if clause.type not in ("expression_case", "default_case"):
                continue
            values = None
            if clause.type == "expression_case":
                listed = clause.child_by_field_name("value")
                nodes = [n for n in (listed.named_children if listed is not None else []) if n.type != "comment"]
                values = [_case_value(n, ctx, fn) for n in nodes]
            fn.markers.append({"m": "case", "switch": where, "subject": subject_expr, "values": values,
                               "line": clause.start_point[0] + 1, "end": clause.end_point[0] + 1})


def _map_payloads(tree: Any, ctx: GoMarkContext) -> None:
    for caps in tree.matches("wire.maps"):
        lit, body = caps["lit"][0], caps["body"][0]
        fn = ctx.function_at(lit)
        if fn is None:
            continue
        items = []
        for element in body.named_children:
            if element.type != "keyed_element" or len(element.named_children) != 2:
                continue
            key, value = (c.named_children[0] if c.type == "literal_element" and c.named_children else c
                          for c in element.named_children)
            if key.type not in ("interpreted_string_literal", "raw_string_literal"):
                continue
            items.append([ctx.text(key)[1:-1], _value(value, ctx, fn)])
        if len(items) >= 2:
            line, col = ctx.at(lit)
            fn.markers.append({"m": "payload", "items": items, "line": line, "col": col})


def _key_sets(tree: Any, ctx: GoMarkContext) -> None:
    for caps in tree.matches("wire.key_sets"):
        node = caps["assign"][0]
        if ctx.text(node.child_by_field_name("operator") or node).strip() not in ("=", ""):
            continue
        fn = ctx.function_at(node)
        if fn is None:
            continue
        line, col = ctx.at(node)
        fn.markers.append({"m": "key_set", "name": ctx.text(caps["name"][0]), "key": ctx.text(caps["key"][0])[1:-1],
                           "line": line, "col": col})


def _value(node: Any, ctx: GoMarkContext, fn, depth: int = 0) -> dict:
    """A payload value: literals and simple arithmetic here, names as the extractor names them."""
    t = node.type
    if t in ("int_literal", "float_literal"):
        try:
            return {"k": "num", "v": float(ctx.text(node).replace("_", "")), "u": None, "at": ctx.at(node)}
        except ValueError:
            return {"k": "unknown", "text": ctx.text(node)[:80]}
    if t in ("interpreted_string_literal", "raw_string_literal"):
        return {"k": "str", "v": ctx.text(node)[1:-1], "at": ctx.at(node)}
    if t == "binary_expression" and depth < 4:
        op = {"*": "mul", "+": "add", "-": "sub", "/": "div"}.get(ctx.text(node.child_by_field_name("operator")))
        if op:
            return {"k": "op", "op": op, "args": [_value(node.child_by_field_name("left"), ctx, fn, depth + 1),
                                                  _value(node.child_by_field_name("right"), ctx, fn, depth + 1)],
                    "at": ctx.at(node)}
    return ctx.expr(node, fn)


def _case_value(node: Any, ctx: GoMarkContext, fn) -> dict:
    if node.type in ("interpreted_string_literal", "raw_string_literal"):
        return {"k": "str", "v": ctx.text(node)[1:-1]}
    return ctx.expr(node, fn)


def _operator(cond: Any, ctx: GoMarkContext) -> str:
    op = cond.child_by_field_name("operator")
    return ctx.text(op) if op is not None else ""


def _is_bound(node: Any) -> bool:
    """A ceiling is a name, a selector or a constant expression, not a call result."""
    return node.type in ("identifier", "selector_expression", "binary_expression", "int_literal",
                         "float_literal", "parenthesized_expression")


def _guarded(stmt: Any, ctx: GoMarkContext, if_node: Any, fn,
             orders: dict[int, list[int]]) -> tuple[str, str | None, list[int] | None, int | None] | None:
    """(value text, assigned name or None for a return, assignment position, return index)."""
    if stmt.type == "assignment_statement":
        left, right = stmt.child_by_field_name("left"), stmt.child_by_field_name("right")
        if left is None or right is None or len(left.named_children) != 1 or len(right.named_children) != 1:
            return None
        if ctx.text(stmt).split("=", 1)[0].strip()[-1:] in "+-*/":
            return None
        return ctx.text(right.named_children[0]).strip(), ctx.text(left.named_children[0]).strip(), ctx.at(stmt), None
    if stmt.type == "return_statement":
        values = [c for c in stmt.named_children if c.type != "comment"]
        if len(values) != 1:
            return None
        value = values[0]
        if value.type == "expression_list":
            if len(value.named_children) != 1:
                return None
            value = value.named_children[0]
        index = _return_index(stmt, orders)
        return ctx.text(value).strip(), None, None, index
    return None


def _default_before(if_node: Any, name: str, ctx: GoMarkContext) -> list[int] | None:
    """The position of the statement before the `if`, in the same block, that last gives
    `name` its default (`d := D`, `d = D`, `var d = D`; statements that do not touch `d` may
    stand between), or None."""
    word = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
    prev = if_node.prev_named_sibling
    while prev is not None:
        if prev.type != "comment":
            text = ctx.text(prev)
            if prev.type in ("short_var_declaration", "assignment_statement", "var_declaration"):
                head = text.split("=", 1)[0].replace(":", "").replace("var ", "").strip()
                names = [n.strip() for n in head.split(",")]
                if len(names) == 1 and names[0].split()[0] == name:
                    return ctx.at(prev)
            if word.search(text):
                return None  # `d` is read or changed in between: not a plain default
        prev = prev.prev_named_sibling
    return None


def _return_index(stmt: Any, orders: dict[int, list[int]]) -> int | None:
    """The position of `stmt` among the returns of its function itself (not of nested func
    literals); each function's returns are listed once per file (`orders`)."""
    root = stmt
    while root.parent is not None and root.type not in ("function_declaration", "method_declaration", "func_literal"):
        root = root.parent
    order = orders.get(root.id)
    if order is None:
        order = orders[root.id] = []
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type == "return_statement":
                if any(c.type != "comment" for c in node.named_children):  # bare returns hold no value
                    order.append(node.start_byte)
                continue
            if node is not root and node.type == "func_literal":
                continue
            stack.extend(reversed(node.named_children))
    start = stmt.start_byte
    return order.index(start) if start in order else None
