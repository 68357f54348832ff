"""R, the number of renewals a lease helper allows, for the review's lease arithmetic.

Structural: inside the helper's body, a counter that is incremented (`n++`, `n += 1`,
`n = n + 1`) and compared with a bound (`n < maxRenewals`, `if n >= self_max: cancel`).
`<` and `>=` allow `bound` renewals, `<=` and `>` allow `bound + 1`. The bound is a
number, a parameter of the helper (the lease call's argument or the parameter's default)
or a constant of the helper's package/module, resolved by the graph.

The facts carry no comparisons, so the helper's own file is re-read here (Go with
tree-sitter, Python with the stdlib `ast`) and only the helper's function is walked:
one small parse per lease helper, never of analysed code at large.
"""

from __future__ import annotations

import ast
import math
from functools import lru_cache
from pathlib import Path

from deadline_audit.graph import Ctx, Lease, TimeoutGraph

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_EXTRA = {"<": 0, ">=": 0, "<=": 1, ">": 1}  # renewals allowed = bound + extra


def renewal_bound(graph: TimeoutGraph, lease: Lease, call) -> tuple[float | None, str]:
    """(R, how it was found); R is math.inf when the helper has no bounded counter,
    None when it cannot be told."""
    if lease.helper is None or lease.helper not in graph.functions:
        return None, "the lease helper's source is not analysed"
    fn, path = graph.functions[lease.helper]
    try:
        source = (Path.cwd() / path).read_bytes()
    except OSError:
        return None, f"{path} cannot be read"
    finder = _go_comparisons if graph.lang.get(path) == "go" else _py_comparisons
    try:
        comparisons = finder(source, fn.span.line)
    except (SyntaxError, ValueError, RecursionError):
        comparisons = []
    helper = lease.helper.split(":", 2)[-1].rsplit("/", 1)[-1]
    for counter, op, bound in comparisons:
        value = _bound_value(graph, lease, call, fn, path, bound)
        if value is None:
            return None, f"the bound {bound!r} of {counter} in {helper} is not resolved"
        allowed = max(0, int(value) + _EXTRA[op])
        return float(allowed), f"{counter} {op} {bound} in {helper}"
    return math.inf, f"no bound on the renewals in {helper}"


def _bound_value(graph: TimeoutGraph, lease: Lease, call, fn, path: str, bound: str) -> float | None:
    subst = graph.call_subst(fn, call, lease.ctx) if call is not None else {}
    return resolve_count(graph, fn, path, bound, subst)


def resolve_count(graph: TimeoutGraph, fn, path: str, name: str, subst: dict | None = None) -> float | None:
    """A count written as a number, a parameter of `fn` (through `subst`), a local of `fn`
    or a constant of its type/package/module."""
    if name.lstrip("-").replace(".", "", 1).isdigit():
        return float(name)
    if name in fn.param_names:
        sym = fn.params[fn.param_names.index(name)]
        if subst and sym in subst:
            arg, arg_ctx = subst[sym]
            return _number(graph.value(arg, arg_ctx))
        return None
    scope = fn.sym.rsplit(".", 1)[0]
    candidates = [f"{fn.sym}.{name}"]
    while "." in scope.split(":", 2)[-1]:  # the type's, then the package's / module's names
        candidates.append(f"{scope}.{name}")
        scope = scope.rsplit(".", 1)[0]
    for sym in candidates:
        if sym in graph.bindings or sym in graph.decls:
            return _number(graph.value({"k": "ref", "sym": sym}, Ctx(path)))
    return None


def loop_around(graph: TimeoutGraph, fn_sym: str | None, line: int) -> tuple[int, float | None] | None:
    """The innermost loop of function `fn_sym` around `line`: (its line, how many times it
    runs when its header says so: `range(N)`, `for i := 0; i < N; i++`, `for range N`)."""
    if fn_sym is None or fn_sym not in graph.functions:
        return None
    fn, path = graph.functions[fn_sym]
    try:
        source = (Path.cwd() / path).read_bytes()
    except OSError:
        return None
    finder = _go_loops if graph.lang.get(path) == "go" else _py_loops
    try:
        loops = finder(source, fn.span.line)
    except (SyntaxError, ValueError, RecursionError):
        return None
    inside = [loop for loop in loops if loop[0] < line <= loop[1]]
    if not inside:
        return None
    start, _, bound, extra = max(inside, key=lambda loop: loop[0])
    if bound is None:
        return start, None
    value = resolve_count(graph, fn, path, bound)
    return start, (value + extra if value is not None else None)


def _number(value) -> float | None:
    number = getattr(value, "value", None)
    if number is None or getattr(value, "unit", None) not in (None, ""):
        return None
    return float(number) if math.isfinite(number) else None


# -- Go ------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _go_parser():
    import tree_sitter_go
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_go.language()))


@lru_cache(maxsize=64)
def _go_comparisons(source: bytes, line: int) -> list[tuple[str, str, str]]:
    tree = _go_parser().parse(source)
    fn = _find(tree.root_node, line - 1, ("function_declaration", "method_declaration", "func_literal"))
    if fn is None:
        return []
    counters: set[str] = set()
    compares: list[tuple[str, str, str]] = []
    for node in _walk(fn):
        if node.type == "inc_statement":
            counters.add(_text(node.children[0]))
        elif node.type == "assignment_statement":
            op = node.child_by_field_name("operator")
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if op is not None and _text(op) == "+=" and left is not None and right is not None and _text(right) == "1":
                counters.add(_text(left))
        elif node.type == "binary_expression":
            op = node.child_by_field_name("operator")
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if op is not None and _text(op) in _FLIP and left is not None and right is not None:
                compares.append((_text(left), _text(op), _text(right)))
    return _oriented(compares, counters)


def _find(node, row: int, types: tuple[str, ...]):
    if node.type in types and node.start_point[0] == row:
        return node
    for child in node.children:
        if child.start_point[0] <= row <= child.end_point[0]:
            found = _find(child, row, types)
            if found is not None:
                return found
    return None


def _walk(node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _text(node) -> str:
    return node.text.decode("utf-8", errors="replace").strip()


@lru_cache(maxsize=64)
def _go_loops(source: bytes, line: int) -> list[tuple[int, int, str | None, int]]:
    """(first line, last line, bound text or None, added to the bound) of each loop."""
    fn = _find(_go_parser().parse(source).root_node, line - 1,
               ("function_declaration", "method_declaration", "func_literal"))
    out = []
    for node in _walk(fn) if fn is not None else ():
        if node.type != "for_statement":
            continue
        bound, extra = None, 0
        for child in node.children:
            if child.type == "for_clause":  # for i := start; i < bound; i++
                cond = child.child_by_field_name("condition")
                op = cond.child_by_field_name("operator") if cond is not None and cond.type == "binary_expression" else None
                if op is not None and _text(op) in ("<", "<="):
                    bound, extra = _text(cond.child_by_field_name("right")), _EXTRA[_text(op)]
                    init = child.child_by_field_name("initializer")
                    start = _text(init).rpartition("=")[2].strip() if init is not None else "0"
                    if not start.isdigit():
                        bound = None  # a start the header does not state: the count is unknown
                    else:
                        extra -= int(start)
            elif child.type == "range_clause":  # Go 1.22 `for range n` / `for i := range n`
                right = child.child_by_field_name("right")
                text = _text(right) if right is not None else ""
                bound = text if text.isidentifier() or text.isdigit() else None
        out.append((node.start_point[0] + 1, node.end_point[0] + 1, bound, extra))
    return out


# -- Python --------------------------------------------------------------------------

@lru_cache(maxsize=64)
def _py_comparisons(source: bytes, line: int) -> list[tuple[str, str, str]]:
    tree = ast.parse(source)
    fn = next((n for n in ast.walk(tree)
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and (n.lineno == line or any(d.lineno == line for d in n.decorator_list))), None)
    if fn is None:
        return []
    ops = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
    counters: set[str] = set()
    compares: list[tuple[str, str, str]] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and _is_one(node.value):
            counters.add(ast.unparse(node.target))
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.BinOp)
              and isinstance(node.value.op, ast.Add) and _is_one(node.value.right)
              and ast.unparse(node.value.left) == ast.unparse(node.targets[0])):
            counters.add(ast.unparse(node.targets[0]))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in ops:
            compares.append((ast.unparse(node.left), ops[type(node.ops[0])], ast.unparse(node.comparators[0])))
    return _oriented(compares, counters)


@lru_cache(maxsize=64)
def _py_loops(source: bytes, line: int) -> list[tuple[int, int, str | None, int]]:
    tree = ast.parse(source)
    fn = next((n for n in ast.walk(tree)
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and (n.lineno == line or any(d.lineno == line for d in n.decorator_list))), None)
    out = []
    for node in ast.walk(fn) if fn is not None else ():
        if not isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            continue
        bound, extra = None, 0
        it = getattr(node, "iter", None)
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and len(it.args) in (1, 2) and not it.keywords):
            bound = ast.unparse(it.args[-1])  # range(n), range(start, n)
            if len(it.args) == 2:
                start = it.args[0]
                if isinstance(start, ast.Constant) and isinstance(start.value, int):
                    extra = -start.value
                else:
                    bound = None
        out.append((node.lineno, node.end_lineno or node.lineno, bound, extra))
    return out


def _is_one(node) -> bool:
    return isinstance(node, ast.Constant) and node.value == 1


def _oriented(compares: list[tuple[str, str, str]], counters: set[str]) -> list[tuple[str, str, str]]:
    """Comparisons of a counter with something else, counter on the left."""
    out = []
    for left, op, right in compares:
        if left in counters and right not in counters:
            out.append((left, op, right))
        elif right in counters and left not in counters:
            out.append((right, _FLIP[op], left))
    return out
