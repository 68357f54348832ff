"""Marker pass: goroutines and what they join, loops that stop with a context (DA202).

Writes (positions 1-based, code points):
- `CallFact.extra["joined"]` on the call of a `go` statement: how the enclosing function
  waits for it on every path before returning — `"Wait"` (a `WaitGroup`/`errgroup`
  `Wait()` after the statement) or `"receive"` (a channel receive after it, other than
  `<-x.Done()` and `<-time.After(...)`). Nested func literals do not count: they are other
  functions. A join that waits only on some paths — one arm of a `select` with others
  (`<-ctx.Done()`, `time.After`, `default`), inside a branch the `go` is not in, or after
  a `return` that skips it — is `CallFact.extra["partial_join"]` (why, in words) instead.
- `FunctionFact.markers` `{"m": "stops_with_ctx", "ctx": "<text>", "expr": Expr, "line",
  "col"}`: the function loops (`for`) on a `select` with a `case <-<expr>.Done():`, i.e.
  it exists to stop when that context ends.

Tree-sitter Queries find the candidates (matching runs in C); only they are walked.
Method names for joins are catalog data (`terminal_writes.toml`, `[go] join_methods`).
"""

from __future__ import annotations

import re
from typing import Any

from deadline_audit.catalog import Catalog
from deadline_audit.extract.go_marks_common import GoMarkContext
from deadline_audit.extract.go_text import Positions
from deadline_audit.facts import FileFacts, FunctionFact

_FUNCTIONS = ("function_declaration", "method_declaration", "func_literal")


def queries(catalog: Catalog) -> dict[str, str]:
    joins = tuple(catalog.file("terminal_writes").get("go", {}).get("join_methods", ("Wait",)))
    names = " ".join(f'"{n}"' for n in joins) or '"Wait"'
    return {"ctx": f"""
        (go_statement (call_expression) @go)
        (unary_expression operator: "<-" operand: (_) @operand) @recv
        (return_statement) @ret
        (if_statement condition: (_) @cond consequence: (block) @then)
        ((call_expression function: (selector_expression field: (field_identifier) @jm)) @join
         (#any-of? @jm {names}))
    """}


def run(tree: Any, source: bytes, facts: FileFacts, catalog: Catalog) -> None:
    if b"go " not in source and b"<-" not in source and b".Err()" not in source:
        return
    # each capture list sorted by position so that markers (which wait joins a
    # goroutine) are deterministic
    found: dict[str, list[Any]] = {}
    for match in tree.matches("ctx"):
        for name, nodes in match.items():
            found.setdefault(name, []).extend(nodes)
    caps = {name: sorted(nodes, key=lambda n: (n.start_byte, n.end_byte)) for name, nodes in found.items()}
    pos = Positions(source)
    calls = {(c.span.line, c.span.column): c for c in facts.calls if c.in_go}
    functions = {(f.span.line, f.span.column): f for f in facts.functions}
    by_line: dict[int, list[FunctionFact]] = {}
    for f in facts.functions:
        by_line.setdefault(f.span.line, []).append(f)

    waits: list[tuple[Any, str]] = []  # (node, how) of joins, in any function
    for node in caps.get("join", ()):
        waits.append((node, "Wait"))
    done = _DoneContexts(tree, source, facts, pos)
    for node in caps.get("recv", ()):
        operand = node.child_by_field_name("operand")
        if operand is not None and _is_done_or_timer(operand, source):
            if operand.type == "call_expression" and _selector_field(operand, source) == "Done":
                _mark_stop(node, operand, source, pos, functions, by_line, done.ctx)
                done.after_done(node, operand)
            continue
        waits.append((node, "receive"))
    for cond, then in zip(caps.get("cond", ()), caps.get("then", ())):
        done.after_err(cond, then)

    returns = caps.get("ret", ())
    for call_node in caps.get("go", ()):
        fact = calls.get(tuple(pos.at(call_node)))
        if fact is None:
            continue
        stmt = call_node.parent
        owner = _function_of(stmt)
        partial = None
        literal = _closure_text(call_node, source)
        for wait, how in waits:
            if literal is not None and not _mentions_waited(wait, how, literal, source):
                continue  # `go func() {…}()` that neither sends on that channel nor holds that group
            if wait.start_byte > stmt.end_byte and _function_of(wait) == owner:
                why = _partial(stmt, wait, owner, returns)
                if why is None:
                    fact.extra["joined"] = how
                    fact.extra.pop("partial_join", None)
                    break
                partial = partial or why
                fact.extra["partial_join"] = partial


def _closure_text(call_node: Any, source: bytes) -> bytes | None:
    """The source of `go func(…) {…}(…)` (the literal and its arguments); None for `go f(x)`,
    whose body is elsewhere."""
    fn = call_node.child_by_field_name("function")
    if fn is None or fn.type != "func_literal":
        return None
    return source[call_node.start_byte:call_node.end_byte]


_WORD = re.compile(rb"[A-Za-z_][\w]*")


def _mentions_waited(wait: Any, how: str, closure: bytes, source: bytes) -> bool:
    """Does the goroutine's literal name what the join waits on — the channel received
    from (`<-done`, `<-s.results`), the group waited for (`wg.Wait()`)?"""
    if how == "Wait":
        fn = wait.child_by_field_name("function")
        target = fn.child_by_field_name("operand") if fn is not None else None
    else:
        target = wait.child_by_field_name("operand")
    if target is None:
        return True
    names = _WORD.findall(source[target.start_byte:target.end_byte])
    if not names:
        return True
    last = names[-1]  # `s.results` -> results; `done` -> done
    return re.search(rb"(?<![\w])" + re.escape(last) + rb"(?![\w])", closure) is not None


_BRANCHES = ("if_statement", "expression_switch_statement", "type_switch_statement")


def _partial(stmt: Any, wait: Any, owner: Any, returns) -> str | None:
    """Why a join after the `go` statement does not wait on every path, or None: it is
    one arm of a `select` with others, it sits in a branch the `go` is not in, or a
    `return` between the two leaves without it."""
    ancestors = set()
    node = stmt.parent
    while node is not None:
        ancestors.add(node.id)
        node = node.parent
    prev, node = wait, wait.parent
    while node is not None and node.type not in _FUNCTIONS:
        if node.type == "select_statement" and node.id not in ancestors:
            arms = [c for c in node.named_children if c.type in ("communication_case", "default_case")]
            if len(arms) > 1:
                return "a select with another arm"
        if node.type in _BRANCHES and node.id not in ancestors and _in_arm(node, prev):
            return "only on some paths"
        prev, node = node, node.parent
    for ret in returns:
        if stmt.end_byte < ret.start_byte < wait.start_byte and _function_of(ret) == owner:
            return "a return before it"
    return None


_ERR_DONE = re.compile(r"^\s*(?:errors\.Is\(\s*)?([\w.]+)\.Err\(\)\s*(?:!=\s*nil|==\s*context\.\w+|,\s*context\.\w+\))\s*$")


class _DoneContexts:
    """Calls made with a context already known to be done (DA201 certainty):
    `CallFact.extra["ctx_done"] = {"ctx": Expr, "how": str, "line", "col"}` on each call in
    a `case <-X.Done():` arm, after a `<-X.Done()` statement in the same block, or in the
    body of `if X.Err() != nil` / `if X.Err() == context.Canceled` /
    `if errors.Is(X.Err(), context.DeadlineExceeded)`. Only `X.Err()` of the context
    itself counts: an `errors.Is(err, …)` on some call's error proves nothing."""

    def __init__(self, tree: Any, source: bytes, facts: FileFacts, pos: Positions) -> None:
        self.src, self.pos, self.tree, self.facts = source, pos, tree, facts
        self.calls = {(c.span.line, c.span.column): c for c in facts.calls}
        self._ctx: GoMarkContext | None = None

    @property
    def ctx(self) -> GoMarkContext | None:
        """Built on first use: most files have no done context to report."""
        if self._ctx is None and self.calls:
            self._ctx = self.tree.context()
        return self._ctx

    def after_done(self, recv: Any, operand: Any) -> None:
        x = operand.child_by_field_name("function").child_by_field_name("operand")
        holder = recv.parent
        if holder is not None and holder.type == "receive_statement":
            holder = holder.parent
        if holder is not None and holder.type == "communication_case":
            body = [c for c in holder.named_children if c.type == "statement_list"]
            self._mark(body, x, recv, f"inside its `case <-{self._text(x)}.Done():` arm")
        elif holder is not None and holder.type == "expression_statement":
            following, sibling = [], holder.next_named_sibling
            while sibling is not None:
                following.append(sibling)
                sibling = sibling.next_named_sibling
            self._mark(following, x, recv, f"after `<-{self._text(x)}.Done()`")

    def after_err(self, cond: Any, then: Any) -> None:
        m = _ERR_DONE.match(self._text(cond))
        if m is None:
            return
        x = cond
        while x is not None and not (x.type == "call_expression" and _selector_field(x, self.src) == "Err"):
            x = next((c for c in x.named_children if b".Err()" in self.src[c.start_byte:c.end_byte]), None)
        if x is not None:
            x = x.child_by_field_name("function").child_by_field_name("operand")
            self._mark([then], x, cond, f"after `{self._text(cond).strip()}`")

    def _mark(self, nodes: list, ctx_node: Any, where: Any, how: str) -> None:
        if self.ctx is None:
            return
        fn = self.ctx.function_at(where)
        ctx_expr = self.ctx.expr(ctx_node, fn)
        line, col = self.pos.at(where)
        stack = list(nodes)
        while stack:
            node = stack.pop()
            if node.type in _FUNCTIONS:
                continue
            if node.type == "call_expression":
                fact = self.calls.get(tuple(self.pos.at(node)))
                if fact is not None and not fact.in_go:
                    fact.extra.setdefault("ctx_done", {"ctx": ctx_expr, "how": how, "line": line, "col": col})
            stack.extend(node.named_children)

    def _text(self, node: Any) -> str:
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _in_arm(branch: Any, child: Any) -> bool:
    """Is `child` (a direct child of an if/switch) one of its arms, rather than the
    initializer or condition that always runs?"""
    if branch.type == "if_statement":
        return child.id in {n.id for n in (branch.child_by_field_name("consequence"),
                                           branch.child_by_field_name("alternative")) if n is not None}
    return child.type in ("expression_case", "type_case", "default_case")


def _function_of(node: Any) -> Any:
    node = node.parent
    while node is not None and node.type not in _FUNCTIONS:
        node = node.parent
    return node.id if node is not None else None


def _selector_field(call: Any, source: bytes) -> str | None:
    fn = call.child_by_field_name("function")
    if fn is None or fn.type != "selector_expression":
        return None
    field = fn.child_by_field_name("field")
    return source[field.start_byte:field.end_byte].decode() if field is not None else None


def _is_done_or_timer(operand: Any, source: bytes) -> bool:
    """`<-x.Done()`, `<-time.After(d)`, `<-time.Tick(d)`, `<-ticker.C`: not a join."""
    if operand.type == "call_expression":
        return _selector_field(operand, source) in ("Done", "After", "Tick")
    if operand.type == "selector_expression":
        field = operand.child_by_field_name("field")
        return field is not None and source[field.start_byte:field.end_byte] == b"C"
    return False


def _mark_stop(recv: Any, operand: Any, source: bytes, pos: Positions,
               functions: dict[tuple[int, int], FunctionFact], by_line: dict[int, list[FunctionFact]],
               names: GoMarkContext | None = None) -> None:
    """`for { select { case <-ctx.Done(): … } }`: mark the function holding the loop."""
    node, seen_select, seen_for = recv.parent, False, False
    while node is not None and node.type not in _FUNCTIONS:
        seen_select = seen_select or node.type == "select_statement"
        seen_for = seen_for or (seen_select and node.type == "for_statement")
        node = node.parent
    if node is None or not seen_for:
        return
    at = tuple(pos.at(node))
    fact = functions.get(at) or next(iter(by_line.get(at[0], ())), None)
    if fact is None:
        return
    x = operand.child_by_field_name("function").child_by_field_name("operand")
    line, col = pos.at(recv)
    marker = {"m": "stops_with_ctx", "ctx": source[x.start_byte:x.end_byte].decode("utf-8", "replace"),
              "line": line, "col": col}
    if names is not None:
        marker["expr"] = names.expr(x, fact)
    fact.markers.append(marker)

