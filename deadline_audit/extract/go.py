"""Go extractor: one `.go` file → FileFacts (see deadline_audit/facts.py for the contract).

tree-sitter-go gives syntax only. Identifiers are resolved through the scopes of this file
(func literal → enclosing function → package); types are tracked where the file itself
says them (receivers, typed params, composite literals, declared vars, in-file struct
fields and function results). All API knowledge comes from the catalog.
"""

from __future__ import annotations

import re

import bisect
from typing import Any

from tree_sitter import Parser

from deadline_audit.catalog import Catalog
from deadline_audit.collector import collector_paused
from deadline_audit.extract.go_marks import MarkTree, run_marker_passes, shared_query
from deadline_audit.extract.go_expr import _OPS, FnFrame, GoExprs
from deadline_audit.extract.go_query import GO, FileMatches
from deadline_audit.extract.go_scripts import is_script_text
from deadline_audit.extract.go_types import _BUILTIN_TYPES, GoTypes
from deadline_audit.extract.go_text import (
    GoCatalog,
    Positions,
    ascii_text,
    default_alias,
    extract_gomod,
    go_catalog,
    unquote,
)
from deadline_audit.facts import Binding, Expr, FileFacts, FunctionFact, InputProblem, SymbolDecl

__all__ = ["extract_go", "extract_gomod"]

_PARSER = Parser(GO)
# the extractor's own query group, run with the marker passes' groups (go_query.py)
_QUERIES = {"extract.comments": "(comment) @c"}


# `err`, `fmt.Errorf(…)`, `errors.New(…)`, `ErrNotFound`, `wrap(err)`: an error value
_ERRORISH = re.compile(r"(?i)err|fail")
_ERR_CHECK = re.compile(r"\b\w*[eE]rr\w*\s*!=\s*nil")
_ZERO = re.compile(r"^(?:0|0\.0|nil|\"\"|[\w.]+\(0\))$")

class _GoFile(GoExprs, GoTypes):
    def __init__(self, path: str, source: bytes, ip: str, module_path: str | None, cat: GoCatalog) -> None:
        self.path = path
        self.src = source
        self.ip = ip
        self.pfx = "sym:go:" + ip + "."
        self.module_path = module_path
        self.cat = cat
        self.pos = Positions(source)
        self.at = self.pos.at  # per-file fast path (all-ASCII files skip the column decode)
        if source.isascii():
            self.text = ascii_text(source.decode("ascii"))
        self.facts = FileFacts(path=path, kind="go", module=ip,
                               lines=source.count(b"\n") + (0 if source.endswith(b"\n") or not source else 1))
        self.imports: dict[str, str] = {}
        self.types: set[str] = set()  # type names declared in this file
        self.struct_fields: dict[str, dict[str, str | None]] = {}  # qualified type → field → type
        self.wrappers: set[str] = set()  # struct types that embed one scalar (go_types._WRAPPED)
        self.func_results: dict[str, str | None] = {}  # func name → result type
        self.signature_memo: dict[tuple[str, int], Any] = {}  # see GoTypes.result_type
        self.method_results: dict[str, dict[str, str | None]] = {}  # qualified type → method → result
        self.pkg_vars: dict[str, str | None] = {}  # package var/const → type
        self.str_consts: dict[str, str] = {}  # package const → string value
        self.scripts: dict[str, Any] = {}  # package var → the text node of its `redis.NewScript(…)`
        self.script_kb = cat.scripts
        self.sql_kb = cat.sql
        self.fn: FnFrame | None = None
        self.param_of: dict[str, tuple[FnFrame, int]] = {}  # param sym → (function, index)
        self.derived: dict[str, set[tuple[int, int]]] = {}  # local sym → {(id(fn), index)}
        self.func_locals: set[str] = set()  # locals bound to a func literal or function value
        self.fn_by_id: dict[int, FnFrame] = {}
        self.iota: int | None = None
        self.env_names: dict[str, None] = {}
        self.cfg_files: dict[str, None] = {}
        self.key_literals: dict[str, None] = {}  # string literals that may name a knob (DA501)
        self._new_decl: SymbolDecl | None = None
        self.clean = False
        self.file_words: list[tuple[str, bytes]] | None = None

    # --- small helpers --------------------------------------------------------------
    def text(self, node: Any) -> str:
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def at(self, node: Any) -> list[int]:  # replaced per instance in __init__
        return self.pos.at(node)

    def unknown(self, node: Any) -> Expr:
        t = " ".join(self.text(node).split())
        return {"k": "unknown", "text": t[:80], "at": self.at(node)}

    def is_module(self, ip: str) -> bool:
        """Is this import path part of the program? This file's own package always is
        (a tree without go.mod, written before modules, still has its own types)."""
        mp = self.module_path
        return ip == self.ip or bool(mp) and (ip == mp or ip.startswith(mp + "/"))

    def qtype(self, node: Any) -> str | None:
        """Qualified type name of a type node, pointers/slices stripped."""
        while node is not None:
            t = node.type
            if t == "type_identifier":
                name = self.text(node)
                if name in _BUILTIN_TYPES:
                    return name
                return self.ip + "." + name
            if t == "qualified_type":
                pkg = self.text(node.child_by_field_name("package"))
                name = self.text(node.child_by_field_name("name"))
                return self.imports.get(pkg, pkg) + "." + name
            if t in ("pointer_type", "parenthesized_type"):
                node = node.named_children[-1] if node.named_children else None
            elif t in ("slice_type", "array_type"):
                node = node.child_by_field_name("element")
            elif t == "generic_type":
                node = node.child_by_field_name("type")
            elif t == "type_elem":
                node = node.named_children[0] if node.named_children else None
            else:
                return None
        return None

    def lookup(self, name: str) -> tuple[str, str | None] | None:
        fn = self.fn
        while fn is not None:
            hit = fn.scope.get(name)
            if hit is not None:
                return hit
            fn = fn.parent
        return None

    def alias(self, name: str) -> str | None:
        """Import path when `name` is an import alias not shadowed by a local."""
        ip = self.imports.get(name)
        if ip is None or self.lookup(name) is not None:
            return None
        return ip

    # --- run ------------------------------------------------------------------------
    def run(self) -> FileFacts:
        tree = _PARSER.parse(self.src)
        root = tree.root_node
        if root.has_error:
            self.syntax_problem(root)
        # Without ERROR/MISSING nodes the grammar fixes where a field sits among a node's
        # children (first, last): one `children` read replaces child_by_field_name calls.
        self.clean = not root.has_error
        top = root.named_children
        for node in top:
            if node.type == "import_declaration":
                self.do_imports(node)
        for node in top:
            self.prepass(node)
        self.matches = FileMatches(shared_query(self.catalog_full, _QUERIES), root)
        self.comments: list[tuple[int, int]] | None = None  # lazy: see comment_ranges
        for node in top:
            t = node.type
            if t == "function_declaration" or t == "method_declaration":
                self.do_func_decl(node)
            elif t == "const_declaration":
                self.do_consts(node)
            elif t == "var_declaration":
                self.do_vars(node)
            elif t == "type_declaration":
                self.do_type_decl(node)
        self.facts.env_names_read = list(self.env_names)
        self.facts.config_files_named = list(self.cfg_files)
        self.facts.config_keys_read = list(self.key_literals)
        run_marker_passes(MarkTree(root, self.matches, self.src, self.facts, self.pos), self.src, self.facts,
                          self.catalog_full)
        return self.facts

    def syntax_problem(self, root: Any) -> None:
        node = root
        while True:
            nxt = None
            for c in node.children:
                if c.type == "ERROR" or c.is_missing:
                    nxt = c
                    break
                if c.has_error:
                    nxt = c
                    break
            if nxt is None or nxt.type == "ERROR" or nxt.is_missing:
                node = nxt if nxt is not None else node
                break
            node = nxt
        r, c = node.start_point
        msg = f"syntax error: missing {node.type}" if node.is_missing else "syntax error"
        self.facts.problems.append(InputProblem(msg, r + 1, self.pos.col(r, c)))

    def do_imports(self, node: Any) -> None:
        stack = [node]
        while stack:
            n = stack.pop()
            for c in n.named_children:
                if c.type == "import_spec":
                    path_node = c.child_by_field_name("path")
                    if path_node is None:
                        continue
                    ip = unquote(self.text(path_node))
                    name = c.child_by_field_name("name")
                    if name is not None:
                        alias = self.text(name)
                        if alias in ("_", ".") or name.type in ("blank_identifier", "dot"):
                            continue
                    else:
                        alias = default_alias(ip)
                    self.imports[alias] = ip
                elif c.type == "import_spec_list":
                    stack.append(c)

    # --- Redis Lua scripts (go_scripts.py) --------------------------------------------
    def note_script(self, name: str, call: Any) -> None:
        fnode = call.child_by_field_name("function")
        argl = call.child_by_field_name("arguments")
        if fnode is None or fnode.type != "selector_expression" or argl is None or not argl.named_children:
            return
        pkg = fnode.child_by_field_name("operand")
        if pkg is None or pkg.type != "identifier" or self.text(pkg) not in self.imports:
            return
        if self.script_kb.is_constructor(f"{self.imports[self.text(pkg)]}.{self.text(fnode.child_by_field_name('field'))}"):
            self.scripts[name] = argl.named_children[0]

    def script_text(self, node: Any) -> str | None:
        if is_script_text(node):
            return unquote(self.text(node))
        if node is not None and node.type == "identifier":
            return self.str_consts.get(self.text(node))
        return None

    def script_sites(self, operand: Any, method: str, arg_nodes: list[Any], args: list[Expr], store: Expr | None) -> None:
        """`refresh.Run(ctx, rdb, keys, token, ttl)` / `rdb.Eval(ctx, lua, keys, token, ttl)`:
        the arguments that a script's expiry command reads are lease sites."""
        kb = self.script_kb
        if method in kb.run_methods and operand.type == "identifier" and self.text(operand) in self.scripts:
            text = self.script_text(self.scripts[self.text(operand)])
        elif method in kb.eval_methods and len(arg_nodes) > 1:
            text = self.script_text(arg_nodes[1])
        else:
            return
        for spec, i in kb.ttl_arguments(text or ""):
            if i < len(args):
                self.site(spec, arg_nodes[i], args[i], store, None)

    def sql_lease_sites(self, arg_nodes: list[Any], args: list[Expr], store: Expr | None) -> None:
        """`pool.Exec(ctx, renewSQL, part, owner, ttl.Seconds())`: the bound argument a row
        lease statement adds to now() is a lease site (sql_leases.py)."""
        at = next((i for i, a in enumerate(arg_nodes[:2]) if self.script_text(a) is not None), None)
        if at is None:
            return
        for bind in self.sql_kb.binds(self.script_text(arg_nodes[at]) or ""):
            i = at + 1 + bind.index if bind.index is not None else None
            if bind.spec is not None and i is not None and i < len(args):
                self.site(bind.spec, arg_nodes[i], args[i], store, None)
                if bind.acquires:
                    self.facts.sites[-1].extra["acquires"] = True

    # --- declarations ---------------------------------------------------------------
    def decl(self, sym: str, kind: str, node: Any, type: str | None = None, type_of: Expr | None = None,
             index: int | None = None, tags: dict[str, str] | None = None, embedded: bool = False) -> SymbolDecl:
        # positional: a keyword call of the dataclass __init__ costs twice as much
        d = SymbolDecl(sym, kind, self.pos.span(node), type, type_of, index, {} if tags is None else tags, embedded)
        self.facts.decls.append(d)
        return d

    def do_consts(self, node: Any, fn_sym: str | None = None) -> None:
        prev_vals: list[Any] = []
        prev_type = None
        for i, spec in enumerate(self.specs(node)):
            values = spec.child_by_field_name("value")
            ty = spec.child_by_field_name("type")
            if values is not None:
                prev_vals = values.named_children
                prev_type = ty
            elif ty is None:
                ty = prev_type
            self.iota = i
            try:
                self.value_spec(spec, "const", prev_vals, ty)
            finally:
                self.iota = None

    def do_vars(self, node: Any) -> None:
        for spec in self.specs(node):
            values = spec.child_by_field_name("value")
            self.value_spec(spec, "var" if self.fn is None else "local",
                            values.named_children if values is not None else [],
                            spec.child_by_field_name("type"))

    def value_spec(self, spec: Any, kind: str, vals: list[Any], ty: Any) -> None:
        qt = self.qtype(ty) if ty is not None else None
        names = spec.children_by_field_name("name")
        single_call = len(names) > 1 and len(vals) == 1
        for i, name in enumerate(names):
            n = self.text(name)
            if n == "_":
                if i < len(vals):
                    self.sx(vals[i])
                continue
            if self.fn is None:
                sym = self.pfx + n
            else:
                kind = "const" if kind == "const" else "local"
                sym = self.fn.sym + "." + n
            val = vals[i] if i < len(vals) else None
            vtype = qt
            type_of = None
            if val is not None and vtype is None:
                vtype = self.static_type(val)
            local_type = vtype if vtype is not None or val is None else self.guess_new(val)
            if self.fn is not None:
                self.fn.scope[n] = (sym, local_type)
            if val is not None and not (single_call and i > 0):
                expr = self.ex(val, {"k": "ref", "sym": sym})
                if vtype is None and expr.get("k") == "call":
                    type_of = expr
                self.decl(sym, kind, name, type=vtype, type_of=type_of)
                self.bind(sym, expr, name, val)
            else:
                self.decl(sym, kind, name, type=vtype)

    def bind(self, sym: str, expr: Expr, start: Any, end: Any) -> None:
        fn = self.fn
        self.facts.bindings.append(Binding(sym, expr, self.pos.span(start, end),
                                           fn.sym if fn is not None else None))
        k = expr.get("k")
        if k in ("fnref", "method") or (k == "call" and (expr.get("fn") or {}).get("k") in ("fnref", "method")):
            self.func_locals.add(sym)  # a function value, or what a module function returned
        if fn is not None and self.param_of:
            src = self.param_sources(expr)
            if src:
                self.derived.setdefault(sym, set()).update(src)

    def param_sources(self, expr: Expr) -> set[tuple[int, int]]:
        """(function id, param index) of the parameters `expr` reads, directly or through locals."""
        out: set[tuple[int, int]] = set()
        refs: list[str] = []
        _refs(expr, refs)
        for s in refs:
            p = self.param_of.get(s)
            if p is not None:
                out.add((id(p[0]), p[1]))
            d = self.derived.get(s)
            if d:
                out |= d
        return out

    # --- functions ------------------------------------------------------------------
    def do_func_decl(self, node: Any) -> None:
        self.param_of.clear()
        self.derived.clear()
        self.fn_by_id.clear()
        name = self.text(node.child_by_field_name("name"))
        recv = self.receiver(node)
        if recv is not None:
            rtype = recv[1]
            base = "sym:go:" + rtype if rtype else self.pfx + "?"
            sym = base + "." + name
            kind = "method"
        else:
            rtype = None
            sym = self.pfx + name
            kind = "func"
        self.decl(sym, kind, node.child_by_field_name("name"))
        fact = FunctionFact(sym=sym, span=self.pos.span(node), receiver_type=rtype,
                            result_type=self.result_type(node))
        fn = FnFrame(sym, fact, None)
        if recv is not None and recv[0] and recv[0] != "_":
            rsym = sym + "." + recv[0]
            fn.scope[recv[0]] = (rsym, rtype)
            rnode = node.child_by_field_name("receiver")
            self.decl(rsym, "param", rnode, type=rtype)
        self.function(node, fn)
        # Indices were appended while iterating sets keyed by id(): sort them so the facts
        # are the same on every run (the Python extractor sorts them too).
        for f in self.fn_by_id.values():
            f.fact.called_params.sort()
            f.fact.timer_params.sort()

    def function(self, node: Any, fn: FnFrame) -> None:
        fact = fn.fact
        self.facts.functions.append(fact)
        self.fn_by_id[id(fn)] = fn
        params = node.child_by_field_name("parameters")
        index = 0
        if params is not None:
            for decl in params.named_children:
                if decl.type not in ("parameter_declaration", "variadic_parameter_declaration"):
                    continue
                ty = decl.child_by_field_name("type")
                qt = self.qtype(ty) if ty is not None and decl.type == "parameter_declaration" else None
                # `alive func(context.Context) bool`: a predicate the function asks, not work it runs
                result = ty.child_by_field_name("result") if ty is not None and ty.type == "function_type" else None
                predicate = result is not None and self.text(result) == "bool"
                names = decl.children_by_field_name("name")
                for n in names or [None]:
                    if predicate:
                        fact.markers.append({"m": "predicate_param", "param": index})
                    pname = self.text(n) if n is not None else "_"
                    psym = fn.sym + "." + (pname if pname != "_" else f"_{index}")
                    fact.params.append(psym)
                    fact.param_names.append(pname)
                    if n is not None and pname != "_":
                        fn.scope[pname] = (psym, qt)
                        self.param_of[psym] = (fn, index)
                    self.decl(psym, "param", n if n is not None else decl, type=qt, index=index)
                    index += 1
        res = node.child_by_field_name("result")
        if res is not None and res.type == "parameter_list":
            for decl in res.named_children:
                ty = decl.child_by_field_name("type")
                qt = self.qtype(ty) if ty is not None else None
                for n in decl.children_by_field_name("name"):
                    rn = self.text(n)
                    if rn != "_":
                        fn.scope[rn] = (fn.sym + "." + rn, qt)
                        self.decl(fn.sym + "." + rn, "local", n, type=qt)
        body = node.child_by_field_name("body")
        if body is None:
            return
        saved = self.fn
        self.fn = fn
        try:
            self.block(body)
        finally:
            self.fn = saved
        fact.vocabulary = self.vocabulary(body)

    def comment_ranges(self) -> list[tuple[int, int]]:
        """(start, end) bytes of every comment, sorted; queried on first need only."""
        if self.comments is None:
            self.comments = sorted((n.start_byte, n.end_byte) for caps in self.matches.get("extract.comments")
                                   for n in caps["c"])
            self.comment_starts = [c[0] for c in self.comments]
        return self.comments

    def vocabulary(self, body: Any) -> list[str]:
        # Words have no spaces, so a word found with comments stripped is found without
        # stripping: only the words of the raw body are candidates, and comments need
        # finding only when the body may hold one.
        words = self.file_words
        if words is None:  # only words of the whole file can be words of a body
            low = self.src.lower()
            words = self.file_words = [(w, lw) for w, lw in self.cat.words_lower if lw in low]
        if not words:  # most files: no body to lowercase
            return []
        start, end = body.start_byte, body.end_byte
        text = self.src[start:end].lower()
        cands = [(w, lw) for w, lw in words if lw in text]
        if not cands or (b"//" not in text and b"/*" not in text):
            return [w for w, _ in cands]
        comments = self.comment_ranges()
        if comments:
            i = bisect.bisect_left(self.comment_starts, start)
            parts = []
            cur = start
            while i < len(comments) and comments[i][0] < end:
                cs, ce = comments[i]
                parts.append(self.src[cur:cs])
                cur = ce
                i += 1
            if parts:
                parts.append(self.src[cur:end])
                text = b" ".join(parts).lower()
        return [w for w, lw in cands if lw in text]

    def func_literal(self, node: Any) -> Expr:
        line, col = self.at(node)
        enclosing = self.fn.sym if self.fn is not None else None
        sym = (enclosing if enclosing else self.pfx.rstrip(".")) + f".func@{line}:{col}"
        fact = FunctionFact(sym=sym, span=self.pos.span(node), result_type=self.result_type(node),
                            enclosing=enclosing)
        self.function(node, FnFrame(sym, fact, self.fn))
        return {"k": "fnref", "sym": sym}

    # --- statements -----------------------------------------------------------------
    def block(self, node: Any) -> None:
        STMT, EXPR = self.STMT, self.EXPR
        for c in node.named_children:
            t = c.type
            h = STMT.get(t)
            if h is not None:
                h(self, c)
            elif t in EXPR:
                self.sx(c)
            else:
                self.block(c)  # what stmt() does with a node it has no handler for

    def stmt(self, node: Any) -> None:
        t = node.type
        h = self.STMT.get(t)
        if h is not None:
            h(self, node)
        elif t in self.EXPR:
            self.sx(node)
        else:
            self.block(node)

    def s_short_var(self, node: Any) -> None:
        self.assign(node, define=True)

    def s_assign(self, node: Any) -> None:
        self.assign(node, define=False)

    def assign(self, node: Any, define: bool) -> None:
        if self.clean:
            ch = node.children
            left, right = ch[0], ch[-1]
        else:
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            if left is None or right is None:
                for c in node.named_children:
                    self.stmt(c)
                return
        lhs = left.named_children if left.type == "expression_list" else [left]
        rhs = right.named_children if right.type == "expression_list" else [right]
        op = None
        if not define:
            o = ch[1] if self.clean and len(ch) == 3 else node.child_by_field_name("operator")
            if o is not None and o.type != "=":
                op = _OPS.get(o.type[:-1])
                if op is None:
                    for r in rhs:
                        self.sx(r)
                    return
        pairs = list(zip(lhs, rhs)) if len(lhs) == len(rhs) else [(lhs[0], rhs[0])] if len(rhs) == 1 else []
        if not pairs:
            for r in rhs:
                self.sx(r)
        for i, (l, r) in enumerate(pairs):
            target, store, site_of = self.target(l, define, r)
            new_decl, self._new_decl = self._new_decl, None
            expr = self.ex(r, store)
            if new_decl is not None and expr.get("k") == "call":
                new_decl.type_of = expr
            if op is not None and target is not None:
                expr = {"k": "op", "op": op, "args": [{"k": "ref", "sym": target}, expr]}
            if target is not None:
                self.bind(target, expr, l, r)
            if site_of is not None:
                self.field_site_assign(site_of, l, r, expr)
        if define and len(lhs) > len(pairs):
            for l in lhs[len(pairs):]:
                if l.type == "identifier":
                    n = self.text(l)
                    if n != "_" and self.fn is not None and n not in self.fn.scope:
                        sym = self.fn.sym + "." + n
                        self.fn.scope[n] = (sym, None)
                        self.decl(sym, "local", l)
        if len(lhs) > 1 and len(rhs) == 1 and lhs[1].type == "identifier" and self.fn is not None \
                and expr.get("k") == "call" and (expr.get("fn") or {}).get("name") in self.cat.second_result_contexts:
            hit = self.fn.scope.get(self.text(lhs[1]))
            if hit is not None:  # the derived context is the second result
                self.bind(hit[0], expr, lhs[1], rhs[0])

    def target(self, l: Any, define: bool, r: Any) -> tuple[str | None, Expr | None, tuple | None]:
        """(bound symbol, store expr for sites in the value, (type, field, operand) of a field site)."""
        t = l.type
        if t == "identifier":
            n = self.text(l)
            if n == "_":
                return None, None, None
            fn = self.fn
            if define and fn is not None and n not in fn.scope:
                sym = fn.sym + "." + n
                vtype = self.static_type(r)
                fn.scope[n] = (sym, vtype if vtype is not None else self.guess_new(r))
                d = self.decl(sym, "local", l, type=vtype)
                if vtype is None:
                    self._new_decl = d
                return sym, {"k": "ref", "sym": sym}, None
            hit = self.lookup(n)
            sym = hit[0] if hit is not None else self.pfx + n
            if define and hit is not None and hit[1] is None:
                vtype = self.guess_type(r)
                if vtype is not None:
                    fn.scope[n] = (hit[0], vtype)
            return sym, {"k": "ref", "sym": sym}, None
        if t == "selector_expression":
            if self.clean:
                ch = l.named_children
                operand = ch[0]
                fname = self.text(ch[-1])
            else:
                operand = l.child_by_field_name("operand")
                fname = self.text(l.child_by_field_name("field"))
            ip = self.alias(self.text(operand)) if operand.type == "identifier" else None
            if ip is not None:
                sym = "sym:go:" + ip + "." + fname
                return sym, {"k": "ref", "sym": sym}, None
            ot = self.static_type(operand) or self.guess_new(operand)
            if ot in self.wrappers and fname == self.struct_fields[ot].get(fname, "").rsplit(".", 1)[-1]:
                # `c.Exec.Timeout.Duration = d` sets the wrapper `c.Exec.Timeout` itself
                return self.target(operand, define, r)
            site_of = None
            if ot is not None and ot in self.cat.field_types and self.cat.field_sites(ot, fname):
                site_of = (ot, fname, operand)
            if ot is None:
                return None, None, site_of
            sym = "sym:go:" + ot + "." + fname
            store = {"k": "ref", "sym": sym}
            if operand.type == "identifier" and ot not in self.struct_fields:
                hit = self.lookup(self.text(operand))
                if hit is not None:  # `cfg.HTTPClient = …` on a library's config held in a
                    store = {"k": "ref", "sym": hit[0]}  # local: what is set configures that object
            return sym, store, site_of
        if t == "parenthesized_expression" and l.named_children:
            return self.target(l.named_children[0], define, r)
        if t == "unary_expression":  # *p = v
            return None, None, None
        return None, None, None

    def field_site_assign(self, site_of: tuple, l: Any, r: Any, expr: Expr) -> None:
        ot, fname, operand = site_of
        stored = self.static_ref(operand)
        for spec in self.cat.field_sites(ot, fname):
            self.site(spec, r, expr, stored, None)

    def static_ref(self, node: Any) -> Expr | None:
        """`ref`/`field` expr of an identifier/selector chain, recording nothing."""
        t = node.type
        if t == "identifier":
            name = self.text(node)
            hit = self.lookup(name)
            return {"k": "ref", "sym": hit[0] if hit is not None else self.pfx + name}
        if t == "parenthesized_expression" and node.named_children:
            return self.static_ref(node.named_children[0])
        if t == "unary_expression":
            operand = node.child_by_field_name("operand")
            return self.static_ref(operand) if operand is not None else None
        if t == "selector_expression":
            operand = node.child_by_field_name("operand")
            fname = self.text(node.child_by_field_name("field"))
            if operand.type == "identifier":
                ip = self.alias(self.text(operand))
                if ip is not None:
                    return {"k": "ref", "sym": "sym:go:" + ip + "." + fname}
            ot = self.static_type(operand)
            if ot:
                return {"k": "ref", "sym": "sym:go:" + ot + "." + fname}
            x = self.static_ref(operand)
            return {"k": "field", "x": x, "name": fname} if x is not None else None
        return None

    def s_var(self, node: Any) -> None:
        self.do_vars(node)

    def s_const(self, node: Any) -> None:
        self.do_consts(node)

    def s_return(self, node: Any) -> None:
        vals = node.named_children
        if not vals:
            return
        if vals[0].type == "expression_list":
            vals = vals[0].named_children
            if not vals:
                return
        first = self.ex(vals[0])
        for v in vals[1:]:  # only the first value is kept: the others only record facts
            self.sx(v)
        fn = self.fn
        if fn is not None:
            if _ZERO.match(self.text(vals[0])) and self._error_return(node, vals):
                first = {**first, "error_path": True}
            fn.fact.returns.append(first)

    def _error_return(self, node: Any, vals: list[Any]) -> bool:
        """A zero returned on a failure path: with a non-nil error (`return 0, err`), or in
        `if err != nil { … }`. Value resolution reads the other returns (a fallback value
        returned there, `return def`, is not one of these)."""
        if len(vals) >= 2 and self.text(vals[-1]) != "nil" and vals[-1].type in ("identifier", "call_expression") \
                and _ERRORISH.search(self.text(vals[-1])):
            return True
        block = node.parent
        if block is not None and block.type == "statement_list":
            block = block.parent
        owner = block.parent if block is not None else None
        if owner is None or owner.type != "if_statement" or owner.child_by_field_name("consequence") != block:
            return False
        cond = owner.child_by_field_name("condition")
        return cond is not None and _ERR_CHECK.search(self.text(cond)) is not None

    def s_go(self, node: Any) -> None:
        self.go_defer(node, "in_go")

    def s_defer(self, node: Any) -> None:
        self.go_defer(node, "in_defer")

    def go_defer(self, node: Any, flag: str) -> None:
        for c in node.named_children:
            if c.type == "call_expression":
                self.call(c, None, flag)
            else:
                self.stmt(c)

    def s_if(self, node: Any) -> None:  # stmt() of each child: what block() does
        self.block(node)

    def s_for(self, node: Any) -> None:
        for c in node.named_children:
            if c.type == "range_clause":
                self.range_clause(c)
            else:
                self.stmt(c)

    def range_clause(self, node: Any) -> None:
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if right is not None:
            self.ex(right)
        if left is None or self.fn is None:
            return
        define = any(c.type == ":=" for c in node.children)
        for l in left.named_children:
            if l.type == "identifier" and define:
                n = self.text(l)
                if n != "_":
                    sym = self.fn.sym + "." + n
                    self.fn.scope[n] = (sym, None)
                    self.decl(sym, "local", l)

    def s_type_switch(self, node: Any) -> None:
        alias = node.child_by_field_name("alias")
        for c in node.named_children:
            if c is not None and alias is not None and c.id == alias.id:
                for l in c.named_children:
                    n = self.text(l)
                    if n != "_" and self.fn is not None:
                        sym = self.fn.sym + "." + n
                        self.fn.scope[n] = (sym, None)
                        self.decl(sym, "local", l)
            elif c.type == "type_case":
                for s in c.named_children:
                    if s.type == "statement_list":
                        self.block(s)
            else:
                self.stmt(c)

    def s_type_decl(self, node: Any) -> None:
        return

    def s_expr_stmt(self, node: Any) -> None:
        for c in node.named_children:
            self.sx(c)

    STMT: dict[str, Any] = {}

    EXPR: dict[str, Any] = {}


_LEAVES = frozenset({"num", "str", "none", "unknown", "fnref", "ext"})


def _refs(e: Expr, out: list[str]) -> None:
    k = e.get("k")
    if k in _LEAVES:
        return
    if k == "ref":
        out.append(e["sym"])
    elif k == "op" or k == "or":
        for a in e["args"]:
            _refs(a, out)
    elif k == "call":
        _refs(e["fn"], out)
        for a in e["args"]:
            _refs(a, out)
    elif k in ("field", "conv", "method", "item"):
        _refs(e["x"], out)
    elif k == "env":
        _refs(e["name"], out)
    elif k == "obj":
        for a in e["fields"].values():
            _refs(a, out)


_GoFile.STMT = {
    "short_var_declaration": _GoFile.s_short_var,
    "assignment_statement": _GoFile.s_assign,
    "var_declaration": _GoFile.s_var,
    "const_declaration": _GoFile.s_const,
    "return_statement": _GoFile.s_return,
    "go_statement": _GoFile.s_go,
    "defer_statement": _GoFile.s_defer,
    "if_statement": _GoFile.block,  # = s_if
    "for_statement": _GoFile.s_for,
    "type_switch_statement": _GoFile.s_type_switch,
    "type_declaration": _GoFile.s_type_decl,
    "expression_statement": _GoFile.s_expr_stmt,
    "comment": lambda self, node: None,
    "label_name": lambda self, node: None,
    "block": _GoFile.block,
    "statement_list": _GoFile.block,
}

_GoFile.EXPR = {
    "identifier": _GoFile.e_ident,
    "int_literal": _GoFile.e_int,
    "float_literal": _GoFile.e_int,
    "iota": _GoFile.e_iota,
    "interpreted_string_literal": _GoFile.e_str,
    "raw_string_literal": _GoFile.e_str,
    "nil": _GoFile.e_nil,
    "parenthesized_expression": _GoFile.e_paren,
    "unary_expression": _GoFile.e_unary,
    "binary_expression": _GoFile.e_binary,
    "selector_expression": _GoFile.e_selector,
    "index_expression": _GoFile.e_index,
    "type_assertion_expression": _GoFile.e_assert,
    "type_conversion_expression": _GoFile.e_conversion,
    "func_literal": _GoFile.e_func_lit,
    "composite_literal": _GoFile.e_composite,
    "call_expression": _GoFile.e_call,
}


def extract_go(path: str, source: bytes, import_path: str, module_path: str | None, catalog: Catalog) -> FileFacts:
    """Facts of one Go file. Pure: no filesystem, no environment."""
    # The walk allocates a few dicts and Nodes per syntax node and frees almost none of
    # them before the end: the cyclic collector would rescan them again and again.
    with collector_paused():
        go_file = _GoFile(path, source, import_path, module_path, go_catalog(catalog))
        go_file.catalog_full = catalog
        facts = go_file.run()
        # Free the tree, its Nodes and the query matches while the collector still waits:
        # alive at its return, the collector's first run would scan them all with the facts.
        del go_file
    return facts
