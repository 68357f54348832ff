"""Marker pass: classifiers of outcomes and what each branch records (DA301, DA302), Go.

Same markers as extract/py_marks_outcomes.py, on `FunctionFact.markers`:
- `{"m": "classifier", "form", "line", "col", "branches", "scope", ["permit_wait"]}` for an
  expression or type `switch` (`switch code {…}`, `switch {case errors.Is(err, X): …}`,
  `switch status.Code(err) {…}`; without `default:`, the `return` right after it is the
  fallback), an `if`/`else if` ladder or a run of `if …{return}` ending in a `return`
  (form `if`), a lookup in a `map[K]V` literal (package-level or local) with a `, ok`
  fallback (form `map`: `v, ok := T[k]; if !ok {…}`, `if v, ok := T[k]; ok {return v}`
  then `return …`), a `range` loop over a slice of struct rows whose `if` returns the row's
  state, then a `return` (form `table`: one branch per row), and a `select` (form `select`, read by DA302 only: `<-time.After(d)`).
  Branch `names` are the qualified names a test mentions (`context.DeadlineExceeded`,
  `<ip>.ErrRejected`, `<ip>.IsTimeout` for a helper, the declared type of `te` in
  `errors.As(err, &te)`, qualified types of a type switch), literals as written,
  `()Timeout` for a method call `x.Timeout()`, `!name` under a `!`. `permit_wait`: the
  classifier handles the error of a semaphore `Acquire` or a rate limiter's `Wait`.
- `{"m": "records", "outcomes"}`: the function's top-level writes that may record a state.
- `{"m": "timeout_test", "names"}`: a `bool` function whose returns test errors.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from deadline_audit.catalog import Catalog
from deadline_audit.extract.go_marks_common import GoMarkContext, top_level_specs
from deadline_audit.extract.outcome_records import WorkNouns, work_nouns, worth_recording
from deadline_audit.facts import Expr, FileFacts, FunctionFact

_WORD = re.compile(r"[A-Za-z]+")
_MAX_OUTCOMES = 6
_FUNCS = ("function_declaration", "method_declaration")


def _permit_pattern(cat: dict) -> re.Pattern[str]:
    return _compiled_permit_pattern(tuple(cat.get("permit_methods_go", ())), tuple(cat.get("limiter_words", ())),
                                    tuple(cat.get("limiter_methods_go", ())))


@cache
def _compiled_permit_pattern(methods_go: tuple[str, ...], limiter_words: tuple[str, ...],
                             limiter_methods: tuple[str, ...]) -> re.Pattern[str]:
    """A wait for a permit before the work starts (catalog outcomes.toml): a timeout there
    proves nothing was sent."""
    methods = "|".join(map(re.escape, methods_go)) or "(?!)"
    words = "|".join(map(re.escape, limiter_words)) or "(?!)"
    waits = "|".join(map(re.escape, limiter_methods)) or "(?!)"
    return re.compile(rf"\.(?:{methods})\(|(?i:{words})\w*\.(?:{waits})\(")


def queries(catalog: Catalog) -> dict[str, str]:
    return {"outcomes.state_set": """
        (assignment_statement left: (expression_list (selector_expression) @lhs) right: (expression_list)) @assign
    """}


def run(tree: Any, source: bytes, facts: FileFacts, catalog: Catalog) -> None:
    if not facts.functions:
        return
    _state_sets(tree, catalog)
    cat = catalog.file("outcomes")
    nouns = work_nouns(tuple(cat.get("work_nouns", ())))
    permit_pattern = _permit_pattern(cat)
    ctx = tree.context()
    tables = _map_tables(tree.root_node, ctx)
    rows = _Rows(tree.root_node, ctx)
    for decl in tree.root_node.named_children:
        if decl.type not in _FUNCS:
            continue
        body = decl.child_by_field_name("body")
        fn = ctx.function_at(body) if body is not None else None
        if fn is None:
            continue
        try:
            _Function(ctx, fn, decl, tables, _doc_words(decl, ctx, nouns), permit_pattern, rows).run()
        except (RecursionError, ValueError, TypeError, AttributeError):
            continue  # an odd function is not classified; the others are


def _state_sets(tree: Any, catalog: Catalog) -> None:
    """`run.Status.Phase = keelv1.RunFailed`: a field named as a status column ([sql]
    columns of terminal_writes.toml, as snake_case) set on an object, as a `state_set`
    marker `{"attr", "object", "value", "line", "col"}` of the innermost function: the call
    that later persists that object records the state (terminal_writes.py)."""
    columns = set(catalog.file("terminal_writes").get("sql", {}).get("columns", ()))
    ctx = None
    for caps in tree.matches("outcomes.state_set"):
        assign, lhs = caps["assign"][0], caps["lhs"][0]
        left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        op = assign.child_by_field_name("operator")
        if left is None or right is None or len(left.named_children) != 1 or len(right.named_children) != 1 or \
                (op is not None and op.type != "="):
            continue
        field, operand = lhs.child_by_field_name("field"), lhs.child_by_field_name("operand")
        if field is None or operand is None:
            continue
        ctx = ctx or tree.context()
        attr = ctx.text(field)
        if _CAMEL.sub("_", attr).lower() not in columns:
            continue
        fn = ctx.function_at(assign)
        if fn is None:
            continue
        line, col = ctx.at(assign)
        value = right.named_children[0]
        fn.markers.append({"m": "state_set", "attr": attr, "object": ctx.expr(operand, fn),
                           "value": {"k": "str", "v": ctx.text(value)[1:-1][:80]}
                           if value.type in ("interpreted_string_literal", "raw_string_literal")
                           else ctx.expr(value, fn), "line": line, "col": col})


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _map_tables(root: Any, ctx: GoMarkContext) -> dict[str, Any]:
    """Package-level `var name = map[K]V{…}` literals."""
    out: dict[str, Any] = {}
    for spec in top_level_specs(root, "var_declaration", "var_spec"):
        name = spec.child_by_field_name("name")
        value = spec.child_by_field_name("value")
        if name is None or value is None or not value.named_children:
            continue
        lit = value.named_children[0]
        if lit.type == "composite_literal" and (lit.child_by_field_name("type") or lit).type == "map_type":
            out[ctx.text(name)] = lit
    return out


class _Rows:
    """Slices of struct literals (`var rules = []rule{{match: is(ErrX), state: Failed}, …}`)
    and the field order of the file's struct types, for rows written without keys."""

    def __init__(self, root: Any, ctx: GoMarkContext) -> None:
        self.ctx = ctx
        self.tables: dict[str, Any] = {}
        for spec in top_level_specs(root, "var_declaration", "var_spec"):
            name, value = spec.child_by_field_name("name"), spec.child_by_field_name("value")
            if name is not None and value is not None and value.named_children and \
                    _is_slice_literal(value.named_children[0]):
                self.tables[ctx.text(name)] = value.named_children[0]
        self.structs: dict[str, list[str]] = {}
        for spec in top_level_specs(root, "type_declaration", "type_spec"):
            name, ty = spec.child_by_field_name("name"), spec.child_by_field_name("type")
            if name is not None and ty is not None and ty.type == "struct_type":
                self.structs[ctx.text(name)] = self.fields(ty)

    def fields(self, struct: Any) -> list[str]:
        out: list[str] = []
        for lst in struct.named_children:
            for decl in lst.named_children if lst.type == "field_declaration_list" else ():
                out.extend(self.ctx.text(n) for n in decl.children_by_field_name("name"))
        return out

    def row_fields(self, lit: Any) -> list[tuple[dict[str, Any], Any]]:
        """Each row of a slice literal as {field: value node}, with the row's node."""
        element = lit.child_by_field_name("type").child_by_field_name("element")
        order = self.fields(element) if element is not None and element.type == "struct_type" else \
            self.structs.get(self.ctx.text(element) if element is not None else "", [])
        body = lit.child_by_field_name("body")
        rows = []
        for el in (body.named_children if body is not None else []):
            row = el.named_children[0] if el.type == "literal_element" and el.named_children else el
            if row.type == "composite_literal":
                row = row.child_by_field_name("body")
            if row is None or row.type != "literal_value":
                continue
            values: dict[str, Any] = {}
            for i, part in enumerate(c for c in row.named_children if c.type != "comment"):
                if part.type == "keyed_element":
                    kv = [p.named_children[0] if p.type == "literal_element" and p.named_children else p
                          for p in part.named_children if p.type != "comment"]
                    if len(kv) == 2:
                        values[self.ctx.text(kv[0])] = kv[1]
                elif part.type == "literal_element" and part.named_children and i < len(order):
                    values[order[i]] = part.named_children[0]
            rows.append((values, el))
        return rows


def _is_slice_literal(node: Any) -> bool:
    ty = node.child_by_field_name("type") if node.type == "composite_literal" else None
    return ty is not None and ty.type in ("slice_type", "array_type", "implicit_length_array_type")


def _doc_words(decl: Any, ctx: GoMarkContext, is_noun: WorkNouns) -> list[str]:
    words: set[str] = set()
    prev = decl.prev_named_sibling
    count = 0
    while prev is not None and prev.type == "comment" and count < 12:
        words.update(w.lower() for w in _WORD.findall(ctx.text(prev)))
        prev = prev.prev_named_sibling
        count += 1
    return sorted(w for w in words if is_noun(w))


def _statements(block: Any) -> list[Any]:
    """The statements of a block, a case body or a statement list."""
    if block is None:
        return []
    out = []
    for child in block.named_children:
        if child.type == "statement_list":
            out.extend(c for c in child.named_children if c.type != "comment")
        elif child.type == "block":
            out.extend(_statements(child))
        elif child.type != "comment" and block.type in ("block", "statement_list"):
            out.append(child)
    return out


def _last_assignment(stmts: list[Any], i: int) -> Any:
    """The assignment the statement at `i` tests, across the calls in between
    (`err := sem.Acquire(waitCtx, 1)`, `cancel()`, then `if err != nil`)."""
    for j in range(i - 1, max(i - 4, -1), -1):
        t = stmts[j].type
        if t in ("short_var_declaration", "assignment_statement"):
            return stmts[j]
        if t not in ("expression_statement", "defer_statement"):
            return None
    return None


class _Function:
    def __init__(self, ctx: GoMarkContext, fn: FunctionFact, decl: Any, tables: dict[str, Any],
                 scope: list[str], permit_pattern: re.Pattern[str], rows: _Rows) -> None:
        self.ctx = ctx
        self.rows = rows
        self.permit_pattern = permit_pattern
        self.fn = fn
        self.decl = decl
        self.tables = tables
        self.scope = scope
        self.found: list[dict] = []
        self.permit = 0  # > 0 inside the handling of a permit wait (semaphore, rate limiter)

    def local_type(self, sym: str) -> str | None:
        """The declared type of a local or parameter of this function (or of a literal in it)."""
        return self.ctx.typed_locals().get(sym) if sym.startswith(self.fn.sym + ".") else None

    def run(self) -> None:
        body = self.decl.child_by_field_name("body")
        stmts = _statements(body)
        self.tables = dict(self.tables)
        self.row_tables = dict(self.rows.tables)
        for st in stmts:  # the function's own `table := map[K]V{…}`
            if st.type == "short_var_declaration":
                left, right = st.child_by_field_name("left"), st.child_by_field_name("right")
                if left is not None and right is not None and len(left.named_children) == 1 and \
                        len(right.named_children) == 1 and right.named_children[0].type == "composite_literal":
                    lit = right.named_children[0]
                    if (lit.child_by_field_name("type") or lit).type == "map_type":
                        self.tables[self.ctx.text(left.named_children[0])] = lit
                    elif _is_slice_literal(lit):
                        self.row_tables[self.ctx.text(left.named_children[0])] = lit
        self.block(stmts)
        self.summaries(stmts)
        for marker in self.found:
            marker["scope"] = self.scope
            self.fn.markers.append(marker)

    # -- walking --------------------------------------------------------------------
    def block(self, stmts: list[Any]) -> None:
        i = 0
        while i < len(stmts):
            st = stmts[i]
            t = st.type
            if t == "if_statement" and self._after_permit_wait(st, _last_assignment(stmts, i)):
                self.permit += 1  # what this `if` classifies is a wait for a permit, before any work
                try:
                    self.block([st])
                finally:
                    self.permit -= 1
                i += 1
                continue
            if t == "if_statement":
                if i + 1 < len(stmts) and self.map_if(st, stmts[i + 1]):
                    i += 1
                    continue
                if st.child_by_field_name("alternative") is None and self._ends_in_return(st):
                    end = self.if_run(stmts, i)
                    if end > i:
                        for j in range(i, end):
                            self.block(_statements(stmts[j].child_by_field_name("consequence")))
                        i = end
                        continue
                self.if_chain(st)
            elif t in ("expression_switch_statement", "type_switch_statement"):
                self.switch(st, stmts[i + 1] if i + 1 < len(stmts) else None)
            elif t == "short_var_declaration" and i + 1 < len(stmts):
                self.map_lookup(st, stmts[i + 1])
            elif t in ("for_statement", "labeled_statement"):
                if t == "for_statement":
                    self.loop_table(st, stmts[i + 1:])
                for c in st.named_children:
                    if c.type == "block":
                        self.block(_statements(c))
                    elif c.type == "for_statement":
                        self.block([c])
            elif t == "block":
                self.block(_statements(st))
            elif t == "select_statement":
                self.select(st)
            i += 1

    def loop_table(self, loop: Any, rest: list[Any]) -> None:
        """`for _, r := range rules { if r.match(err) { return r.state } }` over a slice of
        struct rows, then the `return` after it (the `if …{return}` checks between them
        are branches too): one branch per row, named by what the row's test fields hold."""
        clause = next((c for c in loop.named_children if c.type == "range_clause"), None)
        body = loop.child_by_field_name("body")
        if clause is None or body is None:
            return
        left, right = clause.child_by_field_name("left"), clause.child_by_field_name("right")
        if left is None or right is None or self.ctx.text(right) not in self.row_tables:
            return
        var = self.ctx.text(left.named_children[-1]) if left.named_children else ""
        stmts = _statements(body)
        if len(stmts) != 1 or stmts[0].type != "if_statement" or \
                stmts[0].child_by_field_name("alternative") is not None:
            return
        cond = stmts[0].child_by_field_name("condition")
        returned = _statements(stmts[0].child_by_field_name("consequence"))
        value = returned[-1].named_children[0] if returned and returned[-1].type == "return_statement" and \
            returned[-1].named_children else None
        if value is not None and value.type == "expression_list":
            value = value.named_children[0] if value.named_children else None
        state_field = self._field_of(var, value)
        if cond is None or state_field is None:
            return
        tests = {f for f in self._fields_used(var, cond) if f != state_field}
        end = 0  # `var te *TimeoutError` declares what a check after the loop tests
        while end < len(rest) and (rest[end].type == "var_declaration" or rest[end].type == "if_statement" and
                                   rest[end].child_by_field_name("alternative") is None and
                                   self._ends_in_return(rest[end])):
            end += 1
        if not tests or end >= len(rest) or rest[end].type != "return_statement":
            return
        branches = []
        for values, row in self.rows.row_fields(self.row_tables[self.ctx.text(right)]):
            state = values.get(state_field)
            if state is None:
                continue
            line, col = self.ctx.at(state)
            names = [n for f in sorted(tests) if f in values for n in self.names(values[f])]
            inputs = [self.ctx.text(values[f])[:80] for f in sorted(tests) if f in values]
            branches.append({"inputs": inputs, "names": names, "line": line, "col": col, "fallback": False,
                             "outcomes": [{"how": "return", "expr": self.enc(state), "line": line, "col": col}]})
        for check in rest[:end]:
            if check.type != "if_statement":
                continue
            c = check.child_by_field_name("condition")
            branches.append(self.branch([self.ctx.text(c)[:80]], self.names(c), check.child_by_field_name("consequence"), c))
        line, col = self.ctx.at(rest[end])
        branches.append({"inputs": [], "names": [], "line": line, "col": col, "fallback": True,
                         "outcomes": self.outcomes([rest[end]])})
        self.add("table", loop, branches)

    def _field_of(self, var: str, node: Any) -> str | None:
        """`r.state` -> "state" when r is `var`."""
        if node is None or node.type != "selector_expression":
            return None
        operand, field = node.child_by_field_name("operand"), node.child_by_field_name("field")
        if operand is None or field is None or self.ctx.text(operand) != var:
            return None
        return self.ctx.text(field)

    def _fields_used(self, var: str, node: Any) -> set[str]:
        found: set[str] = set()
        stack = [node]
        while stack:
            n = stack.pop()
            field = self._field_of(var, n)
            if field is not None:
                found.add(field)
            else:
                stack.extend(n.named_children)
        return found

    def _after_permit_wait(self, st: Any, previous: Any) -> bool:
        """`if err := sem.Acquire(ctx, 1); err != nil {…}`, or the same after `err := …`."""
        if self.permit:
            return False  # already inside one
        init = st.child_by_field_name("initializer")
        texts = [self.ctx.text(init)] if init is not None else []
        if previous is not None and previous.type in ("short_var_declaration", "assignment_statement"):
            texts.append(self.ctx.text(previous))
        return any(self.permit_pattern.search(t) for t in texts)

    def if_chain(self, node: Any) -> None:
        branches = []
        cur = node
        while cur is not None and cur.type == "if_statement":
            cond = cur.child_by_field_name("condition")
            cons = cur.child_by_field_name("consequence")
            inputs, names = [self.ctx.text(cond)[:80]], self.names(cond)
            alt = cur.child_by_field_name("alternative")
            if branches or names or alt is not None:  # add() drops a lone `if` naming nothing
                branches.append(self.branch(inputs, names, cons, cond))
            self.block(_statements(cons))
            if alt is not None and alt.type == "block":
                stmts = _statements(alt)
                if stmts:
                    branches.append(self.branch([], [], alt, stmts[0], fallback=True))
                self.block(stmts)
                alt = None
            cur = alt
        self.add("if", node, branches)

    def if_run(self, stmts: list[Any], start: int) -> int:
        j = start
        while j < len(stmts) and stmts[j].type == "if_statement" and \
                stmts[j].child_by_field_name("alternative") is None and self._ends_in_return(stmts[j]):
            j += 1
        if j - start < 2 or j >= len(stmts) or stmts[j].type != "return_statement":
            return start
        branches = []
        for s in stmts[start:j]:
            cond = s.child_by_field_name("condition")
            found = self._lookup(s.child_by_field_name("initializer"))
            if found is not None and cond is not None and self.ctx.text(cond).replace(" ", "") == found[1]:
                # `if v, ok := table[code]; ok { return v }` among the run: each entry is a branch
                branches.extend(self._map_branches(found[0]))
                continue
            branches.append(self.branch([self.ctx.text(cond)[:80]], self.names(cond),
                                        s.child_by_field_name("consequence"), cond))
        branches.append({"inputs": [], "names": [], "line": self.ctx.at(stmts[j])[0], "col": self.ctx.at(stmts[j])[1],
                         "fallback": True, "outcomes": self.outcomes([stmts[j]])})
        self.add("if", stmts[start], branches)
        return j

    @staticmethod
    def _ends_in_return(node: Any) -> bool:
        stmts = _statements(node.child_by_field_name("consequence"))
        return bool(stmts) and stmts[-1].type == "return_statement"

    def switch(self, node: Any, after: Any = None) -> None:
        """A `switch`; without `default:`, a `return` right after it whose cases all return
        is the fallback (`switch code {case …: return X}; return StatusFailed`)."""
        branches = []
        for case in node.named_children:
            if case.type == "default_case":
                branches.append(self.branch([], [], case, case, fallback=True))
            elif case.type in ("expression_case", "type_case"):
                values = [c for c in case.children_by_field_name("value" if case.type == "expression_case" else "type")]
                exprs = []
                for v in values:
                    exprs.extend(v.named_children if v.type == "expression_list" else [v])
                inputs = [self.ctx.text(e)[:80] for e in exprs]
                names = [n for e in exprs for n in self.names(e)]
                branches.append(self.branch(inputs, names, case, case))
            else:
                continue
            self.block(_statements(case))
        if after is not None and after.type == "return_statement" and branches and \
                not any(b["fallback"] for b in branches) and \
                all(b["outcomes"] and b["outcomes"][-1]["how"] == "return" for b in branches):
            line, col = self.ctx.at(after)
            branches.append({"inputs": [], "names": [], "line": line, "col": col, "fallback": True,
                             "outcomes": self.outcomes([after])})
        self.add("switch", node, branches)

    def _lookup(self, decl: Any) -> tuple[Any, str] | None:
        """`v, ok := table[code]` on a map literal: (the literal, the name of ok)."""
        if decl is None or decl.type != "short_var_declaration":
            return None
        left, right = decl.child_by_field_name("left"), decl.child_by_field_name("right")
        if left is None or right is None or len(left.named_children) != 2 or len(right.named_children) != 1:
            return None
        index = right.named_children[0]
        if index.type != "index_expression":
            return None
        operand = index.child_by_field_name("operand")
        if operand is None or self.ctx.text(operand) not in self.tables:
            return None
        return self.tables[self.ctx.text(operand)], self.ctx.text(left.named_children[1])

    def map_lookup(self, decl: Any, nxt: Any) -> None:
        """`st, ok := table[code]` then `if !ok { … }`."""
        found = self._lookup(decl)
        if found is None or nxt.type != "if_statement":
            return
        lit, ok = found
        cond = nxt.child_by_field_name("condition")
        if cond is None or self.ctx.text(cond).replace(" ", "") != f"!{ok}":
            return
        self._map_classifier(decl, lit, nxt.child_by_field_name("consequence"))

    def map_if(self, st: Any, nxt: Any) -> bool:
        """`if v, ok := table[code]; ok { return v }` then `return fallback` (or `; !ok {…}`)."""
        found = self._lookup(st.child_by_field_name("initializer"))
        cond = st.child_by_field_name("condition")
        if found is None or cond is None or st.child_by_field_name("alternative") is not None:
            return False
        lit, ok = found
        test = self.ctx.text(cond).replace(" ", "")
        if test == ok and nxt.type == "return_statement":
            self._map_classifier(st, lit, None, nxt)
            return True
        if test == f"!{ok}":
            self._map_classifier(st, lit, st.child_by_field_name("consequence"))
            return False  # what follows is ordinary code
        return False

    def _map_classifier(self, at: Any, lit: Any, fallback_block: Any, fallback_stmt: Any = None) -> None:
        branches = self._map_branches(lit)
        if fallback_stmt is not None:
            line, col = self.ctx.at(fallback_stmt)
            branches.append({"inputs": [], "names": [], "line": line, "col": col, "fallback": True,
                             "outcomes": self.outcomes([fallback_stmt])})
        else:
            stmts = _statements(fallback_block)
            if stmts:
                branches.append(self.branch([], [], fallback_block, stmts[0], fallback=True))
        self.add("map", at, branches)

    def _map_branches(self, lit: Any) -> list[dict]:
        """One branch per entry of a map literal: its key, and the value it yields."""
        body = lit.child_by_field_name("body")
        branches = []
        for el in (body.named_children if body is not None else []):
            if el.type != "keyed_element":
                continue
            parts = [c for c in el.named_children if c.type != "comment"]
            if len(parts) != 2:
                continue
            key, val = (p.named_children[0] if p.type == "literal_element" and p.named_children else p for p in parts)
            line, col = self.ctx.at(val)
            branches.append({"inputs": [self.ctx.text(key)[:80]], "names": self.names(key), "line": line, "col": col,
                             "fallback": False, "outcomes": [{"how": "return", "expr": self.enc(val),
                                                              "line": line, "col": col}]})
        return branches

    def select(self, node: Any) -> None:
        """`select { case r := <-done: …; case <-time.After(d): … }`: each case's receive."""
        branches = []
        for case in node.named_children:
            if case.type == "default_case":
                continue
            if case.type != "communication_case":
                continue
            comm = case.child_by_field_name("communication")
            branches.append(self.branch([self.ctx.text(comm)[:80]] if comm is not None else [],
                                        self.names(comm), case, case))
            self.block(_statements(case))
        self.add("select", node, branches)

    # -- branches and outcomes -------------------------------------------------------
    def branch(self, inputs: list[str], names: list[str], body: Any, at: Any, fallback: bool = False) -> dict:
        line, col = self.ctx.at(at)
        return {"inputs": inputs, "names": names, "line": line, "col": col, "fallback": fallback,
                "outcomes": self.outcomes(_statements(body))}

    def outcomes(self, stmts: list[Any], holders: set[str] | None = None) -> list[dict | None]:
        """What the statements record, up to _MAX_OUTCOMES. With `holders` (summaries), an
        assignment to anything but a field of a holder is None: counted, not encoded."""
        out: list[dict | None] = []
        for st in stmts:
            if len(out) >= _MAX_OUTCOMES:
                break
            t = st.type
            line, col = self.ctx.at(st)
            if t == "return_statement":
                values = st.named_children[0].named_children if st.named_children and \
                    st.named_children[0].type == "expression_list" else st.named_children
                for v in values[:3]:
                    out.append({"how": "return", "expr": self.enc(v), "line": line, "col": col})
                break
            if t in ("assignment_statement", "short_var_declaration"):
                left, right = st.child_by_field_name("left"), st.child_by_field_name("right")
                if left is None or right is None:
                    continue
                ls, rs = left.named_children, right.named_children
                if len(ls) == len(rs):
                    for lv, rv in zip(ls, rs):
                        target = self.ctx.text(lv)[:80]
                        if holders is not None and ("." not in target or target.split(".", 1)[0] not in holders):
                            out.append(None)
                            continue
                        out.append({"how": "assign", "expr": self.enc(rv), "target": target,
                                    "line": line, "col": col})
            elif t == "expression_statement" and st.named_children and st.named_children[0].type == "call_expression":
                out.append({"how": "call", "expr": self.enc(st.named_children[0]), "line": line, "col": col})
            elif t in ("go_statement", "defer_statement"):
                continue
        return out[:_MAX_OUTCOMES]

    def enc(self, node: Any, depth: int = 0) -> Expr:
        t = node.type
        if depth > 4:
            return {"k": "unknown", "text": self.ctx.text(node)[:80]}
        if t in ("interpreted_string_literal", "raw_string_literal"):
            return {"k": "str", "v": self.ctx.text(node)[1:-1][:80]}
        if t == "nil":
            return {"k": "none"}
        if t in ("identifier", "selector_expression"):
            return self.ctx.expr(node, self.fn)
        if t == "parenthesized_expression" and node.named_children:
            return self.enc(node.named_children[0], depth + 1)
        if t == "unary_expression" and node.named_children:
            return self.enc(node.named_children[-1], depth + 1)
        if t == "composite_literal":
            body = node.child_by_field_name("body")
            fields: dict[str, Expr] = {}
            for el in (body.named_children if body is not None else []):
                if el.type == "keyed_element":
                    parts = [c for c in el.named_children if c.type != "comment"]
                    if len(parts) == 2:
                        key, val = (p.named_children[0] if p.type == "literal_element" and p.named_children else p
                                    for p in parts)
                        fields[self.ctx.text(key)] = self.enc(val, depth + 1)
            ty = node.child_by_field_name("type")
            return {"k": "obj", "type": self.ctx.text(ty)[:80] if ty is not None else "", "fields": fields}
        if t == "call_expression":
            callee = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            arg_nodes = [a for a in (args.named_children if args is not None else []) if a.type != "comment"]
            if callee is not None and callee.type == "identifier" and self.ctx.text(callee) == "string" and \
                    len(arg_nodes) == 1:
                return self.enc(arg_nodes[0], depth + 1)
            return {"k": "call", "fn": self.ctx.callee(callee, self.fn, depth + 1) if callee is not None else None,
                    "name": self.ctx.text(callee)[:80] if callee is not None else "",
                    "args": [self.enc(a, depth + 1) for a in arg_nodes[:6]], "kw": {}}
        return {"k": "unknown", "text": self.ctx.text(node)[:80]}

    def names(self, node: Any) -> list[str]:
        """Qualified names, literals and `()Method` calls a test mentions."""
        out: list[str] = []
        if node is None:
            return out
        stack = [node]
        while stack and len(out) < 16:
            n = stack.pop()
            t = n.type
            if t == "unary_expression" and self.ctx.text(n).startswith("!"):
                # `!errors.Is(err, context.DeadlineExceeded)`: the branch is for the others
                out.extend("!" + name for name in self.names(n.named_children[-1]) if not name.startswith("!"))
                continue
            if t == "selector_expression":
                operand, field = n.child_by_field_name("operand"), n.child_by_field_name("field")
                if operand is not None and operand.type == "identifier" and self.ctx.text(operand) in self.ctx.imports:
                    out.append(f"{self.ctx.imports[self.ctx.text(operand)]}.{self.ctx.text(field)}")
                    continue
                parent = n.parent
                if parent is not None and parent.type == "call_expression" and field is not None:
                    out.append("()" + self.ctx.text(field))
                stack.extend(n.named_children)
                continue
            if t == "identifier":
                ref = self.ctx.name_ref(self.ctx.text(n), self.fn)
                sym = ref["sym"]
                if sym.startswith(self.ctx.pfx) and sym.count(".") == self.ctx.pfx.count("."):
                    out.append(sym[len("sym:go:"):])
                elif self.local_type(sym):  # `errors.As(err, &te)`: the type of `te`
                    out.append(self.local_type(sym))
                continue
            if t == "qualified_type":
                pkg, name = n.child_by_field_name("package"), n.child_by_field_name("name")
                if pkg is not None and name is not None and self.ctx.text(pkg) in self.ctx.imports:
                    out.append(f"{self.ctx.imports[self.ctx.text(pkg)]}.{self.ctx.text(name)}")
                continue
            if t == "type_identifier":
                out.append(self.ctx.pfx[len("sym:go:"):] + self.ctx.text(n))
                continue
            if t in ("interpreted_string_literal", "raw_string_literal", "int_literal"):
                out.append(self.ctx.text(n))
                continue
            stack.extend(n.named_children)
        return out

    def add(self, form: str, at: Any, branches: list[dict]) -> None:
        if not branches or not any(b["outcomes"] for b in branches):
            return
        if len(branches) < 2 and not branches[0]["names"]:  # `if err != nil {…}` alone classifies nothing
            return
        listed = sum(1 for b in branches if not b["fallback"])
        if not any(b["names"] for b in branches) and not (listed >= 2 and listed < len(branches)):
            return  # names no error (DA302) and has no fallback after two cases (DA301)
        line, col = self.ctx.at(at)
        marker = {"m": "classifier", "form": form, "line": line, "col": col, "branches": branches}
        if self.permit:
            marker["permit_wait"] = True
        self.found.append(marker)

    def summaries(self, stmts: list[Any]) -> None:
        holders = set(self.fn.param_names)  # writes that outlive the call: fields of params, receiver
        receiver = self.decl.child_by_field_name("receiver")
        if receiver is not None:
            for p in receiver.named_children:
                name = p.child_by_field_name("name")
                if name is not None:
                    holders.add(self.ctx.text(name))
        records = [o for o in self.outcomes(stmts, holders) if o is not None and worth_recording(o)]
        if records:
            self.fn.markers.append({"m": "records", "outcomes": records})
        result = self.decl.child_by_field_name("result")
        if result is not None and self.ctx.text(result) == "bool":
            names: list[str] = []
            stack = list(stmts)
            while stack:
                n = stack.pop()
                if n.type == "return_statement":
                    names.extend(self.names(n))
                elif n.type not in ("func_literal",):
                    stack.extend(c for c in n.named_children if c.type.endswith(("statement", "block",
                                                                                  "statement_list", "case"))
                                 or c.type == "return_statement")
            if names:
                self.fn.markers.append({"m": "timeout_test", "names": names[:16]})
