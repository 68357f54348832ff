"""Outcome states and classifiers, shared by DA301 and DA302.

Reads the `classifier` / `records` / `timeout_test` markers of the marker passes
(extract/py_marks_outcomes.py, extract/go_marks_outcomes.py) and the catalog
`rules/catalog/outcomes.toml`: which state names mean a certain failure and which mean
"we do not know", which nouns make a classifier one of remote or asynchronous work, which
errors are timeouts and which of those prove nothing was sent.

A state is resolved to its declaration when the graph has one (Go const, Python enum
member or class constant) for its value and its group (the Go type, the enum class), so
that a finding can name the uncertain state the codebase already declares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Iterator

from deadline_audit.extract.outcome_records import work_noun
from deadline_audit.facts import Expr, FunctionFact
from deadline_audit.findings import Location
from deadline_audit.graph import Ctx, TimeoutGraph
from deadline_audit.terminal_writes import tokens

_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]{0,40}$")
_FORMATTERS = frozenset({"String", "GoString", "Error", "MarshalJSON", "MarshalText", "Format",
                         "__str__", "__repr__", "__format__"})
_SQL_STATE = re.compile(r"(?i)\bset\b.*?\b(status|state|outcome|phase)\s*=\s*'([A-Za-z_]+)'")


@dataclass(frozen=True)
class State:
    kind: str  # failed | uncertain | other
    name: str  # as written: `RunState.FAILED`, `payouts.StatusFailed`, `"failed"`
    key: str  # identity for counting distinct states
    group: str | None  # enum class / Go type / const prefix, for siblings
    sym: str | None  # the declaration, when resolved


@dataclass
class Classifier:
    fn: FunctionFact
    path: str
    lang: str
    marker: dict[str, Any]

    @property
    def branches(self) -> list[dict[str, Any]]:
        return self.marker.get("branches", [])


class Outcomes:
    def __init__(self, graph: TimeoutGraph) -> None:
        self.graph = graph
        cat = graph.catalog.file("outcomes")
        self.failure = [tuple(tokens(w)) for w in cat.get("failure_states", ())]
        self.uncertain = [tuple(tokens(w)) for w in cat.get("uncertain_states", ())]
        self.nouns = set(cat.get("work_nouns", ()))
        self.not_outcomes = set(cat.get("not_outcomes", ()))
        self.remote_codes = {lang: list(cat.get(f"remote_codes_{lang}", ())) for lang in ("go", "python")}
        self.timeouts = {lang: list(cat.get(f"timeouts_{lang}", ())) for lang in ("go", "python")}
        self.timeout_methods = set(cat.get("timeout_methods_go", ()))
        self.timeout_codes = {str(c) for c in cat.get("timeout_http_codes", ())}
        self.not_sent = {lang: list(cat.get(f"not_sent_{lang}", ())) + list(cat.get(f"local_limits_{lang}", ()))
                         for lang in ("go", "python")}
        self.not_sent_codes = {str(c) for c in cat.get("not_sent_http_codes", ())}
        self.not_sent_phases = {str(c) for c in cat.get("not_sent_phases", ())}
        self.quiet_receivers = set(cat.get("not_state_receivers", ()))
        self.quiet_calls = set(cat.get("not_state_calls", ()))
        self._py_suffix: dict[str, list[str]] | None = None
        self._sibling_syms: dict[str, str] = {}
        self._calls_by_line: dict[tuple[str, int], list] | None = None

    # -- classifiers --------------------------------------------------------------
    def classifiers(self) -> Iterator[Classifier]:
        for sym in sorted(self.graph.functions):
            fn, path = self.graph.functions[sym]
            for m in fn.markers:
                if m.get("m") == "classifier":
                    yield Classifier(fn, path, self.graph.lang.get(path, "python"), m)

    def in_scope(self, c: Classifier, states: list[State]) -> bool:
        """Remote or asynchronous work, and not a mapper of messages or log levels."""
        fname = c.fn.sym.rsplit(".", 1)[-1]
        if fname in _FORMATTERS:  # a state's own text, not an outcome of work
            return False
        own = set(tokens(fname)) | set(tokens(c.marker.get("owner") or ""))
        groups: set[str] = set()
        for s in states:
            groups.update(tokens((s.group or "").rsplit(".", 1)[-1].rsplit("/", 1)[-1]))
        if (own | groups) & self.not_outcomes:
            return False
        remote = self.remote_codes.get(c.lang, ())
        if any(fnmatchcase(n, p) for b in c.branches for n in b.get("names", ()) for p in remote):
            return True  # its cases are codes of an RPC: the outcome of a remote call
        words = own | groups | set(c.marker.get("scope", ()))
        words.update(t for part in re.split(r"[/.]", c.path) for t in tokens(part))
        # a parameter that names the unit of work (`job_id`, `run`, `task: Task`)
        words.update(t for p in c.fn.param_names for t in tokens(p))
        if any(self._noun(w) for w in words):
            return True
        # states whose own enum models an unknown outcome (`RenderState.UNKNOWN` beside
        # FAILED) are outcomes of work that can end unseen, whatever the work is called
        return any(self.uncertain_sibling(s, c.lang) for s in states if s.group)

    def _noun(self, word: str) -> bool:
        return work_noun(word, self.nouns)

    # -- states -------------------------------------------------------------------
    def branch_state(self, branch: dict[str, Any], lang: str, path: str = "") -> tuple[State, dict[str, Any]] | None:
        """The first state a branch returns, assigns or passes on, with its outcome."""
        outcomes = branch.get("outcomes", ())
        for i, o in enumerate(outcomes):
            if o.get("how") == "raise":
                return None
            if o.get("how") == "assign" and set(tokens(str(o.get("target", "")).rsplit(".", 1)[-1])) & \
                    self.not_outcomes:
                continue  # `msg = "failed"`, `level = "error"`
            for s in self.states_in(o.get("expr"), lang, o.get("how") == "call"):
                return s, o
            if o.get("how") == "return":
                s = self.returned_state(o.get("expr"), lang, path)
                if s is not None:
                    return s, o
                more = i + 1 < len(outcomes) and outcomes[i + 1].get("how") == "return"
                if not more:  # `return nil, StatusFailed`: the other results of the same return
                    return None
        return None

    def returned_state(self, expr: Expr | None, lang: str, path: str = "") -> State | None:
        """`return s.fallback(code)`: the one state a summarised helper always returns."""
        if not expr or expr.get("k") != "call":
            return None
        target = self._callee(expr.get("fn"), lang, path)
        if target is None:
            return None
        fn, _ = self.graph.functions[target]
        found = {}
        for r in fn.returns:
            s = self.state(r, lang)
            if s is None:
                return None
            found[s.key] = s
        return next(iter(found.values())) if len(found) == 1 else None

    def states_in(self, expr: Expr | None, lang: str, args_only: bool = False) -> list[State]:
        if not expr:
            return []
        k = expr.get("k")
        if k == "call":
            out: list[State] = []
            if self.quiet(expr.get("name") or ""):
                return out
            for a in list(expr.get("args", ())) + list((expr.get("kw") or {}).values()):
                s = self.state(a, lang)
                if s is not None:
                    out.append(s)
            return out
        if k == "obj":  # Go composite literal: its fields
            return [s for v in (expr.get("fields") or {}).values() for s in [self.state(v, lang)] if s]
        if args_only:
            return []
        s = self.state(expr, lang)
        return [s] if s else []

    def quiet(self, name: str) -> bool:
        """A call that only logs, formats, builds an error or counts: never a state write."""
        parts = name.split(".")
        return parts[-1] in self.quiet_calls or parts[-1].lower() in self.quiet_calls or \
            any(p.lower() in self.quiet_receivers for p in parts[:-1]) or \
            (len(parts) > 1 and "log" in parts[-2].lower()) or parts[-1].endswith(("Error", "Exception"))

    def state(self, expr: Expr | None, lang: str) -> State | None:
        if not expr:
            return None
        k = expr.get("k")
        if k == "str":
            v = expr.get("v", "")
            if not _IDENT.match(v):
                return None
            return State(self.kind_of(v), repr(v) if lang == "python" else f'"{v}"', "str:" + v.lower(), None, None)
        if k != "ref":
            return None
        sym = self.resolve(expr["sym"], lang)
        decl = self.graph.decls.get(sym)
        qual = sym.split(":", 2)[-1]
        if lang == "go":
            ip, _, member = qual.rpartition(".")
            display = f"{ip.rsplit('/', 1)[-1]}.{member}" if ip else member
            if decl is None or decl.kind not in ("const", "var"):
                if decl is not None or not self._named_state(member):
                    return None
            if member.startswith(("Err", "err")) or (decl is not None and decl.kind == "var" and
                                                     decl.type in (None, "error")):
                return None  # an error value, not a state
            if ip.rsplit("/", 1)[-1].lower() in self.quiet_receivers:
                return None  # `metrics.JobFailedCount`: a counter's name
            group = decl.type if decl is not None and decl.type else f"{ip}.{_prefix(member)}"
        else:
            parts = qual.split(".")
            member = parts[-1]
            owner = parts[-2] if len(parts) > 1 else ""
            if decl is not None and decl.kind in ("param", "local", "func", "method", "class"):
                return None
            owner_decl = self.graph.decls.get(sym.rsplit(".", 1)[0])
            if (owner_decl is None or owner_decl.kind != "class") and \
                    any(p.lower() in self.quiet_receivers for p in parts[:-1]):
                return None  # `metrics.JOB_FAILED`: a counter's name (a member of an enum
                # declared in a module named `errors` is a state all the same)
            if decl is None and not (owner[:1].isupper() and (member.isupper() or self._named_state(member))):
                if not (member.isupper() and self._named_state(member)):
                    return None
            display = f"{owner}.{member}" if owner[:1].isupper() else member
            group = ".".join(parts[:-1]) if owner[:1].isupper() else f"{'.'.join(parts[:-1])}.{_prefix(member)}"
        kind = self.kind_of(member)
        if kind == "other":
            value = self.value_of(sym)
            if isinstance(value, str) and _IDENT.match(value):
                kind = self.kind_of(value)
        return State(kind, display, "sym:" + sym, group, sym if decl is not None else None)

    def kind_of(self, name: str) -> str:
        toks = tuple(tokens(name))
        if any(_contains(toks, w) for w in self.uncertain):
            return "uncertain"
        if any(_contains(toks, w) for w in self.failure):
            return "failed"
        return "other"

    def names_failure(self, name: str) -> bool:
        """The name holds a failure word, whatever else it holds (`FAILED_CAUSE_TIMEOUT`)."""
        toks = tuple(tokens(name))
        return any(_contains(toks, w) for w in self.failure)

    def _named_state(self, member: str) -> bool:
        return self.kind_of(member) != "other"

    def value_of(self, sym: str) -> Any:
        for b, _ in self.graph.bindings.get(sym, ())[:1]:
            if b.expr.get("k") == "str":
                return b.expr.get("v")
        return None

    def resolve(self, sym: str, lang: str) -> str:
        if sym in self.graph.decls or lang != "python":
            return sym
        if self._py_suffix is None:
            index: dict[str, list[str]] = {}
            for s in self.graph.decls:
                if s.startswith("sym:py:"):
                    parts = s[7:].split(".")
                    if len(parts) >= 2:
                        index.setdefault(".".join(parts[-2:]), []).append(s)
            self._py_suffix = index
        parts = sym[7:].split(".")
        hits = self._py_suffix.get(".".join(parts[-2:]), [])
        if len(hits) == 1:
            return hits[0]
        return sym

    def declared_at(self, sym: str | None) -> Location | None:
        """Where a state is declared, for the finding's evidence."""
        decl = self.graph.decls.get(sym or "")
        path = self.graph.decl_path.get(sym or "")
        if decl is None or path is None:
            return None
        return Location(path, decl.span.line, decl.span.column)

    def sibling_sym(self, state: State, lang: str) -> str | None:
        name = self.uncertain_sibling(state, lang)
        return self._sibling_syms.get(name) if name else None

    def uncertain_sibling(self, state: State, lang: str) -> str | None:
        """An uncertain state declared in the same group (enum, Go type, const prefix)."""
        if state.group is None:
            return None
        found = []
        for sym, decl in self.graph.decls.items():
            if decl.kind not in ("const", "var", "field"):
                continue
            qual = sym.split(":", 2)[-1]
            if lang == "go":
                ip, _, member = qual.rpartition(".")
                same = (decl.type and decl.type == state.group) or (
                    not decl.type and f"{ip}.{_prefix(member)}" == state.group)
                display = f"{ip.rsplit('/', 1)[-1]}.{member}"
            else:
                owner, _, member = qual.rpartition(".")
                same = owner == state.group or (state.group.endswith("." + owner.rsplit(".", 1)[-1]) and
                                                owner.rsplit(".", 1)[-1][:1].isupper())
                display = f"{owner.rsplit('.', 1)[-1]}.{member}"
            if not same or not sym.startswith(f"sym:{'go' if lang == 'go' else 'py'}:"):
                continue
            value = self.value_of(sym)
            if self.kind_of(member) == "uncertain" or (isinstance(value, str) and self.kind_of(value) == "uncertain"):
                found.append((0 if "unknown" in member.lower() else 1, display))
                self._sibling_syms[display] = sym
        return sorted(found)[0][1] if found else None

    # -- timeouts -----------------------------------------------------------------
    def timeout_names(self, branch: dict[str, Any], lang: str) -> list[str]:
        """The timeouts a branch's test names (helpers' tests included), unless every one
        of them proves that nothing was sent."""
        names = list(branch.get("names", ()))
        for n in list(names):
            fn = self.graph.functions.get(f"sym:{'go' if lang == 'go' else 'py'}:{n}")
            if fn is not None:
                for m in fn[0].markers:
                    if m.get("m") == "timeout_test":
                        names.extend(m.get("names", ()))
        if any(n[:1] in "'\"" and n.strip("'\"") in self.not_sent_phases for n in names):
            return []  # `opErr.Op == "dial" && opErr.Timeout()`: a timeout before anything was sent
        hits = []
        for n in names:
            if any(fnmatchcase(n, p) for p in self.not_sent[lang]) or n.strip("'\"") in self.not_sent_codes:
                continue
            if any(fnmatchcase(n, p) for p in self.timeouts[lang]) or n.strip("'\"") in self.timeout_codes or \
                    (lang == "go" and n.startswith("()") and n[2:] in self.timeout_methods) or \
                    (lang != "go" and self._timeout_class(n)):
                hits.append(n)
        return sorted(hits, key=lambda n: n.startswith("()"))  # sentinels before `x.Timeout()`

    def _timeout_class(self, name: str, depth: int = 0) -> bool:
        """A program exception class deriving from a timeout (`class ExecutorTimedOut(
        DispatchError, TimeoutError)`), unless a base proves nothing was sent."""
        decl = self.graph.decls.get(name if name.startswith("sym:") else "sym:py:" + name)
        if decl is None or decl.kind != "class" or not decl.bases or depth > 6:
            return False
        for base in decl.bases:
            plain = base.removeprefix("sym:py:")
            if any(fnmatchcase(plain, p) for p in self.not_sent["python"]):
                return False
        return any(any(fnmatchcase(b.removeprefix("sym:py:"), p) for p in self.timeouts["python"])
                   or self._timeout_class(b, depth + 1) for b in decl.bases)

    def failure_record(self, outcome: dict[str, Any], lang: str, depth: int = 0,
                       path: str = "") -> tuple[str, State | None] | None:
        """How an outcome records a certain failure: a failure state returned, assigned or
        passed to a call, a failing terminal write (`runs.fail(id)`), or a helper whose
        body records one; with the failure state when one is named. None when it does not."""
        if outcome.get("how") == "raise":
            return None
        expr = outcome.get("expr") or {}
        if outcome.get("how") == "assign" and set(tokens(str(outcome.get("target", "")).rsplit(".", 1)[-1])) & \
                self.not_outcomes:
            return None
        for s in self.states_in(expr, lang, outcome.get("how") == "call"):
            if s.kind == "failed":
                return s.name, s
            return None
        if outcome.get("how") not in ("call", "return") or expr.get("k") != "call":
            return None
        name = expr.get("name") or ""
        if self.quiet(name):
            return None
        for a in expr.get("args", ()):  # SQL: `UPDATE jobs SET status = 'failed' …`
            m = _SQL_STATE.search(a.get("v", "")) if a.get("k") == "str" else None
            if m and self.kind_of(m.group(2)) == "failed":
                return f"{m.group(1)} = '{m.group(2)}'", None
        if depth < 2:
            target = self._callee(expr.get("fn"), lang, path) or self._call_at(path, outcome.get("line"), name)
            if target is not None:
                for m in self.graph.functions[target][0].markers:
                    if m.get("m") == "records":
                        for o in m.get("outcomes", ()):
                            found = self.failure_record(o, lang, depth + 1, self.graph.functions[target][1])
                            if found:
                                return f"{name}() → {found[0]}", found[1]
        toks = tokens(name.rsplit(".", 1)[-1])
        if any(t in ("fail", "failed", "failure") for t in toks):
            words = [t for part in name.split(".") for t in tokens(part)]
            words += [t for a in expr.get("args", ()) for t in tokens(_arg_name(a))]
            if any(self._noun(w) for w in words):
                return f"{name}()", None
        return None

    def _call_at(self, path: str, line: int | None, name: str) -> str | None:
        """The function a call the marker pass could only name (`self._ledger.mark_failed`)
        runs: the call fact of that name on that line, resolved through the receiver's type."""
        if not path or line is None or not name:
            return None
        if self._calls_by_line is None:
            self._calls_by_line = {}
            for calls in self.graph.calls_in.values():
                for call, cpath in calls:
                    self._calls_by_line.setdefault((cpath, call.span.line), []).append(call)
        last = name.rsplit(".", 1)[-1]
        for call in self._calls_by_line.get((path, line), ()):
            callee = call.callee
            if callee.get("k") == "method" and callee.get("name") == last:
                target = self.graph.resolve_callee(callee, Ctx(path))
                if target in self.graph.functions:
                    return target
        return None

    def _callee(self, fn: Expr | None, lang: str, path: str = "") -> str | None:
        if not fn:
            return None
        if fn.get("k") in ("ref", "fnref"):
            sym = self.resolve(fn["sym"], lang)
            if sym in self.graph.functions:
                return sym
        if fn.get("k") == "method":
            return self.graph.resolve_callee(fn, Ctx(path))
        return None


def _arg_name(expr: Expr) -> str:
    if expr.get("k") == "local":
        return expr.get("text", "").rsplit(".", 1)[-1]
    if expr.get("k") == "ref":
        return expr.get("sym", "").rsplit(".", 1)[-1]
    return ""


def _contains(toks: tuple[str, ...], word: tuple[str, ...]) -> bool:
    if not word:
        return False
    n = len(word)
    return any(toks[i:i + n] == word for i in range(len(toks) - n + 1))


def _prefix(member: str) -> str:
    """`StatusFailed` → `Status`, `RUN_FAILED` → `RUN`: the group of an untyped constant."""
    toks = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", member)
    return toks[0] if toks else member


def location(path: str, line: int, col: int) -> Location:
    return Location(path, int(line), int(col or 1))
