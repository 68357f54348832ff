"""Expressions of the Go extractor: tree-sitter expression nodes → `Expr` dicts, and the
call/site/use facts recorded on the way. A mixin of `_GoFile` (deadline_audit/extract/go.py),
which owns the scopes, the file's declarations and the statement walk."""

from __future__ import annotations

from typing import Any

from deadline_audit.extract.go_text import named_by_literal, parse_number, selector_parts, unquote
from deadline_audit.facts import CallFact, Expr, FunctionFact, SiteFact


_NUMERIC_CONV = frozenset(
    "byte float32 float64 int int8 int16 int32 int64 rune uint uint8 uint16 uint32 uint64 uintptr".split()
)
_BUILTIN_FUNCS = frozenset(
    "len cap make new append copy delete panic print println recover close complex real imag clear".split()
)
_OPS = {"+": "add", "-": "sub", "*": "mul", "/": "div"}
_TIMERISH = frozenset({"timer", "ticker", "sleep", "lease"})
_USES_CAP = 64
# expression nodes whose Expr records no fact (see GoExprs.sx)
_PURE = frozenset({"identifier", "int_literal", "float_literal", "iota", "nil"})


def _use_key(e: Expr) -> Any:
    """A key equal for equal uses: the symbol of a `ref`, (symbol, name) for a field of a
    plain `ref` (the commonest `field`; a tuple never equals a str key), else the repr."""
    if e["k"] == "ref":
        return e["sym"]
    x = e.get("x")
    if e["k"] == "field" and len(e) == 3 and x.get("k") == "ref" and len(x) == 2:
        return (x["sym"], e["name"])
    return repr(e)


class FnFrame:
    """A function being walked: its fact, scope and parameter indices."""

    __slots__ = ("sym", "fact", "scope", "parent", "uses_keys")

    def __init__(self, sym: str, fact: FunctionFact, parent: FnFrame | None) -> None:
        self.sym = sym
        self.fact = fact
        self.scope: dict[str, tuple[str, str | None]] = {}  # name → (sym, type)
        self.parent = parent
        self.uses_keys: set[str] = set()


class GoExprs:
    """Expression conversion; expects the attributes and helpers `_GoFile` defines."""

    EXPR: dict[str, Any]
    STMT: dict[str, Any]

    # --- expressions ----------------------------------------------------------------
    def fn_stack(self) -> list[FnFrame]:
        out = []
        fn = self.fn
        while fn is not None:
            out.append(fn)
            fn = fn.parent
        return out

    def ex(self, node: Any, store: Expr | None = None) -> Expr:
        h = self.EXPR.get(node.type)
        if h is None:
            for c in node.named_children:
                if c.type in self.EXPR:
                    self.sx(c)
                else:
                    self.stmt(c)
            return self.unknown(node)
        return h(self, node, store)

    def sx(self, node: Any) -> None:
        """`ex(node)` whose value is dropped: only its facts matter. Names, numbers and
        nil record nothing, and an operator records only what its operands do, so those
        build no Expr at all."""
        clean = self.clean
        while True:
            t = node.type
            if t in _PURE:
                return
            if t == "binary_expression":
                if clean:
                    ch = node.children
                    self.sx(ch[0])
                    node = ch[-1]
                else:
                    self.sx(node.child_by_field_name("left"))
                    node = node.child_by_field_name("right")
            elif t == "unary_expression":
                inner = node.named_children[-1] if clean else node.child_by_field_name("operand")
                if inner is None:
                    return
                node = inner
            elif t == "parenthesized_expression":
                inner_l = node.named_children
                if not inner_l:
                    return
                node = inner_l[0]
            else:
                h = self.EXPR.get(t)
                if h is None:
                    self.ex(node)
                else:
                    h(self, node, None)
                return

    def e_ident(self, node: Any, store: Expr | None) -> Expr:
        name = self.text(node)
        fn = self.fn
        hit = None
        while fn is not None:  # lookup(), inlined: the commonest expression
            hit = fn.scope.get(name)
            if hit is not None:
                return {"k": "ref", "sym": hit[0]}
            fn = fn.parent
        return self.ident(node, name, None)

    def ident(self, node: Any, name: str, hit: tuple[str, str | None] | None) -> Expr:
        """`e_ident` for an identifier whose text and `lookup` the caller has already."""
        if hit is not None:
            return {"k": "ref", "sym": hit[0]}
        if name in self.func_results:
            return {"k": "fnref", "sym": self.pfx + name}
        if name == "true" or name == "false":
            return self.unknown(node)
        return {"k": "ref", "sym": self.pfx + name}

    def e_int(self, node: Any, store: Expr | None) -> Expr:
        v = parse_number(self.text(node))
        if v is None:
            return self.unknown(node)
        return {"k": "num", "v": v, "u": None, "at": self.at(node)}

    def e_iota(self, node: Any, store: Expr | None) -> Expr:
        if self.iota is None:
            return self.unknown(node)
        return {"k": "num", "v": float(self.iota), "u": None, "at": self.at(node)}

    def e_str(self, node: Any, store: Expr | None) -> Expr:
        v = unquote(self.text(node))
        named = named_by_literal(v)
        if named is not None:
            (self.cfg_files if named[0] == "file" else self.key_literals)[named[1]] = None
        return {"k": "str", "v": v, "at": self.at(node)}

    def e_nil(self, node: Any, store: Expr | None) -> Expr:
        return {"k": "none", "at": self.at(node)}

    def e_paren(self, node: Any, store: Expr | None) -> Expr:
        inner = node.named_children
        return self.ex(inner[0], store) if inner else self.unknown(node)

    def e_unary(self, node: Any, store: Expr | None) -> Expr:
        if self.clean:
            ch = node.children
            op, operand = ch[0], ch[-1]
        else:
            op = node.child_by_field_name("operator")
            operand = node.child_by_field_name("operand")
        if operand is None:
            return self.unknown(node)
        ot = op.type if op is not None else ""
        if ot in ("&", "*", "+"):
            return self.ex(operand, store)
        if ot == "-":
            x = self.ex(operand, store)
            if x.get("k") == "num":
                return {"k": "num", "v": -x["v"], "u": x["u"], "at": self.at(node)}
            return {"k": "op", "op": "neg", "args": [x], "at": self.at(node)}
        self.ex(operand)
        return self.unknown(node)

    def e_binary(self, node: Any, store: Expr | None) -> Expr:
        if self.clean:
            ch = node.children
            left = self.ex(ch[0], store)
            right = self.ex(ch[-1], store)
            opn = ch[1] if len(ch) == 3 else node.child_by_field_name("operator")
        else:
            left = self.ex(node.child_by_field_name("left"), store)
            right = self.ex(node.child_by_field_name("right"), store)
            opn = node.child_by_field_name("operator")
        op = _OPS.get(opn.type) if opn is not None else None
        if op is None:
            return self.unknown(node)
        if left.get("k") == "num" and right.get("k") == "num":
            lu, ru = left["u"], right["u"]
            a, b = left["v"], right["v"]
            folded = None
            if op == "mul" and (lu is None or ru is None):
                folded = (a * b, lu or ru)
            elif op in ("add", "sub") and lu == ru:
                folded = (a + b if op == "add" else a - b, lu)
            elif op == "div" and ru is None and b != 0:
                folded = (a / b, lu)
            if folded is not None:
                return {"k": "num", "v": folded[0], "u": folded[1], "at": self.at(node)}
        return {"k": "op", "op": op, "args": [left, right], "at": self.at(node)}

    def e_selector(self, node: Any, store: Expr | None) -> Expr:
        operand, fname = selector_parts(node, self.clean, self.text)
        if operand.type == "identifier":
            # one text and one scope lookup serve alias(), ex() and static_type()
            name = self.text(operand)
            hit = self.lookup(name)
            ip = self.imports.get(name) if hit is None else None
            if ip is not None:
                q = ip + "." + fname
                c = self.cat.constants.get(q)
                if c is not None:
                    return {"k": "num", "v": c, "u": "ns", "at": self.at(node)}
                return {"k": "ref", "sym": "sym:go:" + q}
            x = self.ident(operand, name, hit)
            ot = hit[1] if hit is not None else self.pkg_vars.get(name)
        else:
            x = self.ex(operand)
            ot = self.static_type(operand)
        e: Expr = {"k": "ref", "sym": "sym:go:" + ot + "." + fname} if ot else {"k": "field", "x": x, "name": fname}
        self.use(e)
        return e

    def use(self, e: Expr) -> None:
        fn = self.fn
        if fn is None:
            return
        key = _use_key(e)
        while fn is not None:
            if key not in fn.uses_keys and len(fn.fact.uses) < _USES_CAP:
                fn.uses_keys.add(key)
                fn.fact.uses.append(e)
            fn = fn.parent

    def e_index(self, node: Any, store: Expr | None) -> Expr:
        operand = node.child_by_field_name("operand")
        index = node.child_by_field_name("index")
        x = self.ex(operand) if operand is not None else None
        if index is not None:
            k = self.ex(index)
            if x is not None and k.get("k") == "str":
                return {"k": "item", "x": x, "key": k["v"]}
            if x is not None:  # `budgets[profile]`: one of the container's values
                return {**self.unknown(node), "lookup": x}
        return self.unknown(node)

    def e_assert(self, node: Any, store: Expr | None) -> Expr:
        operand = node.child_by_field_name("operand")
        return self.ex(operand, store) if operand is not None else self.unknown(node)

    def e_func_lit(self, node: Any, store: Expr | None) -> Expr:
        return self.func_literal(node)

    def e_composite(self, node: Any, store: Expr | None) -> Expr:
        ty = node.child_by_field_name("type")
        body = node.child_by_field_name("body")
        qt = self.qtype(ty) if ty is not None and ty.type in (
            "type_identifier", "qualified_type", "generic_type") else None
        fields: dict[str, Expr] = {}
        items: list[list[Any]] = []  # a map literal's [key, value] pairs
        if body is None:
            return self.unknown(node)
        if qt is None and (ty is None or ty.type in ("slice_type", "array_type", "implicit_length_array_type")):
            return self.e_untyped_composite(node, body, store)
        is_site_type = qt is not None and qt in self.cat.field_types
        group = None
        for el in body.named_children:
            if el.type == "keyed_element":
                parts = _keyed(el)
                if parts is None:
                    continue
                kn, vn = parts
                if qt is not None and kn.type in ("identifier", "field_identifier"):
                    fname = self.text(kn)
                    fsym = "sym:go:" + qt + "." + fname
                    expr = self.ex(vn, {"k": "ref", "sym": fsym})
                    fields[fname] = expr
                    self.bind(fsym, expr, el, el)
                    if is_site_type:
                        for spec in self.cat.field_sites(qt, fname):
                            if group is None:
                                group = "lit:%s:%d:%d" % (self.path, *self.at(node))
                            self.site(spec, vn, expr, store, group)
                elif qt is None and kn.type in ("interpreted_string_literal", "raw_string_literal"):
                    # a map keyed by strings: its values are what a lookup may give
                    items.append([unquote(self.text(kn)), self.ex(vn)])
                else:
                    if kn.type not in ("identifier", "field_identifier"):
                        self.sx(kn)
                    self.sx(vn)
            elif el.type == "literal_element":
                for c in el.named_children:
                    self.sx(c)
        if qt is None:  # a map literal: read for its text (`map[string]any{"status": "failed"}`)
            found = self.unknown(node)
            if items:
                found["items"] = items
            return found
        if is_site_type:
            for spec in self.cat.implicit_fields(qt):
                if spec.field not in fields:
                    self.site(spec, node, None, store, group or "lit:%s:%d:%d" % (self.path, *self.at(node)))
        return {"k": "obj", "type": qt, "fields": fields, "at": self.at(node)}

    def e_untyped_composite(self, node: Any, body: Any, store: Expr | None) -> Expr:
        """A slice, array or map literal, or an element whose type is elided
        (`[]Entry{{Every: d, Task: worker.Task{…}}}`): the values it holds, so that the
        typed literals inside stay reachable (a payload in a table of jobs)."""
        items: list[Expr] = []
        for el in body.named_children:
            if el.type == "keyed_element":
                parts = _keyed(el)
                if parts is None:
                    continue
                kn, vn = parts
                if kn.type not in ("identifier", "field_identifier"):
                    self.sx(kn)
                items.append(self.e_untyped_composite(vn, vn, store) if vn.type == "literal_value" else self.ex(vn, store))
            elif el.type == "literal_element":
                items.extend(self.e_untyped_composite(c, c, store) if c.type == "literal_value" else self.ex(c, store)
                             for c in el.named_children if c.type != "comment")
        if not items:
            return self.unknown(node)
        return {"k": "list", "items": items, "at": self.at(node)}

    def site(self, spec: Any, node: Any, value: Expr | None, store: Expr | None, group: str | None) -> None:
        line, col = self.at(node)
        self.facts.sites.append(SiteFact(
            id=f"site:{self.path}:{line}:{col}", api=spec.api, role=spec.role, span=self.pos.span(node),
            value=value, function=self.fn.sym if self.fn is not None else None, stored_in=store,
            group=group, unit=spec.unit))
        if spec.role in _TIMERISH and value is not None and self.fn is not None and self.param_of:
            for fid, idx in self.param_sources(value):
                fn = self.fn_by_id.get(fid)
                if fn is not None and idx not in fn.fact.timer_params:
                    fn.fact.timer_params.append(idx)

    def e_call(self, node: Any, store: Expr | None) -> Expr:
        return self.call(node, store, None)

    def e_conversion(self, node: Any, store: Expr | None) -> Expr:
        operand = node.child_by_field_name("operand")
        return self.ex(operand, store) if operand is not None else self.unknown(node)

    def call(self, node: Any, store: Expr | None, flag: str | None) -> Expr:
        if self.clean:
            ch = node.children
            fnode = ch[0]
            argl = ch[-1]
            # a comment needs a "/": most argument lists have none to filter out
            if self.src.find(b"/", argl.start_byte, argl.end_byte) < 0:
                arg_nodes = argl.named_children
            else:
                arg_nodes = [a for a in argl.named_children if a.type != "comment"]
        else:
            fnode = node.child_by_field_name("function")
            argl = node.child_by_field_name("arguments")
            arg_nodes = [a for a in argl.named_children if a.type != "comment"] if argl is not None else []
        ft = fnode.type
        at = self.at(node)
        if ft == "identifier":
            name = self.text(fnode)
            hit = self.lookup(name)
            if hit is not None:
                args = [self.ex(a, store) for a in arg_nodes]
                self.called(hit[0])
                outer = self.param_of.get(hit[0])
                if outer is not None and arg_nodes and outer[1] not in outer[0].fact.called_with_args:
                    outer[0].fact.called_with_args.append(outer[1])
                if hit[0] in self.func_locals or outer is not None and outer[0] is not self.fn:
                    # a func held in a local (`fetch := func…`), or an enclosing function's
                    # parameter called in a closure (`go func() { … alive() … }()`)
                    self.call_fact({"k": "ref", "sym": hit[0]}, node, args, flag, at)
                return self.unknown(node)
            if name in ("min", "max") and name not in self.func_results:
                args = [self.ex(a, store) for a in arg_nodes]
                return {"k": "op", "op": name, "args": args, "at": at}
            if name in _NUMERIC_CONV and len(arg_nodes) == 1 and name not in self.types:
                return self.ex(arg_nodes[0], store)
            if name in self.types and len(arg_nodes) == 1:
                return self.ex(arg_nodes[0], store)
            args = [self.ex(a, store) for a in arg_nodes]
            if name in _BUILTIN_FUNCS and name not in self.func_results:
                return self.unknown(node)
            callee = {"k": "fnref", "sym": self.pfx + name}
            return self.call_fact(callee, node, args, flag, at)
        if ft == "selector_expression":
            if self.clean:
                fch = fnode.named_children
                operand = fch[0]
                mname = self.text(fch[-1])
            else:
                operand = fnode.child_by_field_name("operand")
                mname = self.text(fnode.child_by_field_name("field"))
            if operand.type == "identifier":
                # one text and one scope lookup serve alias(), guess_type() and ex()
                oname = self.text(operand)
                ohit = self.lookup(oname)
                if ohit is None:
                    ip = self.imports.get(oname)
                    if ip is not None:
                        return self.pkg_call(ip, mname, node, arg_nodes, store, flag, at)
                    ot = self.pkg_vars.get(oname)
                else:
                    ot = ohit[1]
            else:
                oname = None
                ot = self.guess_type(operand)
            if ot is not None:
                conv = self.cat.conversion(ot + "." + mname)
                if conv is not None and "." in ot:
                    return self.conv(conv, operand, arg_nodes, at, store, method=True)
                specs = self.cat.call_sites(ot + "." + mname) if not self.is_module(ot.rsplit(".", 1)[0]) else []
            else:
                specs = []
                for rt, entry in self.cat.method_convs.get(mname, ()):
                    if not arg_nodes:
                        return self.conv(entry, operand, arg_nodes, at, store, method=True)
            if oname is not None:
                x = self.ident(operand, oname, ohit)
            elif store is not None and ot is not None and self.cat.result_type(ot + "." + mname) == ot:
                # a builder chain (`resty.New().SetTimeout(d).SetRetryCount(2)`): the object the
                # inner calls configure is the one stored
                x = self.ex(operand, store)
            else:
                x = self.ex(operand)
            args = [self.ex(a, store) for a in arg_nodes]
            callee = {"k": "method", "x": x, "name": mname}
            if mname in self.script_kb.methods:
                self.script_sites(operand, mname, arg_nodes, args, store)
            elif mname in self.sql_kb.methods:
                self.sql_lease_sites(arg_nodes, args, store)
            if specs:
                self.call_sites(specs, node, arg_nodes, args, store)
            ext_type = ot is not None and ot not in self.struct_fields and not self.is_module(ot.rsplit(".", 1)[0]) \
                and "." in ot
            if ext_type and not specs and not self.takes_context(arg_nodes) and mname not in self.cat.kept_methods:
                return {"k": "call", "fn": callee, "args": args, "at": at}
            # (a library call given a context is kept: `s.db.ExecContext(ctx, …)` through sqlx
            # is where a helper hands its ctx on, and its SQL may record a final state)
            return self.call_fact(callee, node, args, flag, at)
        if ft == "func_literal":
            callee = self.func_literal(fnode)
            args = [self.ex(a, store) for a in arg_nodes]
            return self.call_fact(callee, node, args, flag, at)
        if ft in ("parenthesized_expression",) and fnode.named_children \
                and fnode.named_children[0].type in ("qualified_type", "pointer_type", "type_identifier"):
            return self.ex(arg_nodes[0], store) if arg_nodes else self.unknown(node)
        self.sx(fnode)
        for a in arg_nodes:
            self.ex(a, store)
        return self.unknown(node)

    def takes_context(self, arg_nodes: list[Any]) -> bool:
        """Is the first argument a context: a `context.Context` local or parameter, a local
        of no known type named as Go names contexts (`ctx := r.Context()`, `wctx`), or a
        request's own `r.Context()` / `stream.Context()`?"""
        if not arg_nodes:
            return False
        first = arg_nodes[0]
        if first.type == "identifier":
            name = self.text(first)
            hit = self.lookup(name)
            if hit is None:
                return False
            return hit[1] == "context.Context" or hit[1] is None and name.lower().endswith("ctx")
        if first.type == "call_expression":
            fn = first.child_by_field_name("function")
            args = first.child_by_field_name("arguments")
            return fn is not None and fn.type == "selector_expression" and args is not None \
                and not args.named_children and self.text(fn.child_by_field_name("field")) == "Context"
        return False

    def called(self, sym: str) -> None:
        p = self.param_of.get(sym)
        srcs = {(id(p[0]), p[1])} if p is not None else set()
        srcs |= self.derived.get(sym, set())
        for fid, idx in srcs:
            fn = self.fn_by_id.get(fid)
            if fn is not None and idx not in fn.fact.called_params:
                fn.fact.called_params.append(idx)

    def pkg_call(self, ip: str, name: str, node: Any, arg_nodes: list[Any], store: Expr | None,
                 flag: str | None, at: list[int]) -> Expr:
        q = ip + "." + name
        cat = self.cat
        env = cat.env_read(q)
        if env is not None:
            i = int(env.get("name_arg", 0))
            args = [self.ex(a) for a in arg_nodes]
            name_e = args[i] if i < len(args) else {"k": "unknown", "text": "", "at": at}
            if name_e.get("k") == "str":
                self.env_names[name_e["v"]] = None
            elif name_e.get("k") == "ref" and name_e["sym"].startswith(self.pfx):
                v = self.str_consts.get(name_e["sym"][len(self.pfx):])
                if v is not None:
                    self.env_names[v] = None
            self.call_fact({"k": "ext", "name": q}, node, args, flag, at)
            return {"k": "env", "name": name_e, "default": None, "at": at}
        conv = cat.conversion(q)
        if conv is not None:
            return self.conv(conv, None, arg_nodes, at, store)
        if q in cat.flag_vars and len(arg_nodes) >= 3 and arg_nodes[0].type == "unary_expression":
            # `flag.DurationVar(&ec.RetryPeriod, "retry-period", 12*time.Second, "…")`
            held = arg_nodes[0].named_children[-1] if arg_nodes[0].named_children else None
            sym = self.target(held, False, arg_nodes[2])[0] if held is not None else None
            default = self.ex(arg_nodes[2], store)
            if sym is not None:
                self.bind(sym, default, arg_nodes[2], arg_nodes[2])
        if name == "SetConfigName" and arg_nodes and arg_nodes[0].type == "interpreted_string_literal":
            stem = unquote(self.text(arg_nodes[0]))  # viper: the file it loads, any extension
            if stem and "/" not in stem and len(stem) < 100:
                for ext in ("yaml", "yml", "json", "toml"):
                    self.cfg_files[f"{stem}.{ext}"] = None
        if self.is_module(ip):
            args = [self.ex(a, store) for a in arg_nodes]
            return self.call_fact({"k": "fnref", "sym": "sym:go:" + q}, node, args, flag, at)
        args = [self.ex(a, store) for a in arg_nodes]
        callee = {"k": "ext", "name": q}
        specs = cat.call_sites(q)
        if specs:
            self.call_sites(specs, node, arg_nodes, args, store)
            return self.call_fact(callee, node, args, flag, at)
        return {"k": "call", "fn": callee, "args": args, "at": at}

    def conv(self, entry: dict[str, Any], operand: Any, arg_nodes: list[Any], at: list[int],
             store: Expr | None, method: bool = False) -> Expr:
        if method:
            x = self.ex(operand, store)
            for a in arg_nodes:
                self.sx(a)
        else:
            args = [self.ex(a, store) for a in arg_nodes]
            i = int(entry.get("arg", 0) or 0)
            x = args[i] if i < len(args) else {"k": "unknown", "text": "", "at": at}
        return {"k": "conv", "t": entry.get("to"), "x": x, "at": at}

    def call_sites(self, specs: list[Any], node: Any, arg_nodes: list[Any], args: list[Expr],
                   store: Expr | None) -> None:
        for spec in specs:
            i = spec.arg
            if i is not None and i < len(args):
                self.site(spec, arg_nodes[i], args[i], store, None)
            else:
                self.site(spec, node, None, store, None)

    def call_fact(self, callee: Expr, node: Any, args: list[Expr], flag: str | None, at: list[int]) -> Expr:
        self.facts.calls.append(CallFact(
            callee, self.pos.span(node), self.fn.sym if self.fn is not None else None,
            args, {}, False, flag == "in_go", flag == "in_defer"))
        return {"k": "call", "fn": callee, "args": args, "at": at}


def _keyed(el: Any) -> tuple[Any, Any] | None:
    """(key, value) nodes of a `key: value` element, unwrapped from their literal_element."""
    key, val = el.child_by_field_name("key"), el.child_by_field_name("value")
    if key is None or val is None:
        return None
    kn = key.named_children[0] if key.type == "literal_element" and key.named_children else key
    vn = val.named_children[0] if val.type == "literal_element" and val.named_children else val
    return kn, vn
