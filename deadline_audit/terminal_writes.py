"""Which calls are terminal-state writes (SPEC §4 "Terminal writes"), by meaning.

A call records how a unit of work ended when:
- its name holds a finishing verb (`finish`, `complete`, `fail`, `mark`…) and the call
  names a unit of work — in its own name, its receiver's name, the receiver's type (and
  that type's package: `runs.Store`), or an argument (`exports.complete(export.id, …)`);
- its name holds a state verb with a state noun and a unit of work (`SetRunStatus`);
- its name holds a finishing or state verb with final-state words, noun or not
  (`PersistFinalStatus`, `store_final_result`, `record_outcome`, `MarkRefunded`);
- a string argument is SQL that updates a status column;
- it calls a program function whose body makes such a write with its ctx parameter (Go)
  or awaits one unshielded (Python): a terminal *writer* (summary computed once per
  function). The converse holds too: a program function named like a write whose body
  discards its ctx parameter (writes under `context.Background()`/`WithoutCancel`, or
  never passes the ctx on) is not a terminal write at its call sites — the body decides.

Never terminal, whatever the words: receivers that are tracing/metrics, futures and
promises, HTTP responses, bodies and connections (by name or type), and the methods listed
as `not_terminal_methods`. All words live in `rules/catalog/terminal_writes.toml`.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from deadline_audit.facts import CallFact, Expr, walk_exprs

if TYPE_CHECKING:  # the graph is optional: name-only use needs no graph
    from deadline_audit.graph import TimeoutGraph

_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SQL_TABLE = re.compile(r"(?is)\s*update\s+(?:\w+\.)?\"?(\w+)")
_DML = re.compile(r"(?is)\s*(?:insert|update|delete|upsert|merge|replace)\b")
_SQL_STATE = re.compile(r"(?i)\b(?:status|state|phase)\"?\s*=\s*'(\w+)'")
_SET_FRAGMENT = re.compile(r'^\s*"?(\w+)"?\s*=\s*\?')  # a builder's `Set("status = ?", v)`
_MAP_ENTRY = re.compile(r'"(\w+)"\s*:\s*("([^"]*)")?')  # a Go map literal's `"key": "value"` entries
_MAX_DEPTH = 8


def _map_literal(expr: Expr) -> dict[str, Expr]:
    """A Go map literal the facts keep as text: its string keys (lowercase), with their
    string values (other values: an empty expression)."""
    return {k.lower(): ({"k": "str", "v": v} if quoted else {})
            for k, quoted, v in _MAP_ENTRY.findall(expr.get("text", ""))}


def tokens(name: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(name)]


_UNSEEN = object()


class TerminalWrites:
    def __init__(self, catalog, graph: "TimeoutGraph | None" = None) -> None:
        data = catalog.file("terminal_writes")
        names = data.get("names", {})
        self.finish = set(names.get("finish_verbs", ()))
        self.state_verbs = set(names.get("state_verbs", ()))
        self.state_nouns = set(names.get("state_nouns", ()))
        self.final_words = set(names.get("final_words", ()))
        self.name_noun_verbs = set(names.get("name_noun_verbs", ()))
        self.final_states = set(names.get("final_states", ()))
        self.work = set(names.get("work_nouns", ()))
        self.never = set(names.get("not_terminal", ()))
        self.never_states = set(names.get("not_terminal_states", ()))
        endings = "|".join(re.escape(e) for e in names.get("not_terminal_state_endings", ()))
        self._in_progress = re.compile(rf"[a-z_]{{3,}}(?:{endings})") if endings else None
        self.never_receivers = set(names.get("not_terminal_receivers", ()))
        self.never_methods = set(names.get("not_terminal_methods", ()))
        self.sql = [re.compile(p) for p in data.get("sql", {}).get("patterns", ())]
        orm = data.get("sql", {})
        self._orm = {"update": set(orm.get("orm_update", ())), "set": set(orm.get("orm_set", ())),
                     "columns": set(orm.get("columns", ()))}
        self._column_update = set(orm.get("column_update", ()))
        self._columns_update = set(orm.get("columns_update", ()))
        self._columns_kw_update = set(orm.get("columns_kw_update", ()))
        self._field_update = set(orm.get("field_update", ()))
        self._persist = set(data.get("python", {}).get("persist_methods", ()))
        self._text_wrappers = set(orm.get("text_wrappers", ()))
        self._executors = set(orm.get("chain_executors", ()))
        self._setters = tuple(orm.get("column_setters", ()))
        go = data.get("go", {})
        self.detaching = set(go.get("detaching", ()))
        self.derivations = set(go.get("deadline_derivations", ())) | set(go.get("plain_derivations", ()))
        self._readers = tuple(go.get("context_readers", ()))
        self._tx_starts = frozenset(go.get("transaction_starts", ()))
        self._go_persist = frozenset(go.get("persist_verbs", ()))
        self._value_methods = frozenset(go.get("context_value_methods", ()))
        self.graph = graph
        self._writer: dict[str, bool] = {}
        self._name_shapes: dict[str, tuple | None] = {}
        self._records: dict[str, bool] = {}  # type -> records a unit of work's state
        self._field_tokens: dict[str, set[str]] | None = None
        self._calls: dict[tuple[int, str | None], bool] = {}  # facts live as long as the graph
        self._active: set[str] = set()

    @classmethod
    def of(cls, graph: "TimeoutGraph") -> "TerminalWrites":
        """The graph's one instance: its verdicts are memoised per call, and the graph
        build and the DA20x checks ask about the same calls."""
        key = ("_terminal_writes",)
        found = graph._memo.get(key)
        if found is None:
            found = graph._memo[key] = cls(graph.catalog, graph)
        return found

    def not_an_end(self, state: str) -> bool:
        """A state value that is not how work ends: a catalog state (`running`, `queued`), or
        one word with a catalog ending of a state in progress (`rendering`, `exporting`)."""
        state = state.lower()
        return state in self.never_states or bool(self._in_progress and self._in_progress.fullmatch(state))

    # -- names ------------------------------------------------------------------------
    def name_of(self, call: CallFact) -> str:
        callee = call.callee
        if callee.get("k") in ("method", "ext"):
            return callee.get("name", "").rsplit(".", 1)[-1]
        return callee.get("sym", "").rsplit(".", 1)[-1]

    def is_terminal(self, call: CallFact, path: str | None = None) -> bool:
        """A terminal write: by its SQL, by the body of the program function it calls
        (when the graph resolves it), else by the meaning of its words. Memoised per call."""
        key = (id(call), path)
        found = self._calls.get(key)
        if found is None:
            found = self._calls[key] = self._is_terminal(call, path)
        return found

    def _is_terminal(self, call: CallFact, path: str | None) -> bool:
        if self._wraps_sql({"fn": call.callee}):
            return False  # `text("UPDATE …")` builds the statement; executing it is the write
        if any(self._sql(a) or self._orm_update(a) for a in call.args) or self._sets_columns(call) \
                or self._persists_state(call, path) or self._executes_status_update(call, path):
            return True
        target = self._target(call, path)
        if target is not None:
            verdict = self.body(target)
            if verdict is not None:
                return verdict  # the body decides: a write helper, an operation, or detached
            if self.graph is not None and path is not None:
                from deadline_audit.graph import Ctx

                # a Protocol's stub (`async def complete(self, req): ...`): its implementations decide
                others = [self.body(t) for t in self.graph.resolve_callees(call.callee, Ctx(path)) if t != target]
                if any(v is True for v in others):
                    return True
                if any(v is False for v in others):
                    return False  # an operation somewhere, a write nowhere
        return self.by_name(call, path)

    def by_name(self, call: CallFact, path: str | None = None) -> bool:
        name = self.name_of(call)
        shape = self._name_shapes.get(name, _UNSEEN)
        if shape is _UNSEEN:
            shape = self._name_shapes[name] = self._name_shape(name)
        if shape is None:
            return False
        name_tokens, finishing, stating, verbs = shape
        receiver = self._receiver_tokens(call.callee) + self._type_tokens(call, path)
        if self.never_receivers & set(receiver):
            return False
        if any(a.get("k") == "str" and self.not_an_end(a.get("v", ""))
               for a in list(call.args) + list(call.kw.values())):
            return False
        if verbs and any(t in self.final_words for i, t in enumerate(name_tokens) if i > verbs[0]):
            return True  # PersistFinalStatus, record_outcome: the verb, then the final word
        if verbs and any(t in self.final_states for i, t in enumerate(name_tokens) if i > verbs[0]) \
                and self.verb(name_tokens[verbs[0]], self.finish):
            return True  # MarkRefunded, mark_failed (not handleFailedMessage: no verb before it)
        if not any(self._noun(t, self.work) for t in name_tokens):
            resource_verb = finishing and not stating and \
                all(t in self.name_noun_verbs for t in name_tokens if self.verb(t, self.finish))
            if resource_verb:
                return False  # `client.close()`: a resource, unless the name names the work
            by_receiver = any(self._noun(t, self.work) for t in receiver)
            # an argument names the work only for a finishing verb (`complete(export.id)`)
            by_argument = finishing and (any(self._noun(t, self.work) for t in self._argument_tokens(call))
                                         or self._passes_outcome_record(call, path))
            if not (by_receiver or by_argument):
                return False
        if finishing:
            return True
        return stating and any(self._noun(t, self.state_nouns) for t in name_tokens)

    def _name_shape(self, name: str) -> tuple[list[str], bool, bool, list[int]] | None:
        """What the name alone says (memoised per name: the same few hundred names are
        called tens of thousands of times): None when it cannot name a terminal write —
        no tokens, a never-word, or no finishing or state verb (every path below needs one)."""
        name_tokens = tokens(name)
        if not name_tokens or name in self.never_methods or self.never & set(name_tokens):
            return None
        verbs = [i for i, t in enumerate(name_tokens) if self.verb(t, self.finish | self.state_verbs)]
        if not verbs:
            return None
        finishing = any(self.verb(t, self.finish) for t in name_tokens)
        stating = any(self.verb(t, self.state_verbs) for t in name_tokens)
        return name_tokens, finishing, stating, verbs

    def noun(self, call: CallFact, path: str | None = None) -> str:
        """The unit of work the write is about, for messages ("run", "job")."""
        tables = [m.group(1) for a in call.args if a.get("k") == "str"
                  for m in [_SQL_TABLE.match(a.get("v", ""))] if m]
        words = tokens(self.name_of(call)) + self._receiver_tokens(call.callee) + \
            self._type_tokens(call, path) + tables + self._argument_tokens(call)
        for t in words:
            if self._noun(t, self.work):
                return t[:-1] if t not in self.work else t
        target = self._target(call, path)
        if target is not None and self.writer(target) and target not in self._active:
            self._active.add(target)  # a helper: the unit of work its own write names
            try:
                for inner, ipath in self.graph.calls_in.get(target, ()):
                    if self.is_terminal(inner, ipath):
                        return self.noun(inner, ipath)
            finally:
                self._active.discard(target)
        return "work"

    # -- summaries (need the graph) ---------------------------------------------------
    def writer(self, fn_sym: str) -> bool:
        """Does the function make a terminal write with its ctx parameter (Go), or await
        one unshielded (Python)?"""
        return self.body(fn_sym) is True

    def body(self, fn_sym: str) -> bool | None:
        """What a program function's body says about a call to it: True, a terminal
        writer (the first call it hands its ctx to / awaits is a terminal write); False,
        an operation that works first, or a body that detaches from its ctx; None, no
        evidence (no such call): the name decides. Memoised; cycles give None."""
        if fn_sym in self._writer:
            return self._writer[fn_sym]
        graph = self.graph
        if graph is None or fn_sym not in graph.functions or fn_sym in self._active or len(self._active) > _MAX_DEPTH:
            return None
        self._active.add(fn_sym)
        try:
            found = False if self._discards_ctx(fn_sym) else self._writes(fn_sym)
        finally:
            self._active.discard(fn_sym)
        self._writer[fn_sym] = found
        return found

    def _writes(self, fn_sym: str) -> bool | None:
        graph = self.graph
        fn, path = graph.functions[fn_sym]
        go = graph.lang.get(path) == "go"
        ctx_params = self._ctx_params(fn) if go else set()
        if go and not ctx_params:
            return None
        calls = sorted(graph.calls_in.get(fn_sym, ()),
                       key=lambda cp: (cp[0].in_defer, cp[0].span.line, cp[0].span.column))
        if not go and any("shield" in c.scopes and self.is_terminal(c, cp) for c, cp in calls):
            return False  # the body shields its write: detached, whatever the name says
        relevant = []
        for call, cpath in calls:
            if call.in_go or "shield" in call.scopes:
                continue
            if go:
                if not call.args or not self._derives_from(call.args[0], fn_sym, ctx_params, 0):
                    continue
                if call.callee.get("k") == "ext" and call.callee.get("name") in self.derivations:
                    continue
                if self.reads_context(call, cpath) or self.name_of(call) in self._tx_starts:
                    continue
            elif not (fn.is_async and call.awaited):
                continue
            relevant.append((call, cpath))
        if not go:
            relevant = self._after_handles(fn_sym, relevant)
        if not relevant:
            return None
        # the first call that uses the ctx (Go) / is awaited (Python) decides: a write
        # helper writes; a function that does work first and more after is an operation,
        # whose own write is judged where it is made; a thin wrapper around one call we
        # cannot read (a store method posting to its backend) leaves it to the name
        if self.is_terminal(*relevant[0]):
            # a write first, then work with the same ctx (`if bad { record(ctx); return }`
            # … `apply(ctx)` … `record(ctx)`): an operation whose writes are judged inside it
            if any(not call.in_defer and "finally" not in call.scopes  # cleanup is no work
                   and self.name_of(call).lower() not in self._persist
                   and not self.is_terminal(call, cpath) and not self._data_statement(call)
                   for call, cpath in relevant[1:]):
                return False  # (committing the write, `tx.Commit(ctx)`, is part of it; so is
                # another statement of the same record, `INSERT INTO run_events …`)
            return True
        return False if len(relevant) > 1 else None

    def _after_handles(self, fn_sym: str, relevant: list) -> list:
        """Python: a leading call that only gets the handle a statement then goes through
        (`db = await self._connect()`, then `await db.execute("UPDATE … SET status …")`)
        is setup, not the work: the statement decides. Only a statement that says what it
        writes: a name on the handle (`writer.complete(…)`) may be more work."""
        handles = {b.span.line: b.sym for _, b, _ in self.graph.bindings_by_function().get(fn_sym, ())
                   if b.expr.get("k") == "call" and b.sym.startswith(fn_sym + ".")}
        while len(relevant) > 1:
            local = handles.get(relevant[0][0].span.line)
            on_handle = next((c for c, _ in relevant[1:] if _receiver_root(c.callee) == local), None)
            if local is None or on_handle is None or not any(self._sql(a) for a in on_handle.args):
                break
            relevant = relevant[1:]
        return relevant

    def _discards_ctx(self, fn_sym: str) -> bool:
        """Go: a function that takes a ctx but never hands it (or what derives from it)
        to a call, or that builds a detached context: its writes do not hang off ours."""
        graph = self.graph
        fn, path = graph.functions[fn_sym]
        if graph.lang.get(path) != "go":
            return False
        params = self._ctx_params(fn)
        if not params:
            return False
        if self._detaches(fn_sym):
            return True
        owners = (fn_sym, *graph.closures.get(fn_sym, ()))
        calls = [c for owner in owners for c, _ in graph.calls_in.get(owner, ())]
        if any(self._derives_from(a, fn_sym, params, 0) for c in calls for a in c.args[:1]
               if not self.reads_context(c)):
            return False
        # or to a library call the facts keep only as a value
        # (`req, _ := http.NewRequestWithContext(ctx, …)`, then `client.Do(req)`)
        by_function = graph.bindings_by_function()
        return not any(b.expr.get("k") == "call" and b.expr.get("args")
                       and self._derives_from(b.expr["args"][0], fn_sym, params, 0)
                       for owner in owners for _, b, _ in by_function.get(owner, ()))

    def reads_context(self, call: CallFact, path: str | None = None) -> bool:
        """Go: a call that only reads from the context it is given: a logger or span kept
        in it (catalog `context_readers`), or a program function whose one use of its ctx
        is `ctx.Value(…)`. No cancellation reaches what it does."""
        name = self.name_of(call)
        if any(fnmatchcase(name, p) for p in self._readers):
            return True
        target = self._target(call, path) if path is not None else None
        return target is not None and target in self.graph.functions and target not in self._active \
            and self._reads_values(target) and self._discards_ctx(target) and not self._detaches(target)

    def _reads_values(self, fn_sym: str) -> bool:
        """Does the body call `ctx.Value(…)` (kept as a call, or only as the value it binds
        or returns) on its ctx parameter?"""
        graph = self.graph
        fn, _ = graph.functions[fn_sym]
        params = self._ctx_params(fn)
        exprs = [{"k": "call", "fn": c.callee} for c, _ in graph.calls_in.get(fn_sym, ())]
        exprs += [b.expr for _, b, _ in graph.bindings_by_function().get(fn_sym, ())] + list(fn.returns)
        return any(sub.get("k") == "call" and (sub.get("fn") or {}).get("k") == "method"
                   and sub["fn"].get("name") in self._value_methods and self._derives_from(sub["fn"].get("x"), fn_sym, params, 0)
                   for e in exprs for sub in walk_exprs(e))

    def _detaches(self, fn_sym: str) -> bool:
        graph = self.graph
        return any(c.callee.get("k") == "ext" and c.callee.get("name") in self.detaching
                   for owner in (fn_sym, *graph.closures.get(fn_sym, ())) for c, _ in graph.calls_in.get(owner, ()))

    def _ctx_params(self, fn) -> set[str]:
        decls = self.graph.decls
        return {p for p in fn.params if decls.get(p) is not None and decls[p].type == "context.Context"}

    def _derives_from(self, expr: Expr, fn_sym: str, params: set[str], depth: int) -> bool:
        """Is `expr` one of the ctx parameters, or a local derived from one
        (`context.With*`) in this function?"""
        if not isinstance(expr, dict) or depth > 6:
            return False
        k = expr.get("k")
        if k == "ref":
            sym = expr["sym"]
            if sym in params:
                return True
            decl = self.graph.decls.get(sym)
            if decl is None or decl.kind != "local":
                return False
            return any(b.function == fn_sym and self._derives_from(b.expr, fn_sym, params, depth + 1)
                       for b, _ in self.graph.bindings.get(sym, ()))
        if k == "call":
            callee = expr.get("fn") or {}
            if callee.get("k") == "ext" and callee.get("name") in self.derivations and expr.get("args"):
                return self._derives_from(expr["args"][0], fn_sym, params, depth + 1)
        return False

    def _target(self, call: CallFact, path: str | None) -> str | None:
        if self.graph is None or path is None or call.callee.get("k") not in ("fnref", "method", "ref"):
            return None
        from deadline_audit.graph import Ctx

        return self.graph.resolve_callee(call.callee, Ctx(path))

    # -- words ------------------------------------------------------------------------
    def _type_tokens(self, call: CallFact, path: str | None) -> list[str]:
        """Words of the receiver's type and of its package (`runs.Store` → runs, store)."""
        if self.graph is None or path is None or call.callee.get("k") != "method":
            return []
        from deadline_audit.graph import Ctx

        type_name = self.graph.type_of(call.callee.get("x"), Ctx(path))
        if not type_name:
            return []
        body = type_name.removeprefix("py:").rsplit("/", 1)[-1]
        return [t for part in body.split(".")[-2:] for t in tokens(part)]

    def _passes_outcome_record(self, call: CallFact, path: str | None) -> bool:
        """An argument whose type records a unit of work's state (`Finish(ctx, final)` with
        `final model.Final{RunID, Status, …}`): a field named by a state noun and one by
        a unit of work."""
        if self.graph is None or path is None:
            return False
        from deadline_audit.graph import Ctx

        for arg in list(call.args) + list(call.kw.values()):
            type_name = self.graph.type_of(arg, Ctx(path)) if isinstance(arg, dict) else None
            if type_name and self._outcome_record(type_name):
                return True
        return False

    def _outcome_record(self, type_name: str) -> bool:
        found = self._records.get(type_name)
        if found is None:
            if self._field_tokens is None:
                self._field_tokens = {}
                for sym, decl in self.graph.decls.items():
                    if decl.kind == "field":
                        owner, _, name = sym.rpartition(".")
                        self._field_tokens.setdefault(owner, set()).update(tokens(name))
            owner = "sym:" + (type_name if type_name.startswith("py:") else "go:" + type_name)
            words = self._field_tokens.get(owner, set())
            found = self._records[type_name] = any(self._noun(t, self.state_nouns) for t in words) \
                and any(self._noun(t, self.work) for t in words)
        return found

    def _argument_tokens(self, call: CallFact) -> list[str]:
        out: list[str] = []
        for arg in list(call.args) + list(call.kw.values()):
            x: Any = arg
            while isinstance(x, dict) and x.get("k") in ("field", "ref", "call"):
                if x.get("k") == "ref":
                    out.extend(tokens(str(x.get("sym", "")).rsplit(".", 1)[-1]))
                    break
                if x.get("k") == "call":
                    x = (x.get("fn") or {}).get("x")
                    continue
                x = x.get("x")
        return out

    def _orm_update(self, expr: Expr) -> bool:
        """A query-builder UPDATE that sets a status column (`update(Run)…values(state=…)`),
        unless it sets a state that is not an end."""
        sql = self._orm
        sets, built = None, False
        node = expr
        for _ in range(8):
            if not isinstance(node, dict) or node.get("k") != "call":
                break
            fn = node.get("fn") or {}
            name = (fn.get("name") or fn.get("sym") or "").rsplit(".", 1)[-1]
            if name in sql["set"] and sets is None:
                sets = node.get("kw") or {}
            if name in sql["update"]:
                built = True
                break
            node = fn.get("x")
        if not built or not sets or not sql["columns"] & set(sets):
            return False
        values = [v.get("v", "").lower() for k, v in sets.items() if k in sql["columns"] and v.get("k") == "str"]
        return not values or any(not self.not_an_end(v) for v in values)

    def _sets_columns(self, call: CallFact) -> bool:
        """A query builder's column update that writes a status column, unless the value is
        a state that is not an end: GORM `Update("status", "failed")`,
        `Updates(map[string]any{"status": "done"})`, `Updates(Job{Status: "done"})`; Django
        `Job.objects.filter(…).update(status="failed")` (keywords, on a query only); a field of a
        key-value record (redis-py `hset(name, "status", "done")`, `hset(name, mapping=…)`)."""
        written = self._columns_written(call)
        if not written:
            return False
        hits = [v for k, v in written.items() if k in self._orm["columns"]]
        if not hits:
            return False
        literal = [v["v"].lower() for v in hits if isinstance(v, dict) and v.get("k") == "str"]
        return not literal or any(not self.not_an_end(v) for v in literal)

    def _executes_status_update(self, call: CallFact, path: str | None) -> bool:
        """The call that runs a builder chain setting a status column, unless the value is a
        state that is not an end: the chain is its receiver (ent `…SetStatus(v).Exec(ctx)`,
        bun `…Set("status = ?", v)….Exec(ctx)`) or the statement built into a local it is
        given (squirrel `q, args, _ := sq.Update("runs").Set("status", v)….ToSql()` then
        `db.ExecContext(ctx, q, args...)`)."""
        if call.callee.get("k") != "method" or call.callee.get("name") not in self._executors:
            return False
        if self._chain_sets_status(call.callee.get("x"), path):
            return True
        if self.graph is None or not call.function:
            return False
        for arg in call.args:
            if arg.get("k") == "ref" and arg["sym"].startswith(call.function + "."):
                bound = [b for b, _ in self.graph.bindings.get(arg["sym"], ()) if b.span.line <= call.span.line]
                if bound and self._chain_sets_status(bound[-1].expr, path):
                    return True
        return False

    def _chain_sets_status(self, x: Any, path: str | None) -> bool:
        for _ in range(12):
            if not isinstance(x, dict) or x.get("k") != "call":
                return False
            fn = x.get("fn") or {}
            name, args = str(fn.get("name") or ""), x.get("args") or []
            for setter in self._setters:
                if not name.startswith(setter) or not args:
                    continue
                column = "_".join(tokens(name[len(setter):]))
                if column in self._orm["columns"]:  # SetStatus(v)
                    return not self._never_state(args[0], path)
                if name != setter or args[0].get("k") != "str":
                    continue
                fragment = _SET_FRAGMENT.match(args[0].get("v", ""))
                named = fragment.group(1) if fragment else args[0].get("v", "")
                if named.lower() in self._orm["columns"]:  # Set("status = ?", v) / Set("status", v)
                    return len(args) < 2 or not self._never_state(args[1], path)
            x = fn.get("x")
        return False

    def _never_state(self, expr: Expr, path: str | None) -> bool:
        """A value naming a state that is not an end (`"running"`, `job.StatusRunning`)."""
        value = expr.get("v") if expr.get("k") == "str" else None
        if value is None and self.graph is not None and path is not None:
            from deadline_audit.graph import Ctx

            resolved = self.graph.value(expr, Ctx(path))
            value = resolved if isinstance(resolved, str) else None
        return value is not None and self.not_an_end(value)

    def _persists_state(self, call: CallFact, path: str | None = None) -> bool:
        """`job.status = "done"` earlier in the function (extract/py_marks_scopes.py
        `state_set`), and this is the first persisting call after it (`session.commit()`,
        `job.save()`): the call that saves the final state."""
        if self.graph is not None and (call.function or "").startswith("sym:go:"):
            return self._persists_go_object(call, path)
        if self.graph is None or call.callee.get("k") != "method" or call.callee.get("name") not in self._persist:
            return False
        entry = self.graph.functions.get(call.function or "")
        if entry is None:
            return False
        sets = [m for m in entry[0].markers if m.get("m") == "state_set" and m["line"] <= call.span.line]
        if not sets:
            return False
        last = max(sets, key=lambda m: m["line"])
        if last.get("value") and self.not_an_end(last["value"]):
            return False
        persisted_between = any(
            c is not call and c.callee.get("k") == "method" and c.callee.get("name") in self._persist
            and last["line"] < c.span.line < call.span.line
            for c, _ in self.graph.calls_in.get(call.function, ()))
        return not persisted_between

    def _persists_go_object(self, call: CallFact, path: str | None) -> bool:
        """`run.Status.Phase = phase` earlier in the function (extract/go_marks_outcomes.py
        `state_set`), then a call given `run` (or `&run`, `run.Status`) whose name begins
        with a persisting verb (`r.Status().Update(ctx, run)`, `db.Save(&job)`): the call that
        records the state, unless the value set last is not an end (`RunRunning`)."""
        name = self.name_of(call)
        if call.callee.get("k") not in ("method", "ext") or not name or \
                not (tokens(name) or [""])[0] in self._go_persist:
            return False
        entry = self.graph.functions.get(call.function or "")
        if entry is None:
            return False
        given = [p for p in map(_field_path, call.args) if p]
        sets = [m for m in entry[0].markers if m.get("m") == "state_set" and "object" in m and
                m["line"] <= call.span.line and any(_field_path(m["object"])[:len(p)] == p for p in given)]
        if not sets:
            return False
        if not self._names_work(max(sets, key=lambda m: m["line"])["object"], path) and not any(
                self._noun(t, self.work) for t in tokens(name) + self._receiver_tokens(call.callee)):
            return False  # a protection rule's or a user's state is not how work ended
        value = max(sets, key=lambda m: m["line"]).get("value") or {}
        if value.get("k") != "str" and not str(value.get("sym", "")).startswith("sym:go:") or \
                str(value.get("sym", "")).startswith(f"{call.function}."):
            return True  # a local or a computed value: whichever state the code chose
        return not self._never_state(value, path)

    def _names_work(self, obj: Expr, path: str | None) -> bool:
        """The object is a unit of work by its name or its type (`run`, `b *store.Build`)."""
        root = _field_path(obj)[:1]
        if not root:
            return False
        words = tokens(root[0].rsplit(".", 1)[-1])
        if self.graph is not None and path is not None:
            from deadline_audit.graph import Ctx

            type_name = self.graph.type_of({"k": "ref", "sym": root[0]}, Ctx(path)) or ""
            words += tokens(type_name.removeprefix("py:").rsplit("/", 1)[-1].rsplit(".", 1)[-1])
        return any(self._noun(t, self.work) for t in words)

    def _columns_written(self, call: CallFact) -> dict[str, Any] | None:
        """column (lowercase, snake_case) -> value expression, for a column-update call."""
        name = call.callee.get("name") if call.callee.get("k") == "method" else None
        if name in self._columns_kw_update and call.kw and (call.callee.get("x") or {}).get("k") == "call":
            return {str(k).lower(): v for k, v in call.kw.items()}
        if name in self._field_update:  # hset(name, field, value), HSet(ctx, key, field, value), a mapping
            args = call.args
            for i, arg in enumerate(args[1:-1], start=1):
                if arg.get("k") == "str" and arg.get("v", "").lower() in self._orm["columns"]:
                    return {arg["v"].lower(): args[i + 1]}
            mapping = call.kw.get("mapping") or (args[-1] if len(args) >= 2 else None)
            if isinstance(mapping, dict) and mapping.get("k") == "dict":
                return {item[0].lower(): item[1] for item in mapping.get("items") or ()
                        if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)}
            if isinstance(mapping, dict) and mapping.get("k") == "unknown":  # a Go map literal
                return _map_literal(mapping)
            return None
        if not call.args:
            return None
        first = call.args[0]
        if name in self._column_update:
            if first.get("k") != "str":
                return None
            return {first.get("v", "").lower(): call.args[1] if len(call.args) > 1 else {}}
        if name not in self._columns_update:
            return None
        if first.get("k") == "obj":
            return {"_".join(tokens(str(k))): v for k, v in (first.get("fields") or {}).items()}
        if first.get("k") == "unknown":  # a map literal
            return _map_literal(first)
        return None

    def _data_statement(self, call: CallFact) -> bool:
        """A call running an INSERT/UPDATE/DELETE statement written in the program."""
        for arg in call.args[:3]:
            if arg.get("k") == "ref" and self.graph is not None:
                bound = self.graph.bindings.get(arg["sym"], ())
                arg = bound[0][0].expr if len(bound) == 1 and bound[0][0].function is None else arg
            if arg.get("k") == "call" and self._wraps_sql(arg) and arg.get("args"):
                arg = arg["args"][0]
            if arg.get("k") == "str" and _DML.match(arg.get("v", "")):
                return True
        return False

    def _wraps_sql(self, call_expr: Expr) -> bool:
        fn = call_expr.get("fn") or {}
        name = fn.get("name") if fn.get("k") == "ext" else str(fn.get("sym", "")).removeprefix("sym:py:")
        return name in self._text_wrappers

    def _sql(self, expr: Expr) -> bool:
        """SQL that sets a status column — unless it sets it to a state that is not an end
        (`SET status = 'running'`); also inside a statement wrapper (`text("UPDATE …")`)."""
        if expr.get("k") == "ref" and self.graph is not None:
            # `_SET_STATUS = text("UPDATE jobs SET status = :status …")` at module level
            bound = self.graph.bindings.get(expr["sym"], ())
            if len(bound) == 1 and bound[0][0].function is None:
                expr = bound[0][0].expr
        if expr.get("k") == "call" and self._wraps_sql(expr) and expr.get("args"):
            expr = expr["args"][0]
        if expr.get("k") != "str" or not any(p.search(expr.get("v", "")) for p in self.sql):
            return False
        head = re.split(r"(?i)\bwhere\b", expr.get("v", ""), maxsplit=1)[0]
        states = _SQL_STATE.findall(head)
        return not states or any(not self.not_an_end(v) for v in states)

    @staticmethod
    def _receiver_tokens(callee: Expr) -> list[str]:
        out: list[str] = []
        x = callee.get("x")
        while isinstance(x, dict):
            if x.get("k") == "call":  # `r.Status().Update(ctx, run)`: the call's own name counts
                x = x.get("fn")
                continue
            name = x.get("name")
            if not isinstance(name, str):  # an `env` expr names its variable with an Expr
                name = str(x.get("sym") or "").rsplit(".", 1)[-1]
            out.extend(tokens(name))
            x = x.get("x")
        return out

    @staticmethod
    def verb(token: str, verbs: set[str]) -> bool:
        """`token` is one of `verbs`, or its -s/-es/-d/-ed/-ing form."""
        # token == verb + suffix, tested per suffix (5 look-ups) rather than per verb
        return token in verbs or any(token.endswith(s) and token[:-len(s)] in verbs
                                     for s in ("s", "es", "d", "ed", "ing"))

    @staticmethod
    def _noun(token: str, nouns: set[str]) -> bool:
        return token in nouns or (token.endswith("s") and token[:-1] in nouns)


def _field_path(expr: Any) -> tuple[str, ...]:
    """`run.Status` as ("sym…run", "Status"); () for anything but a name and its fields."""
    names: list[str] = []
    while isinstance(expr, dict) and expr.get("k") == "field":
        names.append(str(expr.get("name")))
        expr = expr.get("x")
    if not isinstance(expr, dict) or expr.get("k") != "ref":
        return ()
    return (str(expr.get("sym")), *reversed(names))


def _receiver_root(callee: Expr) -> str | None:
    """The symbol a method call's receiver chain starts from (`db.execute` -> db)."""
    x = callee.get("x") if callee.get("k") == "method" else None
    while isinstance(x, dict) and x.get("k") in ("field", "call", "method"):
        x = x.get("x") if x.get("k") != "call" else (x.get("fn") or {}).get("x")
    return x.get("sym") if isinstance(x, dict) and x.get("k") == "ref" else None
