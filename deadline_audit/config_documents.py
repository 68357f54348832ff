"""Keys read from a loaded config document (SPEC §4 "Reading a config key").

`raw = yaml.safe_load(fh)` (any loader of catalog `settings.document_loaders`) is the
whole document; `raw.get("statement", {})["fetch_timeout"]` reads the key
`statement.fetch_timeout`. A parameter is followed to the argument of the call being
evaluated, when there is one (`_policy(doc["labeling"])` reads `labeling.*` there).
"""

from __future__ import annotations

from typing import Any, Callable

from deadline_audit.facts import Expr

_MAX_DEPTH = 14
ANY_ENTRY = "*"  # a key path step: every entry of a list (by index) or a table (by name)
_MAX_PATHS = 8

# (sym) -> bindings of that symbol; (sym) -> (argument expr, its resolver) at the call being
# evaluated, [(argument, resolver), …] of the function's callers when there is none, or None
Bindings = Callable[[str], list]
Argument = Callable[[str], tuple[Expr, Any] | list[tuple[Expr, Any]] | None]
# (function sym) -> (its return exprs, its parameter syms), for a module's own helper
Helper = Callable[[str], tuple[list, list[str]] | None]


def document_keys(expr: Expr | None, loaders: frozenset[str], bindings: Bindings,
                  argument: Argument | None = None, depth: int = 0,
                  helper: Helper | None = None) -> list[list[str]] | None:
    """The key paths `expr` may read, outermost key first (`raw["a"].get("b")` -> [[a, b]]);
    [[]] for the document itself; several when a parameter is given different tables at
    different calls (`_policy(d["labeling"])`, `_policy(d["review"])`); None when `expr`
    does not read a loaded document. A helper returning a table of its argument
    (`_section(raw, "statements")` returning `raw.get(name) or {}`) reads that table."""
    if depth > _MAX_DEPTH or not expr:
        return None
    k = expr.get("k")
    read = key_read(expr) or _key_read_by_parameter(expr, argument)
    if read is not None:  # `x["key"]` / `x.get("key", …)`: the keys of x, then this one
        inner = document_keys(read[0], loaders, bindings, argument, depth + 1, helper)
        return None if inner is None else [path + [read[1]] for path in inner]
    if k == "call":
        fn = expr.get("fn") or {}
        if fn.get("k") == "method":
            return None
        name = fn.get("name") if fn.get("k") == "ext" else str(fn.get("sym", "")).removeprefix("sym:py:")
        if name in loaders:
            return [[]]
        return _helper_keys(expr, loaders, bindings, argument, depth, helper)
    if k == "or" and expr.get("args"):  # `yaml.safe_load(fh) or {}`
        return document_keys(expr["args"][0], loaders, bindings, argument, depth + 1, helper)
    if k == "each":  # `for suite in doc["suites"]`: any entry of that list or table
        inner = document_keys(expr.get("x"), loaders, bindings, argument, depth + 1, helper)
        return None if inner is None else [path + [ANY_ENTRY] for path in inner]
    if k == "ref":
        sym = expr["sym"]
        if argument is not None:
            passed = argument(sym)
            if isinstance(passed, list):  # no call being evaluated: each caller's argument
                paths = [p for arg, arg_argument in passed
                         for p in document_keys(arg, loaders, bindings, arg_argument, depth + 1, helper) or ()]
                return paths[:_MAX_PATHS] or None
            if passed is not None:
                arg, arg_argument = passed
                return document_keys(arg, loaders, bindings, arg_argument, depth + 1, helper)
        found = [document_keys(b.expr, loaders, bindings, argument if b.function and sym.startswith(b.function + ".")
                               else None, depth + 1, helper) for b, _ in bindings(sym)[:_MAX_PATHS]]
        if not found or any(f is None for f in found):
            return None  # one binding that is not a document read: not one
        return [path for paths in found for path in paths][:_MAX_PATHS]
    return None


def _helper_keys(call: Expr, loaders: frozenset[str], bindings: Bindings, argument: Argument | None,
                 depth: int, helper: Helper | None) -> list[list[str]] | None:
    """The tables a module's own helper returns, its parameters bound to this call's
    arguments (evaluated where the call is, with `argument` for the caller's own)."""
    fn = call.get("fn") or {}
    described = helper(fn["sym"]) if helper is not None and fn.get("k") == "fnref" and fn.get("sym") else None
    if not described:
        return None
    returns, params = described
    args = call.get("args") or []
    passed = dict(zip(params, args))
    passed.update((p, v) for p in params for name, v in (call.get("kw") or {}).items() if p.endswith("." + name))

    def inner(sym: str):
        if sym in passed:
            return passed[sym], argument
        return None

    found = [document_keys(r, loaders, bindings, inner, depth + 1, helper) for r in returns[:4]]
    if not found or any(f is None for f in found):
        return None
    return [path for paths in found for path in paths][:_MAX_PATHS]


def _key_read_by_parameter(expr: Expr, argument: Argument | None) -> tuple[Expr | None, str] | None:
    """`x.get(name)` where `name` is a parameter given a string at this call."""
    if argument is None or expr.get("k") != "call":
        return None
    fn = expr.get("fn") or {}
    args = expr.get("args") or []
    if fn.get("k") != "method" or fn.get("name") != "get" or not args or args[0].get("k") != "ref":
        return None
    passed = argument(args[0]["sym"])
    if not isinstance(passed, tuple) or passed[0].get("k") != "str":
        return None
    return fn.get("x"), passed[0]["v"]


def key_read(expr: Expr) -> tuple[Expr | None, str] | None:
    """(what is read, the key) of `x["key"]` or `x.get("key", …)`, else None."""
    k = expr.get("k")
    if k == "item":
        return (expr.get("x"), expr["key"]) if isinstance(expr.get("key"), str) else None
    if k != "call":
        return None
    fn = expr.get("fn") or {}
    args = expr.get("args") or []
    if fn.get("k") == "method" and fn.get("name") == "get" and args and args[0].get("k") == "str":
        return fn.get("x"), args[0]["v"]
    return None
