"""Declarations and in-file types of the Go extractor: the pre-pass over package-level
declarations (types, struct fields, function results, package vars), type names, and the
static type of an expression when the file itself says it. A mixin of `_GoFile`."""

from __future__ import annotations

from typing import Any

from deadline_audit.extract.go_text import parse_struct_tag, selector_parts, unquote
from deadline_audit.facts import WRAPPED_SCALARS, Binding

_BUILTIN_TYPES = frozenset(
    "bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune "
    "string uint uint8 uint16 uint32 uint64 uintptr any comparable".split()
)
_MISSING = object()


class GoTypes:
    """Type knowledge; expects the attributes and helpers `_GoFile` defines."""

    def prepass(self, node: Any) -> None:
        t = node.type
        if t == "type_declaration":
            for spec in node.named_children:
                name = spec.child_by_field_name("name")
                if name is None:
                    continue
                tname = self.text(name)
                self.types.add(tname)
                ty = spec.child_by_field_name("type")
                if ty is not None and ty.type == "struct_type":
                    self.collect_fields(self.ip + "." + tname, ty)
        elif t == "function_declaration":
            name = node.child_by_field_name("name")
            if name is not None:
                self.func_results[self.text(name)] = self.result_type(node)
        elif t == "method_declaration":
            recv = self.receiver(node)
            name = node.child_by_field_name("name")
            if recv and name is not None:
                self.method_results.setdefault(recv[1] or "", {})[self.text(name)] = self.result_type(node)
        elif t in ("var_declaration", "const_declaration"):
            for spec in self.specs(node):
                ty = spec.child_by_field_name("type")
                qt = self.qtype(ty) if ty is not None else None
                values = spec.child_by_field_name("value")
                vals = values.named_children if values is not None else []
                for i, name in enumerate(spec.children_by_field_name("name")):
                    vt = qt
                    if vt is None and i < len(vals):
                        vt = self.static_type(vals[i])
                    self.pkg_vars[self.text(name)] = vt
                    if i < len(vals) and vals[i].type == "call_expression" and b"NewScript" in self.src:
                        self.note_script(self.text(name), vals[i])
                    if t == "const_declaration" and i < len(vals) and vals[i].type in (
                            "interpreted_string_literal", "raw_string_literal"):
                        self.str_consts[self.text(name)] = unquote(self.text(vals[i]))

    def collect_fields(self, qname: str, struct: Any) -> None:
        fields: dict[str, str | None] = {}
        self.struct_fields[qname] = fields
        body = next((c for c in struct.named_children if c.type == "field_declaration_list"), None)
        if body is None:
            return
        for fd in body.named_children:
            if fd.type != "field_declaration":
                continue
            ty = fd.child_by_field_name("type")
            names = fd.children_by_field_name("name")
            if ty is not None and ty.type == "struct_type":
                for n in names:
                    sub = qname + "." + self.text(n)
                    self.collect_fields(sub, ty)
                    fields[self.text(n)] = sub
                continue
            qt = self.qtype(ty) if ty is not None else None
            if names:
                for n in names:
                    fields[self.text(n)] = qt
            elif qt:
                fields[qt.rsplit(".", 1)[-1]] = qt
                if qt in WRAPPED_SCALARS:  # `type Duration struct{ time.Duration }`: a decoding wrapper
                    self.wrappers.add(qname)

    @staticmethod
    def specs(node: Any) -> list[Any]:
        out = []
        for c in node.named_children:
            if c.type in ("var_spec", "const_spec"):
                out.append(c)
            elif c.type == "var_spec_list":
                out.extend(x for x in c.named_children if x.type == "var_spec")
        return out

    def result_type(self, node: Any) -> str | None:
        # the pre-pass and the walk both ask for each declaration's: computed once
        start = node.start_byte
        hit = self.signature_memo.get(("result", start), _MISSING)
        if hit is _MISSING:
            hit = self.signature_memo[("result", start)] = self._result_type(node)
        return hit

    def _result_type(self, node: Any) -> str | None:
        res = node.child_by_field_name("result")
        if res is None:
            return None
        if res.type == "parameter_list":
            decl = next((c for c in res.named_children if c.type == "parameter_declaration"), None)
            res = decl.child_by_field_name("type") if decl is not None else None
        qt = self.qtype(res) if res is not None else None
        return None if qt in _BUILTIN_TYPES else qt

    def receiver(self, node: Any) -> tuple[str | None, str | None] | None:
        start = node.start_byte
        hit = self.signature_memo.get(("receiver", start), _MISSING)
        if hit is _MISSING:
            hit = self.signature_memo[("receiver", start)] = self._receiver(node)
        return hit

    def _receiver(self, node: Any) -> tuple[str | None, str | None] | None:
        recv = node.child_by_field_name("receiver")
        if recv is None:
            return None
        decl = next((c for c in recv.named_children if c.type == "parameter_declaration"), None)
        if decl is None:
            return None
        name = decl.child_by_field_name("name")
        ty = decl.child_by_field_name("type")
        return (self.text(name) if name is not None else None, self.qtype(ty) if ty is not None else None)

    def static_type(self, node: Any) -> str | None:
        """The type of an expression when this file says it (no side effects)."""
        t = node.type
        if t == "identifier":
            name = self.text(node)
            hit = self.lookup(name)
            if hit is not None:
                return hit[1]
            return self.pkg_vars.get(name)
        if t == "composite_literal":
            ty = node.child_by_field_name("type")
            return self.qtype(ty) if ty is not None and ty.type in (
                "type_identifier", "qualified_type", "generic_type") else None
        if t == "unary_expression":
            if self.clean:
                ch = node.children
                return self.static_type(ch[-1]) if ch[0].type in ("&", "*") else None
            op = node.child_by_field_name("operator")
            if op is not None and op.type in ("&", "*"):
                return self.static_type(node.child_by_field_name("operand"))
            return None
        if t == "parenthesized_expression":
            inner = node.named_children
            return self.static_type(inner[0]) if inner else None
        if t == "selector_expression":
            operand, fname = selector_parts(node, self.clean, self.text)
            ot = self.operand_type(operand)
            if ot is None:
                return None
            fields = self.struct_fields.get(ot)
            return fields.get(fname) if fields else None
        if t == "call_expression":
            fn = node.child(0) if self.clean else node.child_by_field_name("function")
            if fn.type == "identifier":
                name = self.text(fn)
                if self.lookup(name) is None:
                    if name in self.types:
                        return self.ip + "." + name
                    return self.func_results.get(name)
                return None
            if fn.type == "selector_expression":
                if self.clean:
                    ch = fn.named_children
                    operand = ch[0]
                    fname = self.text(ch[-1])
                else:
                    operand = fn.child_by_field_name("operand")
                    fname = self.text(fn.child_by_field_name("field"))
                ot = self.operand_type(operand)
                if ot is not None:
                    return self.method_results.get(ot, {}).get(fname)
        return None

    def operand_type(self, operand: Any) -> str | None:
        """static_type of the operand of `operand.f`; None for a package name."""
        if operand.type == "identifier":  # one text read and one scope lookup
            name = self.text(operand)
            hit = self.lookup(name)
            if hit is not None:
                return hit[1]
            return None if name in self.imports else self.pkg_vars.get(name)
        return self.static_type(operand)

    def guess_type(self, node: Any) -> str | None:
        """static_type, plus the Go convention that `pkg.NewT(...)` returns a *pkg.T (used only
        to match catalog methods such as time.Timer.Reset, never reported as a decl type)."""
        st = self.static_type(node)
        if st is not None:
            return st
        return self.guess_new(node)

    def guess_new(self, node: Any) -> str | None:
        """The `pkg.NewT(...)` part of guess_type, for a node whose static_type is None; and
        the catalog's result types of external functions and methods whose name does not
        say what they return (`clientv3.New` -> Client, `locker.Obtain` -> Lock)."""
        if node.type != "call_expression":
            return None
        fn = node.child_by_field_name("function")
        if fn.type == "selector_expression":
            operand = fn.child_by_field_name("operand")
            fname = self.text(fn.child_by_field_name("field"))
            if operand.type == "identifier" and self.lookup(self.text(operand)) is None:
                ip = self.alias(self.text(operand))
                if ip is not None:
                    listed = self.cat.result_type(ip + "." + fname)
                    if listed is not None:
                        return listed
                    if fname.startswith("New") and len(fname) > 3 and fname[3].isupper():
                        return ip + "." + fname[3:]
                    return None
            owner = self.operand_type(operand)
            if owner is None and operand.type == "call_expression":  # a chain: `resty.New().SetTimeout(d)`
                owner = self.guess_new(operand)
            if owner is not None and "." in owner:
                return self.cat.result_type(owner + "." + fname)
        return None

    def do_type_decl(self, node: Any) -> None:
        for spec in node.named_children:
            name = spec.child_by_field_name("name")
            if name is None:
                continue
            tname = self.text(name)
            ty = spec.child_by_field_name("type")
            # `type Duration time.Duration`: a defined scalar keeps its underlying type
            # (a config decoder fills it as that scalar)
            underlying = self.qtype(ty) if ty is not None and ty.type in ("qualified_type", "type_identifier") else None
            self.decl(self.pfx + tname, "type", name, type=underlying if underlying in WRAPPED_SCALARS else None)
            if ty is not None and ty.type == "struct_type":
                self.field_decls(self.ip + "." + tname, ty)
            elif ty is not None and ty.type == "interface_type":
                # an interface's method set: the call graph dispatches its calls (RTA)
                for elem in ty.named_children:
                    if elem.type == "method_elem" and elem.named_children:
                        mname = elem.named_children[0]
                        self.decl(self.pfx + tname + "." + self.text(mname), "imethod", mname)
                    elif elem.type == "type_elem" and len(elem.named_children) == 1:
                        # an embedded interface (`jobLeaser`, `io.Closer`): its methods are ours
                        qt = self.qtype(elem.named_children[0])
                        if qt:
                            self.decl(self.pfx + tname + "." + qt.rsplit(".", 1)[-1], "iembed", elem,
                                      type=qt, embedded=True)

    def field_decls(self, qname: str, struct: Any) -> None:
        body = next((c for c in struct.named_children if c.type == "field_declaration_list"), None)
        if body is None:
            return
        fields = self.struct_fields.get(qname, {})
        for fd in body.named_children:
            if fd.type != "field_declaration":
                continue
            tag = fd.child_by_field_name("tag")
            tags = parse_struct_tag(unquote(self.text(tag))) if tag is not None else {}
            names = fd.children_by_field_name("name")
            ty = fd.child_by_field_name("type")
            if names:
                for n in names:
                    fname = self.text(n)
                    self.decl("sym:go:" + qname + "." + fname, "field", n, type=fields.get(fname), tags=dict(tags))
                    env_tag_binding(self, "sym:go:" + qname + "." + fname, fields.get(fname), tags, n)
                    if ty is not None and ty.type == "struct_type":
                        self.field_decls(qname + "." + fname, ty)
            elif ty is not None:
                qt = self.qtype(ty)
                if qt:
                    self.decl("sym:go:" + qname + "." + qt.rsplit(".", 1)[-1], "field", ty, type=qt,
                              tags=tags, embedded=True)


_NUMERIC = {"int", "int32", "int64", "uint", "uint32", "uint64", "float32", "float64"}



def env_tag_binding(walker: Any, sym: str, type_name: str | None, tags: dict[str, str], node: Any) -> None:
    """A field tagged `env:"X"` / `envconfig:"X"` is filled from the env var X (SPEC §3),
    parsed by the field's type, with the tag's default when X is unset."""
    if type_name != "time.Duration" and type_name not in _NUMERIC:
        return
    catalog = getattr(walker, "catalog_full", None)
    env_tags = catalog.file("knobs").get("knobs", {}).get("env_tags", ()) if catalog is not None else ()
    for name_tag, default_tag in env_tags:  # catalog knobs.toml: name tag, default tag
        name = tags.get(name_tag, "").split(",")[0]
        if not name or not name.replace("_", "").isalnum():
            continue
        at = walker.at(node)
        default = {"k": "str", "v": tags[default_tag], "at": at} if default_tag in tags else None
        read = {"k": "env", "name": {"k": "str", "v": name}, "default": default, "at": at}
        conv = "parse_duration" if type_name == "time.Duration" else "number"
        walker.facts.bindings.append(Binding(sym, {"k": "conv", "t": conv, "x": read}, walker.pos.span(node)))
        walker.env_names[name] = None
        return
