"""DA401/DA402 marks on Python files: clamps and fallbacks written as statements.

`min(x, MAX)`, `x or D`, `.get("k", D)` and `getattr(o, "k", D)` need no mark: the
expression language holds them. What it cannot hold is a guarded assignment:

- `FunctionFact.markers += {"m": "ceiling", "form": "if", "line", "col", "assign": [line, col]}`
  for `if x > MAX: x = MAX` (also `>=`, `MAX < x`), and `{"m": "ceiling", "form": "ifexp",
  "bound": name, "assign": [line, col]}` for `x = MAX if x > MAX else x`;
- `FunctionFact.markers += {"m": "fallback", "form": "if", "trigger": "zero" | "falsy" |
  "none", "line", "col", "assign": [line, col]}` for `if x <= 0: x = D`, `if not x: x = D`,
  `if x is None: x = D`; with `"subject": Expr, "ret": int` (the index of the guarded
  `return` among the function's returns) for `if not job.timeout_s: return D`.

- `FunctionFact.markers += {"m": "key_set", "name": local, "key": k, "line", "col"}` for
  `body["timeout_s"] = …`: a key a dict payload gets after its literal.

`assign` is the position of the guarded assignment: the extractor's `Binding` there names
the clamped symbol and holds the bound / default with its full expression.
"""

from __future__ import annotations

import ast
import bisect

from deadline_audit.catalog import Catalog
from deadline_audit.extract.py_marks import MarkContext, Walker, run_marker_passes
from deadline_audit.facts import FileFacts, FunctionFact


def run(tree: ast.Module, facts: FileFacts, catalog: Catalog) -> None:
    run_marker_passes(tree, facts, catalog, ("py_marks_wire",))


def register(ctx: MarkContext, walker: Walker):
    if not ctx.facts.functions:
        return None
    found: list[tuple[FunctionFact | None, dict]] = []
    fns = sorted(ctx.facts.functions, key=lambda f: (f.span.line, f.span.column))
    starts = [(f.span.line, f.span.column) for f in fns]

    def function_at(line: int, col: int) -> FunctionFact | None:
        i = bisect.bisect_right(starts, (line, col)) - 1
        while i >= 0:
            s = fns[i].span
            if (s.end_line, s.end_column) >= (line, col):
                return fns[i]
            i -= 1
        return None

    returns: list[tuple[int, int]] = []  # every `return`, in walk (source) order
    yielding: set[int] = set()  # functions whose yields are results too: their returns shift

    def on_return(n: ast.Return) -> None:
        returns.append((n.lineno, n.col_offset + 1))

    def on_yield(n: ast.AST) -> None:
        fn = function_at(n.lineno, n.col_offset + 1)
        if fn is not None:
            yielding.add(id(fn))

    def on_if(n: ast.If) -> None:
        if not n.orelse and len(n.body) == 1 and n.body[0].__class__ is ast.Return and n.body[0].value is not None:
            # `if not job.timeout_s: return settings.fallback_s`: a fallback returned
            fn = function_at(n.lineno, n.col_offset + 1)
            found_test = _zero_test(n.test)
            subject = _subject(found_test[1], fn) if found_test is not None and fn is not None else None
            if subject is not None:
                ret = n.body[0]
                found.append((fn, {"m": "fallback", "form": "if", "trigger": found_test[0], "subject": subject,
                                   "line": n.lineno, "col": n.col_offset + 1, "ret": None,
                                   "_at": (ret.lineno, ret.col_offset + 1)}))
            return
        if n.orelse or len(n.body) != 1 or n.body[0].__class__ is not ast.Assign:
            return
        assign = n.body[0]
        if len(assign.targets) != 1:
            return
        target = ast.unparse(assign.targets[0])
        value = ast.unparse(assign.value)
        marker = _classify(n.test, target, value)
        if marker is not None:
            marker.update(line=n.lineno, col=n.col_offset + 1, assign=[assign.lineno, assign.col_offset + 1])
            found.append((function_at(n.lineno, n.col_offset + 1), marker))

    def on_assign(n: ast.Assign) -> None:
        v = n.value
        for target in n.targets:
            key = _key_set(target)
            if key is not None:
                found.append((function_at(n.lineno, n.col_offset + 1),
                              {"m": "key_set", "name": key[0], "key": key[1], "line": n.lineno,
                               "col": n.col_offset + 1}))
        if v.__class__ is not ast.IfExp or len(n.targets) != 1 or v.test.__class__ is not ast.Compare:
            return
        target = ast.unparse(n.targets[0])
        test = v.test
        if len(test.ops) != 1:
            return
        left, right, op = ast.unparse(test.left), ast.unparse(test.comparators[0]), test.ops[0].__class__
        body, orelse = ast.unparse(v.body), ast.unparse(v.orelse)
        if op in (ast.Gt, ast.GtE) and left == target == orelse and right == body:
            bound = right
        elif op in (ast.Lt, ast.LtE) and right == target == orelse and left == body:
            bound = left
        else:
            return
        found.append((function_at(n.lineno, n.col_offset + 1),
                      {"m": "ceiling", "form": "ifexp", "bound": bound, "line": n.lineno, "col": n.col_offset + 1,
                       "assign": [n.lineno, n.col_offset + 1]}))

    walker.enter(ast.If, on_if)
    walker.enter(ast.Assign, on_assign)
    walker.enter(ast.Return, on_return)
    walker.enter((ast.Yield, ast.YieldFrom), on_yield)

    def finish() -> None:
        for fn, marker in found:
            if fn is None:
                continue
            at = marker.pop("_at", None)
            if at is not None:
                # the index of that `return` among the function's own (FunctionFact.returns)
                own = [r for r in returns if function_at(*r) is fn]
                if id(fn) in yielding or at not in own:
                    continue
                marker["ret"] = own.index(at)
            fn.markers.append(marker)

    return finish


def _zero_test(test: ast.expr) -> tuple[str, ast.expr] | None:
    """(trigger, the tested value) of `not x`, `x is None`, `x <= 0` / `x == 0` / `x < 1`."""
    if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:
        return "falsy", test.operand
    if test.__class__ is not ast.Compare or len(test.ops) != 1:
        return None
    op, right = test.ops[0].__class__, ast.unparse(test.comparators[0])
    if op is ast.Is and right == "None":
        return "none", test.left
    if (op in (ast.LtE, ast.Eq) and right in ("0", "0.0")) or (op is ast.Lt and right == "1"):
        return "zero", test.left
    return None


def _subject(node: ast.expr, fn: FunctionFact) -> dict | None:
    """`job.timeout_s` / `timeout` as the extractor writes it: a parameter or local of the
    function, or one attribute of one (`self` excluded: its fields are the class's)."""
    if node.__class__ is ast.Name and node.id != "self":
        return {"k": "ref", "sym": f"{fn.sym}.{node.id}"}
    if node.__class__ is ast.Attribute and node.value.__class__ is ast.Name and node.value.id in fn.param_names:
        return {"k": "field", "x": {"k": "ref", "sym": f"{fn.sym}.{node.value.id}"}, "name": node.attr}
    return None


def _key_set(target: ast.expr) -> tuple[str, str] | None:
    """`body["timeout_s"] = …`: (the local's name, the key)."""
    if target.__class__ is not ast.Subscript or target.value.__class__ is not ast.Name:
        return None
    key = target.slice
    if key.__class__ is not ast.Constant or not isinstance(key.value, str):
        return None
    return target.value.id, key.value


def _classify(test: ast.expr, target: str, value: str) -> dict | None:
    zero = _zero_test(test)
    if zero is not None:
        return {"m": "fallback", "form": "if", "trigger": zero[0]} if ast.unparse(zero[1]) == target else None
    if test.__class__ is not ast.Compare or len(test.ops) != 1:
        return None
    left, right, op = ast.unparse(test.left), ast.unparse(test.comparators[0]), test.ops[0].__class__
    if left == target and op in (ast.Gt, ast.GtE) and right == value:
        return {"m": "ceiling", "form": "if"}
    if right == target and op in (ast.Lt, ast.LtE) and left == value:
        return {"m": "ceiling", "form": "if"}
    return None
