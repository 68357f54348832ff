"""Expressions: libcst expression nodes -> `Expr` dicts, recording calls and sites.

Every sub-expression is visited exactly once, in source order (pre-order): the position
source (`py_positions`) depends on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import libcst as cst

from deadline_audit.extract.py_index import PyIndex
from deadline_audit.extract.py_scope import ClassInfo, Entry, FuncState, Scope, lookup
from deadline_audit.extract.sql_leases import now_plus_amount
from deadline_audit.facts import Binding, CallFact, Expr, FileFacts, SiteFact, Span, truthy
from deadline_audit.extract.go_text import named_by_literal


_BINOPS = {
    cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "div", cst.FloorDivide: "div",
}
_UNKNOWN_MAX = 80


def unknown(text: str) -> Expr:
    return {"k": "unknown", "text": text[:_UNKNOWN_MAX]}


# The symbol standing for an application's shared state (`app.state`, catalog
# python.toml [shared_state]); its attributes are `SHARED_STATE.<name>`.
SHARED_STATE = "sym:py:@app_state"

def _attributes(node: cst.BaseExpression) -> tuple[list[str], cst.BaseExpression]:
    """`x.a.b` -> (["b", "a"], x): attribute names innermost last, and the receiver."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    return parts, node


def name_chain(node: cst.BaseExpression) -> list[str] | None:
    """`a.b.c` -> ["a", "b", "c"]; None when the chain is not made of names only."""
    parts, base = _attributes(node)
    if isinstance(base, cst.Name):
        return [base.value, *reversed(parts)]
    return None


def attr_suffix(node: cst.BaseExpression) -> str:
    """The attribute names of a callee, however its receiver starts (`x().a.b` -> `a.b`)."""
    parts, base = _attributes(node)
    if isinstance(base, cst.Name):
        parts.append(base.value)
    return ".".join(reversed(parts))


def text_of(node: cst.CSTNode) -> str:
    chain = name_chain(node) if isinstance(node, cst.BaseExpression) else None
    if chain:
        return ".".join(chain)
    return type(node).__name__


def _has_fstring(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.ConcatenatedString):
        return _has_fstring(node.left) or _has_fstring(node.right)
    return isinstance(node, cst.FormattedString)


def string_value(node: cst.BaseString) -> str | bytes | None:
    """The value of a string literal; cheap for the common case (no escapes), since
    libcst's `evaluated_value` compiles every literal."""
    if isinstance(node, cst.SimpleString):
        raw = node.value
        quote_at = min(i for i in (raw.find("'"), raw.find('"')) if i >= 0)
        prefix = raw[:quote_at].lower()
        quote = raw[quote_at:quote_at + 3] if raw[quote_at:quote_at + 3] in ('"""', "'''") else raw[quote_at]
        body = raw[quote_at + len(quote):len(raw) - len(quote)]
        if "b" in prefix:
            return body.encode("utf-8", "replace")
        if "\\" not in body or "r" in prefix:
            return body
    elif isinstance(node, cst.ConcatenatedString):
        left, right = string_value(node.left), string_value(node.right)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        return None
    try:
        return node.evaluated_value  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - odd escapes: keep going
        return None


_EXPR, _STMT, _GENERIC, _TRIVIA = 0, 1, 2, 3
_CHILD_KINDS: dict[type, int] = {}  # libcst node type -> how `walk_generic` treats it


def _child_kind(cls: type) -> int:
    """`isinstance` against libcst's abstract bases, once per node type (they are ABCs)."""
    if issubclass(cls, cst.BaseExpression):
        kind = _EXPR
    elif issubclass(cls, (cst.BaseStatement, cst.BaseSmallStatement)):
        kind = _STMT
    elif issubclass(cls, (cst.BaseParenthesizableWhitespace, cst.Comma, cst.Newline, cst.EmptyLine,
                          cst.TrailingWhitespace)):
        kind = _TRIVIA
    else:
        kind = _GENERIC
    _CHILD_KINDS[cls] = kind
    return kind


def is_upper_const(name: str) -> bool:
    return name.isupper() or (name[:1].isupper() and not name.isupper() and "_" not in name)


class ExprMixin:
    """The expression half of `Extractor` (py_walker.py): what it reads of the walker's
    state and calls of its statement half is declared here, so this half stands on its own."""

    path: str
    module_sym: str
    idx: PyIndex
    facts: FileFacts
    scope: Scope
    func: FuncState | None
    store: Expr | None  # the assignment target of the statement being converted
    classes: dict[str, ClassInfo]
    comp_names: list[set[str]]
    comp_elements: list[dict[str, list[Expr]]]  # per comprehension: its variables' uses so far
    pending_names: list[tuple[Expr, Scope, str]]
    pending_calls: list[tuple[Expr, Any, dict[str, Expr], Span, str | None]]
    timer_values: list[Expr]
    env_seen: set[str]
    literals_seen: set[str]
    _expr_handlers: dict[type, Callable[..., Expr]]
    timer_roles: frozenset[str]
    pos: Callable[..., Span]
    stmt: Callable[[cst.CSTNode], None]
    bind_name: Callable[[str, Expr, Span], None]
    note_called: Callable[[str], None]
    function: Callable[..., Expr]

    # -- dispatch -----------------------------------------------------------------------
    def expr(self, node: cst.CSTNode) -> Expr:
        handler = self._expr_handlers.get(type(node))
        if handler is None:
            self.walk_generic(node)
            return unknown(text_of(node))
        return handler(self, node)

    def walk_generic(self, node: cst.CSTNode) -> None:
        kinds = _CHILD_KINDS
        for child in node.children:
            kind = kinds.get(child.__class__)
            if kind is None:
                kind = _child_kind(child.__class__)
            if kind == _EXPR:
                self.expr(child)
            elif kind == _STMT:
                self.stmt(child)
            elif kind == _GENERIC:
                self.walk_generic(child)

    # -- leaves -------------------------------------------------------------------------
    def _name(self, node: cst.Name) -> Expr:
        name = node.value
        if self.func is not None:
            self.func.words.append(name)
        if name == "None":
            return {"k": "none"}
        entry = lookup(self.scope, name, self.comp_names)
        if entry is None:
            placeholder = unknown(name)
            self.pending_names.append((placeholder, self.scope, name))
            return placeholder
        if entry.kind == "local" and not entry.sym and self.comp_elements:
            # a comprehension variable: an element of its iterable, known once the
            # iterable (written after it) is read (`_comprehension`)
            for names in reversed(self.comp_elements):
                if name in names:
                    placeholder = unknown(name)
                    names[name].append(placeholder)
                    return placeholder
        return self.entry_value(entry, name)

    def entry_value(self, entry: Entry, name: str) -> Expr:
        kind = entry.kind
        if kind in ("var", "const", "field", "param", "local"):
            return {"k": "ref", "sym": entry.sym} if entry.sym else unknown(name)
        if kind in ("func", "class"):
            return {"k": "fnref", "sym": entry.sym}
        if kind == "import":
            if self.idx.is_external(entry.sym):
                return unknown(entry.sym)
            return {"k": "ref", "sym": "sym:py:" + entry.sym}
        return unknown(name)  # builtins, self

    def _number(self, node: cst.BaseNumber) -> Expr:
        span = self.pos("num", node)
        text = node.value  # type: ignore[attr-defined]
        try:  # not `evaluated_value`: it runs `ast.literal_eval` (a compile) per literal
            value = float(int(text, 0)) if isinstance(node, cst.Integer) else float(text)
        except ValueError:
            try:
                value = float(node.evaluated_value)  # type: ignore[attr-defined]
            except (TypeError, ValueError, SyntaxError):
                return unknown(text)
        return {"k": "num", "v": value, "u": None, "at": [span.line, span.column]}

    def _imaginary(self, node: cst.Imaginary) -> Expr:
        self.pos("num", node)
        return unknown(node.value)

    def _string(self, node: cst.BaseString) -> Expr:
        value = string_value(node)
        if not isinstance(value, str):
            return unknown("bytes")
        if self.func is not None:
            self.func.words.append(value)
        if value not in self.literals_seen and len(value) < 200:
            self.literals_seen.add(value)  # DA501: a key or file the code names
            named = named_by_literal(value)  # `"WORKER_TIMEOUT=30"` for a child names its key
            if named is not None:
                (self.facts.config_files_named if named[0] == "file" else self.facts.config_keys_read).append(named[1])
        return {"k": "str", "v": value}

    def _fstring(self, node: cst.FormattedString) -> Expr:
        # inner positions are skipped on both sides (py_positions); words still count
        if self.func is not None:
            for part in node.parts:
                if isinstance(part, cst.FormattedStringText):
                    self.func.words.append(part.value)
                else:
                    chain = name_chain(part.expression)
                    if chain:
                        self.func.words.extend(chain)
        # the literal parts as a glob (`f"{svc}_TIMEOUT"` -> "*_TIMEOUT"): DA501 takes an env
        # var named by it as possibly read
        glob = "".join(re.sub(r"[*?\[\]]", "?", p.value) if isinstance(p, cst.FormattedStringText) else "*"
                       for p in node.parts)
        return {**unknown("f-string"), "glob": re.sub(r"\*+", "*", glob)[:80]}

    def _concat(self, node: cst.ConcatenatedString) -> Expr:
        # with an f-string part the whole concatenation is one f-string (inner positions skipped)
        if _has_fstring(node):
            return unknown("f-string")
        return self._string(node)

    # -- attribute access ---------------------------------------------------------------
    def _attribute(self, node: cst.Attribute) -> Expr:
        name = node.attr.value
        base = node.value
        if self.func is not None:
            self.func.words.append(name)
        chain = name_chain(node)
        shared = self.shared_state_expr(chain) if chain is not None else None
        if shared is not None:
            return shared
        if chain is not None:
            entry = lookup(self.scope, chain[0], self.comp_names)
            if self.func is not None:
                self.func.words.append(chain[0])
            if entry is not None and entry.kind == "import":
                return self.import_chain_value(entry, chain)
            if entry is not None and entry.kind in ("class", "func"):
                return {"k": "ref", "sym": entry.sym + "." + ".".join(chain[1:])}
        if isinstance(base, cst.Name):
            value = self.owner_attr(base, name)
            if self.func is not None:
                key = repr(value)
                if key not in self.func.use_keys and len(self.func.use_keys) < 64:
                    self.func.use_keys.add(key)
                    self.func.fact.uses.append(value)
            return value
        return {"k": "field", "x": self.expr(base), "name": name}

    def shared_state(self, chain: list[str]) -> str | None:
        """The symbol of `request.app.state.settings`: one attribute of an application's
        shared state (catalog python.toml [shared_state]), whichever object reaches it."""
        found = self._shared_state_at(chain)
        return f"{SHARED_STATE}.{chain[found]}" if found is not None and found == len(chain) - 1 else None

    def shared_state_expr(self, chain: list[str]) -> Expr | None:
        """`request.app.state` itself, or an attribute of it and the fields read from that
        (`state.settings.turn_budget_s`)."""
        found = self._shared_state_at(chain)
        if found is None:
            namespaces = self.idx.catalog.table("python", "shared_state").get("namespaces", ())
            return {"k": "ref", "sym": SHARED_STATE} if any(
                ".".join(chain).endswith("." + n) or ".".join(chain) == n for n in namespaces) else None
        value: Expr = {"k": "ref", "sym": f"{SHARED_STATE}.{chain[found]}"}
        for part in chain[found + 1:]:
            value = {"k": "field", "x": value, "name": part}
        return value

    def _shared_state_at(self, chain: list[str]) -> int | None:
        """The index of the namespace's attribute in `chain` (after `app.state`)."""
        for namespace in self.idx.catalog.table("python", "shared_state").get("namespaces", ()):
            parts = namespace.split(".")
            for i in range(len(chain) - len(parts)):
                if chain[i:i + len(parts)] == parts:
                    return i + len(parts)
        return None

    def owner_attr(self, base: cst.Name, name: str) -> Expr:
        """`x.name` with `x` a plain name: a symbol when the owner's class is known."""
        entry = lookup(self.scope, base.value, self.comp_names)
        if entry is not None:
            if entry.kind == "self" or (entry.type and entry.type.startswith("py:")
                                        and entry.kind in ("param", "local", "var", "const", "field")):
                return {"k": "ref", "sym": "sym:" + entry.type + "." + name}  # type: ignore[operator]
        return {"k": "field", "x": self._name(base), "name": name}

    def import_chain_value(self, entry: Entry, chain: list[str]) -> Expr:
        qualified = ".".join([entry.sym, *chain[1:]])
        if self.idx.is_external(qualified):
            return unknown(qualified)
        if entry.module_import or is_upper_const(chain[1]):
            return {"k": "ref", "sym": "sym:py:" + qualified}
        # `from app.config import settings` then `settings.timeout`: an attribute of an
        # object whose class lives elsewhere; the graph resolves it from its type.
        value: Expr = {"k": "ref", "sym": "sym:py:" + entry.sym}
        for part in chain[1:]:
            value = {"k": "field", "x": value, "name": part}
        return value

    def _subscript(self, node: cst.Subscript) -> Expr:
        span = self.pos("subscript", node)
        chain = name_chain(node.value)
        env_entry = None
        if chain is not None:
            qualified = self.qualify_chain(chain)
            if qualified is not None:
                env_entry = self.idx.call(qualified + ".__getitem__").env_read
        x = self.expr(node.value) if env_entry is None else None
        keys: list[Expr] = []
        for element in node.slice:
            s = element.slice
            if isinstance(s, cst.Index):
                keys.append(self.expr(s.value))
            else:
                for part in (s.lower, s.upper, s.step):
                    if part is not None:
                        self.expr(part)
                keys.append(unknown("slice"))
        key = keys[0] if len(keys) == 1 else unknown("key")
        if env_entry is not None:
            return self.env_expr(key, None, span)
        if key.get("k") == "str":
            return {"k": "item", "x": x, "key": key["v"]}
        if x is not None and len(keys) == 1 and key.get("text") != "slice":
            return {**unknown(text_of(node.value) + "[…]"), "lookup": x}  # one of the container's values
        return unknown(text_of(node.value) + "[…]")

    # -- operators ----------------------------------------------------------------------
    def _binop(self, node: cst.BinaryOperation) -> Expr:
        left = self.expr(node.left)
        right = self.expr(node.right)
        op = _BINOPS.get(type(node.operator))
        if op is None:
            return unknown(type(node.operator).__name__)
        return {"k": "op", "op": op, "args": [left, right]}

    def _unop(self, node: cst.UnaryOperation) -> Expr:
        inner = self.expr(node.expression)
        if isinstance(node.operator, cst.Minus):
            if inner.get("k") == "num":
                return {**inner, "v": -inner["v"]}
            return {"k": "op", "op": "neg", "args": [inner]}
        if isinstance(node.operator, cst.Plus):
            return inner
        return unknown(type(node.operator).__name__)

    def _boolop(self, node: cst.BooleanOperation) -> Expr:
        left = self.expr(node.left)
        right = self.expr(node.right)
        if isinstance(node.operator, cst.Or):
            args = (left["args"] if left.get("k") == "or" else [left]) + [right]
            return {"k": "or", "args": args}
        return unknown("and")

    def _compare(self, node: cst.Comparison) -> Expr:
        self.expr(node.left)
        for target in node.comparisons:
            self.expr(target.comparator)
        return unknown("comparison")

    def _ifexp(self, node: cst.IfExp) -> Expr:
        body = self.expr(node.body)
        test = self.expr(node.test)
        orelse = self.expr(node.orelse)
        # `float(raw) if raw else default`: the value when it is set, else the default —
        # what `or` means. Any other test picks one of the two at run time: a choice
        # (both are origins of what flows on; its value is known when they agree).
        if test.get("k") in ("ref", "field", "env") and _mentions(body, test):
            return {"k": "or", "args": [body, orelse]}
        # `every if every is not None else ttl / 3` (and `d if x is None else x`): the
        # value when it is given, else the default
        given = self._none_test(node.test)
        if given is not None:
            subject, is_not = given
            value, default = (body, orelse) if is_not else (orelse, body)
            if subject.get("k") in ("ref", "field") and _mentions(value, subject):
                return {"k": "or", "args": [value, default]}
        return {"k": "choice", "args": [body, orelse]}

    def _none_test(self, test: cst.BaseExpression) -> tuple[Expr, bool] | None:
        """`x is not None` -> (x, True), `x is None` -> (x, False); else None. (Reads the
        names again: the test was already walked for its facts.)"""
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return None
        target = test.comparisons[0]
        if not (isinstance(target.comparator, cst.Name) and target.comparator.value == "None"):
            return None
        if isinstance(target.operator, cst.IsNot):
            is_not = True
        elif isinstance(target.operator, cst.Is):
            is_not = False
        else:
            return None
        if isinstance(test.left, cst.Name):
            entry = lookup(self.scope, test.left.value, self.comp_names)
            return (self.entry_value(entry, test.left.value), is_not) if entry is not None else None
        return None

    def _await(self, node: cst.Await) -> Expr:
        inner = node.expression
        if isinstance(inner, cst.Call):
            return self.call(inner, awaited=True)
        value = self.expr(inner)
        if isinstance(inner, cst.Name):
            self.note_called(inner.value)
        return value

    def _named(self, node: cst.NamedExpr) -> Expr:
        span = self.pos("namedexpr", node)
        value = self.expr(node.value)
        if isinstance(node.target, cst.Name):
            self.bind_name(node.target.value, value, span)
        return value

    # -- containers ---------------------------------------------------------------------
    def _sequence(self, node: cst.Tuple | cst.List | cst.Set) -> Expr:
        items = [self.expr(element.value) for element in node.elements]
        if any(item.get("k") in ("dict", "list") or item.get("k") == "call" and (item.get("fn") or {}).get("k") == "fnref"
               for item in items):
            # a table of payloads (`[{"name": …, "timeout_seconds": …}, Route(…)]`): keep them reachable
            return {"k": "list", "items": items}
        if isinstance(node, cst.Tuple):  # `args=(lease, stop)`: what an executor passes on
            return {"k": "tuple", "items": items}
        return unknown(type(node).__name__)

    def _dict(self, node: cst.Dict) -> Expr:
        span = self.pos("dict", node)
        items: list[list[Any]] = []  # [key, value]: a list, so that no user key reads as an Expr field
        open_keys = False  # `**other` or a computed key: keys this literal may hold besides `items`
        spread: list[Expr] = []  # the `**x` it merges in
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                key = self.expr(element.key)
                value = self.expr(element.value)
                if key.get("k") == "str":
                    items.append([key["v"], value])
                else:
                    open_keys = True
            else:
                spread.append(self.expr(element.value))
                open_keys = True
        if len(items) >= 2 or (items and len(spread) == 1):  # a payload candidate (DA401-DA403 wire links)
            expr: Expr = {"k": "dict", "items": items, "at": [span.line, span.column]}
            if open_keys:
                expr["open"] = True
            if len(spread) == 1:
                expr["spread"] = spread[0]  # `{"kind": kind, **fields}`: a forwarding helper's body
            return expr
        return unknown("Dict")

    def _comprehension(self, node: Any) -> Expr:
        names: set[str] = set()
        comp = node.for_in
        while comp is not None:
            self._target_names(comp.target, names)
            comp = comp.inner_for_in
        self.comp_names.append(names)
        uses: dict[str, list[Expr]] = {n: [] for n in names}
        self.comp_elements.append(uses)
        try:
            if isinstance(node, cst.DictComp):
                self.expr(node.key)
                self.expr(node.value)
            else:
                self.expr(node.elt)
            comp = node.for_in
            elements: dict[str, Expr] = {}
            inside: set[int] = set()  # uses within an iterable itself (`for c in c.kids`): not its elements
            while comp is not None:
                self.expr(comp.target)
                before = {n: len(u) for n, u in uses.items()}
                iterable = self.expr(comp.iter)
                inside.update(id(p) for n, u in uses.items() for p in u[before[n]:])
                elements.update(element_bindings(comp.target, iterable))
                for cond in comp.ifs:
                    self.expr(cond.test)
                comp = comp.inner_for_in
            for name, element in elements.items():
                for placeholder in uses.get(name, ()):
                    if id(placeholder) not in inside:
                        placeholder.clear()
                        placeholder.update(element)
        finally:
            self.comp_names.pop()
            self.comp_elements.pop()
        return unknown(type(node).__name__)

    def _target_names(self, node: cst.CSTNode, out: set[str]) -> None:
        if isinstance(node, cst.Name):
            out.add(node.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                self._target_names(element.value, out)
        elif isinstance(node, cst.StarredElement):
            self._target_names(node.value, out)

    def _starred(self, node: cst.StarredElement) -> Expr:
        self.expr(node.value)
        return unknown("starred")

    def _yield(self, node: cst.Yield) -> Expr:
        value = node.value
        if isinstance(value, cst.From):
            self.expr(value.item)
        elif value is not None:
            result = self.expr(value)
            if self.func is not None and self.func.yields_results:
                self.func.fact.returns.append(result)
        return unknown("yield")

    def _lambda(self, node: cst.Lambda) -> Expr:
        return self.function(node, lambda_=True)

    # -- calls --------------------------------------------------------------------------
    def _call(self, node: cst.Call) -> Expr:
        return self.call(node, awaited=False)

    def call(self, node: cst.Call, awaited: bool) -> Expr:
        func = node.func
        fname = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
        span = self.pos("call", node, fname)
        callee, qualified, deferred = self.callee(func)
        args: list[Expr] = []
        kw: dict[str, Expr] = {}
        kw_spans: dict[str, Span] = {}
        positional_ok = True
        spread: Expr | None = None  # `Model(**raw["jobs"])`: the dict whose keys fill the keywords
        for arg in node.args:
            if arg.keyword is not None:
                kspan = self.pos("kw", arg, arg.keyword.value)
                kw[arg.keyword.value] = self.expr(arg.value)
                kw_spans[arg.keyword.value] = kspan
            elif arg.star == "**":
                self.pos("kw", arg, None)
                value = self.expr(arg.value)
                spread = value if spread is None else spread
            elif arg.star == "*":
                self.expr(arg.value)
                positional_ok = False
                args.append(unknown("*args"))
            else:
                args.append(self.expr(arg.value))
        at = [span.line, span.column]
        function = self.func.fact.sym if self.func is not None else None
        if self.func is not None and isinstance(func, cst.Name):
            self.note_called(func.value)

        result: Expr | None = None
        ck = self.idx.call(qualified) if qualified is not None else None
        if spread is not None and ck is not None and ck.sites:
            self._spread_keywords(spread, kw, kw_spans)
        if ck is not None:
            if ck.env_read is not None:
                result = self.env_call(ck.env_read, args, kw, span)
            elif ck.conversion is not None and args:
                result = {"k": "conv", "t": ck.conversion.get("to"), "x": args[ck.conversion.get("arg", 0) or 0]}
            elif ck.timedelta:
                result = self.timedelta_value(args, kw, at)
            if ck.sites:
                self.emit_sites(ck.sites, span, args if positional_ok else [], kw, kw_spans)
        elif callee.get("k") == "method":
            name = callee["name"]
            conversion = self.idx.method_conversions.get(name)
            if conversion is not None and not args and not kw:
                result = {"k": "conv", "t": conversion.get("to"), "x": callee["x"]}
            sites = self.idx.method_sites(attr_suffix(func))
            if sites:
                self.emit_sites(sites, span, args if positional_ok else [], kw, kw_spans)
            if name in self.idx.sql.methods and args and positional_ok:
                self.sql_lease_sites(args, kw, span)
            elif name in self.idx.sql.builder_methods and kw:
                self.builder_lease_sites(callee, kw, kw_spans, span)
        elif callee.get("k") == "fnref" and not args and not kw and "." in callee["sym"]:
            # `LEASE_TTL.total_seconds()` on a constant imported from another module
            owner, _, name = callee["sym"].rpartition(".")
            conversion = self.idx.method_conversions.get(name)
            if conversion is not None and owner.rsplit(".", 1)[-1][:1].isupper():
                result = {"k": "conv", "t": conversion.get("to"), "x": {"k": "ref", "sym": owner}}
        if result is None and qualified in ("min", "max") and callee.get("k") == "ext":
            result = {"k": "op", "op": qualified, "args": args, "at": at}
        if result is None:
            if callee.get("k") in ("fnref", "method", "ext") or deferred:
                result = {"k": "call", "fn": callee, "args": args, "kw": kw, "at": at}
            else:
                result = unknown(text_of(func) + "(…)")
        kind = callee.get("k")
        fact = None
        # an awaited call of a callable value (`await on_done(result)`, a parameter or a
        # local) or of a library (`await asyncio.gather(…)`) is kept too: what a coroutine
        # awaits, in order, decides what it is (DA201)
        if kind in ("fnref", "method") or deferred or (kind == "ext" and ck is not None and ck.known) \
                or (awaited and kind in ("ref", "ext")) or (kind == "ext" and self._spawns(callee, args, kw)):
            fact = CallFact(callee=callee, span=span, function=function, args=args, kw=kw, awaited=awaited)
            if spread is not None:
                fact.extra["spread"] = spread
            self.facts.calls.append(fact)
        if deferred:
            self.pending_calls.append((result, fact, kw, span, function))
        elif kind == "fnref":
            self.bind_constructor(callee["sym"], kw, span, function)
        return result

    def _spread_keywords(self, spread: Expr, kw: dict[str, Expr], kw_spans: dict[str, Span]) -> None:
        """`execute_activity(act, x, **STEP_OPTS)` with `STEP_OPTS = dict(start_to_close_timeout=…)`
        (or a dict literal) bound at module level in this file: its entries are keywords of
        the call, placed where the dict writes them. Keywords written in the call win."""
        if spread.get("k") != "ref":
            return
        bound = next((b for b in reversed(self.facts.bindings) if b.sym == spread["sym"] and b.function is None), None)
        value = bound.expr if bound is not None else {}
        if value.get("k") == "dict":
            entries = [(str(k), v) for k, v in value.get("items", ())]
        elif value.get("k") == "call" and (value.get("fn") or {}).get("name") == "dict":
            entries = list((value.get("kw") or {}).items())
        else:
            return
        for key, item in entries:
            if key in kw or not isinstance(item, dict):
                continue
            at = item.get("at")
            kw[key] = item
            kw_spans[key] = Span(at[0], at[1], at[0], at[1]) if at else bound.span

    def _spawns(self, callee: Expr, args: list[Expr], kw: dict[str, Expr]) -> bool:
        """`asyncio.to_thread(keep, lease, stop)`, `Thread(target=keep, args=(…))`: an
        executor handed a function of the program with its arguments (catalog
        [executors.spread], [executors.targets]) is kept as a call."""
        name = str(callee.get("name") or "").rsplit(".", 1)[-1]
        at = self.idx.spread.get(name)
        fn = args[at] if at is not None and at < len(args) else kw.get(self.idx.spread_targets.get(name) or "")
        # (a function defined further down the module is a placeholder until the end)
        return fn is not None and (fn.get("k") in ("fnref", "ref", "field", "method")
                                   or any(fn is pending for pending, _, _ in self.pending_names))

    def callee(self, func: cst.BaseExpression) -> tuple[Expr, str | None, bool]:
        """(callee expr, qualified name when it names an API/builtin, deferred?)"""
        if isinstance(func, cst.Name):
            name = func.value
            if self.func is not None:
                self.func.words.append(name)
            entry = lookup(self.scope, name, self.comp_names)
            if entry is None:
                placeholder = unknown(name)
                self.pending_names.append((placeholder, self.scope, name))
                return placeholder, None, True
            if entry.kind == "builtin":
                return {"k": "ext", "name": name}, name, False
            if entry.kind == "import":
                if self.idx.is_external(entry.sym):
                    return {"k": "ext", "name": entry.sym}, entry.sym, False
                return {"k": "fnref", "sym": "sym:py:" + entry.sym}, None, False
            if entry.kind in ("func", "class") or (entry.kind == "self" and entry.sym):
                return {"k": "fnref", "sym": entry.sym}, None, False  # (`cls(…)` in a classmethod)
            reader = self.env_reader_of(entry, "__call__")  # `env("TIMEOUT", default=30)`
            if reader is not None:
                return reader
            return self.entry_value(entry, name), None, False
        if isinstance(func, cst.Attribute):
            chain = name_chain(func)
            if chain is not None:
                if self.func is not None:
                    self.func.words.extend(chain)
                entry = lookup(self.scope, chain[0], self.comp_names)
                if entry is not None and entry.kind == "import":
                    qualified = ".".join([entry.sym, *chain[1:]])
                    if self.idx.is_external(qualified):
                        return {"k": "ext", "name": qualified}, qualified, False
                    return {"k": "fnref", "sym": "sym:py:" + qualified}, None, False
                if entry is not None and entry.kind in ("func", "class") and len(chain) == 2:
                    return {"k": "fnref", "sym": entry.sym + "." + chain[1]}, None, False
                if entry is not None and entry.kind == "self" and len(chain) == 2 and entry.type:
                    cls = self.classes.get("sym:" + entry.type)
                    if cls is not None and chain[1] in cls.methods:
                        return {"k": "fnref", "sym": cls.sym + "." + chain[1]}, None, False
                if entry is not None and len(chain) == 2:
                    reader = self.env_reader_of(entry, chain[1])  # `env.int("TIMEOUT", default=30)`
                    if reader is not None:
                        return reader
            receiver = self.expr(func.value)
            return {"k": "method", "x": receiver, "name": func.attr.value}, None, False
        self.expr(func)
        return unknown(text_of(func)), None, False

    def env_reader_of(self, entry: Any, method: str) -> tuple[Expr, str, bool] | None:
        """A method of an object whose class reads the environment (catalog env_reads on
        `<class>.<method>`, django-environ's `environ.Env.int`): the call is that read."""
        if entry.kind not in ("var", "const", "local") or not entry.type:
            return None
        qualified = f"{entry.type.removeprefix('py:')}.{method}"
        if self.idx.call(qualified).env_read is None:
            return None
        return {"k": "ext", "name": qualified}, qualified, False

    def qualify_chain(self, chain: list[str]) -> str | None:
        entry = lookup(self.scope, chain[0], self.comp_names)
        if entry is not None and entry.kind == "import":
            return ".".join([entry.sym, *chain[1:]])
        return None

    # -- catalog semantics ----------------------------------------------------------------
    def env_call(self, entry: dict[str, Any], args: list[Expr], kw: dict[str, Expr], span: Span) -> Expr:
        name_arg = entry.get("name_arg", 0)
        default_arg = entry.get("default_arg")
        name = args[name_arg] if name_arg is not None and name_arg < len(args) else kw.get("key", unknown("name"))
        default = None
        if default_arg is not None and default_arg < len(args):
            default = args[default_arg]
        elif entry.get("default_kw") in kw:
            default = kw[entry["default_kw"]]
        return self.env_expr(name, default, span)

    def env_expr(self, name: Expr, default: Expr | None, span: Span) -> Expr:
        if name.get("k") == "str" and name["v"] not in self.env_seen:
            self.env_seen.add(name["v"])
            self.facts.env_names_read.append(name["v"])
        return {"k": "env", "name": name, "default": default, "at": [span.line, span.column]}

    def timedelta_value(self, args: list[Expr], kw: dict[str, Expr], at: list[int]) -> Expr:
        scale = self.idx.timedelta_keywords
        parts: list[tuple[Expr, float]] = []
        for i, arg in enumerate(args):
            if i < len(self.idx.timedelta_positional):
                parts.append((arg, scale.get(self.idx.timedelta_positional[i], 0.0)))
        for key, value in kw.items():
            if key in scale:
                parts.append((value, scale[key]))
        if all(e.get("k") == "num" for e, _ in parts):
            return {"k": "num", "v": sum(e["v"] * f for e, f in parts), "u": "s", "at": at}
        terms: list[Expr] = []
        for e, f in parts:
            terms.append({"k": "num", "v": e["v"] * f, "u": "s"} if e.get("k") == "num"
                         else {"k": "op", "op": "mul", "args": [e, {"k": "num", "v": f, "u": "s"}]})
        return terms[0] if len(terms) == 1 else {"k": "op", "op": "add", "args": terms}

    def sql_lease_sites(self, args: list[Expr], kw: dict[str, Expr], span: Span) -> None:
        """`await pool.fetchval(RENEW_SQL, job_id, owner, ttl)` with `SET locked_until =
        now() + make_interval(secs => $3)`: the bound argument is a lease site (as in Go,
        sql_leases.py). The statement is a literal, a module string constant of this file
        or either inside a statement wrapper (`text(…)`); `$n` counts the arguments after
        it, `:name` / `%(name)s` is a keyword or a key of the parameters dict."""
        text = self._statement_text(args[0])
        if not text:
            return
        params = self._parameters_dict(args[1]) if len(args) == 2 else None
        function = self.func.fact.sym if self.func is not None else None
        for bind in self.idx.sql.binds(text):
            value = None
            if bind.name is not None:
                value = kw.get(bind.name) or next((v for k, v in (params or {}).get("items", ()) if k == bind.name), None)
            elif bind.index is not None and params is None and 1 + bind.index < len(args):
                value = args[1 + bind.index]
            if value is None or bind.spec is None:
                continue
            at = value.get("at")
            where = Span(at[0], at[1], at[0], at[1]) if at else span
            site = SiteFact(id=f"site:{self.path}:{where.line}:{where.column}", api=bind.spec.api,
                            role=bind.spec.role, span=where, value=value, function=function,
                            group=f"site:{self.path}:{span.line}:{span.column}", unit=bind.spec.unit)
            if bind.acquires:
                site.extra["acquires"] = True
            self.facts.sites.append(site)
            if self.func is not None:
                self.timer_values.append(value)

    def _parameters_dict(self, arg: Expr) -> Expr | None:
        """The parameters of a statement: a dict literal, or a name or field bound to one
        earlier in this file (`self._params = {"ttl": ttl, …}` in `__init__`)."""
        if arg.get("k") == "dict":
            return arg
        if arg.get("k") != "ref":
            return None
        bound = next((b.expr for b in reversed(self.facts.bindings) if b.sym == arg.get("sym")), None)
        return bound if bound is not None and bound.get("k") == "dict" else None

    def builder_lease_sites(self, callee: Expr, kw: dict[str, Expr], kw_spans: dict[str, Span], span: Span) -> None:
        """A query builder or ORM setting a column to now plus an amount
        (`.update(lease_expires_at=timezone.now() + timedelta(seconds=LEASE))`, SQLAlchemy
        `.values(lease_until=func.now() + func.make_interval(secs=ttl))`): the amount is
        the lease. A filter of the same chain on that column being past or unset
        (`lease_expires_at__lt=now`) makes it an acquisition."""
        spec = self.idx.sql.sites.get("s")
        if spec is None:
            return
        function = self.func.fact.sym if self.func is not None else None
        for column, value in kw.items():
            amount = now_plus_amount(value, self.idx.sql.clocks)
            if amount is None:
                continue
            if amount.get("k") == "call":  # `func.make_interval(secs=ttl)`: the seconds keyword
                amount = next((amount["kw"][k] for k in self.idx.sql.amount_keywords if k in (amount.get("kw") or {})),
                              None)
                if amount is None:
                    continue
            at = kw_spans.get(column, span)
            site = SiteFact(id=f"site:{self.path}:{at.line}:{at.column}", api=spec.api, role=spec.role, span=at,
                            value=amount, function=function,
                            group=f"site:{self.path}:{span.line}:{span.column}", unit="s")
            if self._filters_lapsed(callee.get("x"), column, self.idx.sql.acquire_lookups):
                site.extra["acquires"] = True
            self.facts.sites.append(site)
            if self.func is not None:
                self.timer_values.append(amount)

    @staticmethod
    def _filters_lapsed(chain: Expr | None, column: str, lookups: frozenset[str]) -> bool:
        """`.filter(lease_expires_at__lt=now)` / `__isnull=True` earlier in the chain."""
        while isinstance(chain, dict) and chain.get("k") == "call":
            if any(key.startswith(column + "__") and key.rsplit("__", 1)[-1] in lookups
                   for key in chain.get("kw") or {}):
                return True
            chain = (chain.get("fn") or {}).get("x")
        return False

    def _statement_text(self, expr: Expr) -> str | None:
        """The SQL of a statement argument: a literal, in a wrapper (`text("UPDATE …")`), a
        template filled in (`_RENEW.format(table=table)`: the template's text), or a module
        constant of this file or a local of this function bound once to any of these
        (`_RENEW = sa.text("UPDATE …")`, `sql = _RENEW.format(…)`)."""
        function = self.func.fact.sym if self.func is not None else None
        for _ in range(4):
            k = expr.get("k")
            if k == "ref":
                bound = [b.expr for b in self.facts.bindings
                         if b.sym == expr["sym"] and b.function in (None, function)]
                if len(bound) != 1:
                    return None
                expr = bound[0]
            elif k == "call" and (expr.get("fn") or {}).get("k") == "method" and expr["fn"].get("name") == "format":
                expr = expr["fn"].get("x") or {}
            elif k == "call" and expr.get("args"):
                expr = expr["args"][0]
            else:
                break
        return expr.get("v") if expr.get("k") == "str" else None

    def emit_sites(self, specs: list[Any], span: Span, args: list[Expr],
                   kw: dict[str, Expr], kw_spans: dict[str, Span]) -> None:
        call_id = f"site:{self.path}:{span.line}:{span.column}"
        function = self.func.fact.sym if self.func is not None else None
        for spec in specs:
            if spec.kw is not None and spec.kw in kw:
                value, at = kw[spec.kw], kw_spans[spec.kw]
            elif spec.arg is not None and spec.arg < len(args):
                value, at = args[spec.arg], span
            elif spec.implicit_default is not None:
                value, at = None, span
            else:
                continue
            site = SiteFact(
                id=f"site:{self.path}:{at.line}:{at.column}", api=spec.api, role=spec.role, span=at,
                value=value, function=function, stored_in=self.store, group=call_id, unit=spec.unit,
            )
            if any(truthy(kw.get(k)) for k in spec.acquire_kw):
                site.extra["acquires"] = True  # `set(…, nx=True, ex=ttl)`: takes the key, renews nothing
            self.facts.sites.append(site)
            if value is not None and spec.role in self.timer_roles and self.func is not None:
                self.timer_values.append(value)

    def bind_constructor(self, callee_sym: str, kw: dict[str, Expr], span: Span,
                         function: str | None) -> None:
        """Keyword arguments of a project class's constructor bind to `Class.__init__.kw`
        and, for field-declaring classes (dataclass, pydantic), to `Class.kw`."""
        if not kw:
            return
        cls = self.classes.get(callee_sym)
        if cls is not None:
            for key, value in kw.items():
                if "__init__" in cls.methods:
                    self.facts.bindings.append(Binding(f"{cls.sym}.__init__.{key}", value, span, function))
                if key in cls.annotated:
                    self.facts.bindings.append(Binding(f"{cls.sym}.{key}", value, span, function))
            return
        last = callee_sym.rsplit(".", 1)[-1]
        if callee_sym.startswith(self.module_sym + ".") or not last[:1].isupper():
            return  # an in-file function, or not a class by its name
        for key, value in kw.items():
            self.facts.bindings.append(Binding(f"{callee_sym}.__init__.{key}", value, span, function))
            self.facts.bindings.append(Binding(f"{callee_sym}.{key}", value, span, function))


HANDLERS: dict[type, Any] = {
    cst.Name: ExprMixin._name,
    cst.Attribute: ExprMixin._attribute,
    cst.Call: ExprMixin._call,
    cst.Await: ExprMixin._await,
    cst.Integer: ExprMixin._number,
    cst.Float: ExprMixin._number,
    cst.Imaginary: ExprMixin._imaginary,
    cst.SimpleString: ExprMixin._string,
    cst.ConcatenatedString: ExprMixin._concat,
    cst.FormattedString: ExprMixin._fstring,
    cst.BinaryOperation: ExprMixin._binop,
    cst.UnaryOperation: ExprMixin._unop,
    cst.BooleanOperation: ExprMixin._boolop,
    cst.Comparison: ExprMixin._compare,
    cst.IfExp: ExprMixin._ifexp,
    cst.Lambda: ExprMixin._lambda,
    cst.Subscript: ExprMixin._subscript,
    cst.Tuple: ExprMixin._sequence,
    cst.List: ExprMixin._sequence,
    cst.Set: ExprMixin._sequence,
    cst.Dict: ExprMixin._dict,
    cst.ListComp: ExprMixin._comprehension,
    cst.SetComp: ExprMixin._comprehension,
    cst.GeneratorExp: ExprMixin._comprehension,
    cst.DictComp: ExprMixin._comprehension,
    cst.NamedExpr: ExprMixin._named,
    cst.StarredElement: ExprMixin._starred,
    cst.Yield: ExprMixin._yield,
}


def _mentions(expr: object, wanted: Expr) -> bool:
    """Does `expr` contain `wanted` (positions ignored)?"""
    key = {k: v for k, v in wanted.items() if k != "at"}
    stack = [expr]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if {k: v for k, v in item.items() if k != "at"} == key:
                return True
            stack.extend(v for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend(item)
    return False


def element_bindings(target: cst.BaseExpression, iterable: Expr) -> list[tuple[str, Expr]]:
    """What a loop variable holds: `for t in tools` -> t is an element of `tools`; `for
    name, spec in table.items()` -> spec is one of the values of `table`. Other targets
    hold nothing this analysis names."""
    if isinstance(target, cst.Name):
        return [(target.value, {"k": "each", "x": iterable})]
    fn = iterable.get("fn") or {} if iterable.get("k") == "call" else {}
    if isinstance(target, cst.Tuple) and len(target.elements) == 2 and fn.get("k") == "method" \
            and fn.get("name") == "items" and not iterable.get("args") and isinstance(target.elements[1].value, cst.Name):
        return [(target.elements[1].value.value, {"k": "each", "x": fn.get("x")})]
    return []
