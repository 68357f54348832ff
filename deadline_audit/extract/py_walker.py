"""Statements, functions and classes: the single source-order pass of the Python extractor."""

from __future__ import annotations

from typing import Any

import libcst as cst

from deadline_audit.extract.py_exprs import SHARED_STATE, HANDLERS, ExprMixin, element_bindings, name_chain, string_value, unknown
from deadline_audit.extract.py_index import TIMER_ROLES, PyIndex
from deadline_audit.extract.py_scope import ClassInfo, Entry, FuncState, Scope, lookup
from deadline_audit.facts import Binding, Expr, FileFacts, FunctionFact, Span, SymbolDecl

_AUG = {cst.AddAssign: "add", cst.SubtractAssign: "sub", cst.MultiplyAssign: "mul",
        cst.DivideAssign: "div", cst.FloorDivideAssign: "div"}


class Extractor(ExprMixin):
    _expr_handlers = HANDLERS
    timer_roles = TIMER_ROLES

    def __init__(self, path: str, module: str, is_package: bool, idx: PyIndex, positions: Any,
                 facts: FileFacts) -> None:
        self.path = path
        self.module = module
        self.module_sym = "sym:py:" + module
        self.package = module if is_package else module.rpartition(".")[0]
        self.idx = idx
        self.positions = positions
        self.use_ast = hasattr(positions, "take")
        self.facts = facts
        self.scope = Scope("module", self.module_sym, None)
        self.func: FuncState | None = None
        self.store: Expr | None = None  # the assignment target of the statement being converted
        self.comp_names: list[set[str]] = []
        self.comp_elements: list[dict[str, list[Expr]]] = []
        self.classes: dict[str, ClassInfo] = {}
        self.pending_names: list[tuple[Expr, Scope, str]] = []
        self.pending_calls: list[tuple[Expr, Any, dict[str, Expr], Span, str | None]] = []
        self.timer_values: list[Expr] = []
        self.timer_owner: list[FuncState] = []
        self.called: list[str] = []
        self.param_owner: dict[str, tuple[FunctionFact, int]] = {}
        self.local_values: dict[str, list[Expr]] = {}
        self.declared: set[str] = set()
        self.env_seen: set[str] = set()
        self.literals_seen: set[str] = set()

    # -- positions ----------------------------------------------------------------------
    def pos(self, kind: str, node: cst.CSTNode, name: str | None = None) -> Span:
        if self.use_ast:
            return self.positions.take(kind, name)
        return self.positions.take_node(node)

    # -- driver -------------------------------------------------------------------------
    def run(self, module: cst.Module) -> None:
        for statement in module.body:
            self.stmt(statement)
        self.finish()

    def stmt(self, node: cst.CSTNode) -> None:
        handler = _STMT.get(type(node))
        if handler is not None:
            handler(self, node)
        else:
            self.walk_generic(node)

    def block(self, body: cst.BaseSuite) -> None:
        for statement in body.body:
            self.stmt(statement)

    def _simple_line(self, node: cst.SimpleStatementLine) -> None:
        for small in node.body:
            self.stmt(small)

    def _expr_stmt(self, node: cst.Expr) -> None:
        self.expr(node.value)

    # -- imports ------------------------------------------------------------------------
    def _import(self, node: cst.Import) -> None:
        for alias in node.names:
            chain = name_chain(alias.name) or []
            dotted = ".".join(chain)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.scope.imports[alias.asname.name.value] = Entry("import", dotted, module_import=True)
            elif chain:
                self.scope.imports[chain[0]] = Entry("import", chain[0], module_import=True)

    def _import_from(self, node: cst.ImportFrom) -> None:
        base = ".".join(name_chain(node.module) or []) if node.module is not None else ""
        if node.relative:
            package = self.package.split(".") if self.package else []
            up = len(node.relative) - 1
            package = package[: len(package) - up] if up else package
            base = ".".join([*package, base] if base else package)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = alias.name.value if isinstance(alias.name, cst.Name) else ".".join(name_chain(alias.name) or [])
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
            self.scope.imports[local] = Entry("import", f"{base}.{name}" if base else name)

    def _global(self, node: cst.Global) -> None:
        self.scope.globals.update(item.name.value for item in node.names)

    # -- assignments ----------------------------------------------------------------------
    def _assign(self, node: cst.Assign) -> None:
        span = self.pos("assign", node)
        slots = [self.target(t.target) for t in node.targets]
        saved = self.store
        self.store = _store_of(slots[0])
        value = self.expr(node.value)
        self.store = saved
        if self.scope.cls is not None:
            self.class_assign(node, value)
        for slot in slots:
            self.bind_slot(slot, value, span, node.value)

    def _ann_assign(self, node: cst.AnnAssign) -> None:
        span = self.pos("annassign", node)
        slot = self.target(node.target)
        self.expr(node.annotation.annotation)
        type_name = self.type_name(node.annotation.annotation)
        value = None
        if node.value is not None:
            saved = self.store
            self.store = _store_of(slot)
            value = self.expr(node.value)
            self.store = saved
        cls = self.scope.cls
        if cls is not None and isinstance(node.target, cst.Name):
            name = node.target.value
            cls.annotated.add(name)
            if type_name:
                cls.field_types[name] = type_name
            value = _field_default(node.value, value, self.idx.field_calls)  # `x: float = attrs.field(factory=…)`
            if not cls.is_settings:
                cls.model_fields.append((name, value, span))
            if cls.is_settings and name != "model_config" and not (type_name or "").endswith("ClassVar"):
                default, aliases = _settings_default(node.value, value)
                cls.settings_fields.append((name, default, aliases, span))
                self.declare(cls.sym + "." + name, "field", span, type_name, None)
                self._note_item_type(cls.sym + "." + name, node.annotation.annotation)
                return
        self.bind_slot(slot, value, span, node.value, type_name)
        if cls is not None and isinstance(node.target, cst.Name):
            self._note_item_type(cls.sym + "." + node.target.value, node.annotation.annotation)

    def _note_item_type(self, sym: str, annotation: cst.BaseExpression) -> None:
        """`carriers: dict[str, CarrierProfile]`, `stages: list[Stage]`: the type of the
        items (catalog python.toml [containers]), on the field's declaration."""
        if not isinstance(annotation, cst.Subscript) or not annotation.slice:
            return
        outer = name_chain(annotation.value)
        containers = self.idx.catalog.file("python").get("containers", {})
        if not outer or not (outer[-1] in containers.get("mappings", ()) or outer[-1] in containers.get("sequences", ())):
            return
        part = annotation.slice[-1 if outer[-1] in containers.get("mappings", ()) else 0].slice
        item = self.type_name(part.value) if isinstance(part, cst.Index) else None
        if item is None:
            return
        for decl in reversed(self.facts.decls):
            if decl.sym == sym:
                decl.item_type = item
                return

    def _aug_assign(self, node: cst.AugAssign) -> None:
        span = self.pos("augassign", node)
        slot = self.target(node.target)
        current = self.expr(node.target) if slot[0] == "sym" else None
        value = self.expr(node.value)
        op = _AUG.get(type(node.operator))
        if slot[0] == "sym" and op is not None and current is not None:
            self.bind_slot(slot, {"k": "op", "op": op, "args": [current, value]}, span, None)

    def target(self, node: cst.BaseExpression) -> tuple[str, Any]:
        """Walk an assignment target (source order) and say what it names:
        ("sym", (sym, decl kind, entry scope, name)) | ("tuple", [slots]) | ("none", None)."""
        if isinstance(node, cst.Name):
            return ("sym", self.name_slot(node.value))
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            entry = lookup(self.scope, node.value.value, self.comp_names)
            attr = node.attr.value
            if entry is not None and entry.type and entry.type.startswith("py:") and entry.kind in (
                    "self", "param", "local", "var"):
                return ("sym", ("sym:" + entry.type + "." + attr, "field" if entry.kind == "self" else None, None, None))
            if entry is not None and entry.kind == "import" and not self.idx.is_external(entry.sym):
                return ("sym", (f"sym:py:{entry.sym}.{attr}", None, None, None))
            self.expr(node.value)
            return ("none", None)
        nested = name_chain(node) if isinstance(node, cst.Attribute) else None
        shared = self.shared_state(nested) if nested is not None else None
        if shared is not None:  # `app.state.settings = settings` in a lifespan handler
            return ("sym", (shared, None, None, None))
        if nested is not None and len(nested) > 2:
            # `self.scope.deadline = …`: an attribute of a field of the object, bound under
            # its path (`T.scope.deadline`) so that what a method resets is visible; not
            # declared, nothing reads it as a field
            entry = lookup(self.scope, nested[0], self.comp_names)
            self.expr(node)
            if entry is not None and entry.kind == "self" and entry.type and entry.type.startswith("py:"):
                return ("sym", ("sym:" + entry.type + "." + ".".join(nested[1:]), None, None, None))
            return ("none", None)
        if isinstance(node, (cst.Tuple, cst.List)):
            return ("tuple", [self.target(e.value) for e in node.elements])
        if isinstance(node, cst.StarredElement):
            self.target(node.value)
            return ("none", None)
        self.expr(node)
        return ("none", None)

    def name_slot(self, name: str) -> tuple[str, str | None, Scope | None, str]:
        scope = self.scope
        if name in scope.globals:
            scope = scope.module()
        existing = scope.names.get(name)
        if existing is not None and existing.kind in ("param", "self"):
            return (existing.sym, None, scope, name)
        if scope.kind == "module":
            kind = "const" if name.isupper() else "var"
        elif scope.kind == "class":
            kind = "field"
        else:
            kind = "local"
        return (f"{scope.sym}.{name}", kind, scope, name)

    def bind_slot(self, slot: tuple[str, Any], value: Expr | None, span: Span, value_node: Any,
                  type_name: str | None = None) -> None:
        tag, data = slot
        if tag == "tuple":
            elements = value_node.elements if isinstance(value_node, (cst.Tuple, cst.List)) else None
            for i, sub in enumerate(data):
                if elements is not None and len(elements) == len(data) and isinstance(elements[i], cst.Element):
                    self.bind_slot(sub, None, span, None)  # values were converted as a whole
                else:
                    self.bind_slot(sub, None, span, None)
            return
        if tag != "sym":
            return
        sym, kind, scope, name = data
        if type_name is None and value is not None and value.get("sym") == SHARED_STATE:
            type_name = SHARED_STATE[4:]  # `state = request.app.state`: its attributes are the namespace's
        type_of = value if value is not None and value.get("k") == "call" else None
        if type_name is None and type_of is not None:
            type_name = self.type_of_call(type_of)
        if kind is not None:
            self.declare(sym, kind, span, type_name, type_of)
        if scope is not None and name is not None:
            previous = scope.names.get(name)
            if previous is None or previous.kind not in ("param", "self"):
                scope.names[name] = Entry(kind or "var", sym, type_name or (previous.type if previous else None))
        if value is not None:
            function = self.func.fact.sym if self.func is not None else None
            self.facts.bindings.append(Binding(sym, value, span, function))
            if kind == "local":
                self.local_values.setdefault(sym, []).append(value)

    def bind_name(self, name: str, value: Expr, span: Span) -> None:
        self.bind_slot(("sym", self.name_slot(name)), value, span, None)

    def declare(self, sym: str, kind: str, span: Span, type_name: str | None, type_of: Expr | None,
                index: int | None = None) -> None:
        if sym in self.declared:
            return
        self.declared.add(sym)
        self.facts.decls.append(SymbolDecl(sym=sym, kind=kind, span=span, type=type_name, type_of=type_of, index=index))

    def type_of_call(self, value: Expr) -> str | None:
        fn = value.get("fn") or {}
        if fn.get("k") == "fnref" and fn["sym"].rsplit(".", 1)[-1][:1].isupper():
            return fn["sym"][4:]  # "py:<qualified>"
        if fn.get("k") == "ext" and fn["name"].rsplit(".", 1)[-1][:1].isupper():
            return fn["name"]
        return None

    def type_name(self, node: cst.BaseExpression) -> str | None:
        """A named type from an annotation: project classes as `py:<q>`, others qualified."""
        if isinstance(node, cst.SimpleString):
            text = string_value(node)
            if isinstance(text, str) and text.replace(".", "").replace("_", "").isalnum():
                return self.type_of_chain(text.split("."))
            return None
        if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            outer = name_chain(node.value)
            if outer and outer[-1] in ("Optional", "Annotated", "ClassVar", "Final"):
                inner = self.type_name(node.slice[0].slice.value)
                return "ClassVar" if outer[-1] == "ClassVar" else inner
            return None
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
            sides = [s for s in (node.left, node.right) if not (isinstance(s, cst.Name) and s.value == "None")]
            return self.type_name(sides[0]) if len(sides) == 1 else None
        chain = name_chain(node)
        return self.type_of_chain(chain) if chain else None

    def type_of_chain(self, chain: list[str]) -> str | None:
        entry = lookup(self.scope, chain[0])
        if entry is None:
            return None
        if entry.kind == "class":
            return "py:" + entry.sym[7:] + "".join("." + p for p in chain[1:])
        if entry.kind == "import":
            qualified = ".".join([entry.sym, *chain[1:]])
            return qualified if self.idx.is_external(qualified) else "py:" + qualified
        if entry.kind == "builtin":
            return chain[0]
        return None

    # -- classes ------------------------------------------------------------------------
    def class_assign(self, node: cst.Assign, value: Expr) -> None:
        """pydantic-settings configuration: `model_config = SettingsConfigDict(env_prefix=…)`,
        `class Config: env_prefix = …`."""
        cls = self.scope.cls
        assert cls is not None
        for t in node.targets:
            if not isinstance(t.target, cst.Name):
                continue
            name = t.target.value
            if name == "model_config":
                prefix = _config_string(node.value, "env_prefix")
                if prefix is not None:
                    cls.env_prefix = prefix
                cls.env_nested_delimiter = _config_string(node.value, "env_nested_delimiter")
            elif name == "env_prefix" and value.get("k") == "str" and self.scope.parent is not None \
                    and self.scope.parent.cls is not None:
                self.scope.parent.cls.env_prefix = value["v"]

    def _classdef(self, node: cst.ClassDef) -> None:
        for decorator in node.decorators:
            self.expr(decorator.decorator)
        span = self.pos("class", node, node.name.value)
        bases: list[str] = []
        for arg in node.bases:
            chain = name_chain(arg.value)
            if chain:
                entry = lookup(self.scope, chain[0])
                if entry is not None and entry.kind == "import":
                    bases.append(".".join([entry.sym, *chain[1:]]))
                elif entry is not None and entry.kind == "class":
                    bases.append(entry.sym)
                elif (entry is None or entry.kind == "builtin") and len(chain) == 1:
                    bases.append("builtins." + chain[0])
            self.expr(arg.value)
        for arg in node.keywords:
            self.pos("kw", arg, arg.keyword.value if arg.keyword else None)
            self.expr(arg.value)
        name = node.name.value
        sym = f"{self.scope.sym}.{name}"
        cls = ClassInfo(sym=sym, qualified=sym[7:])
        for base in bases:
            parent = self.classes.get(base)
            if base in self.idx.settings_bases or (parent is not None and parent.is_settings):
                cls.is_settings = True
                if parent is not None and cls.env_prefix is None:
                    cls.env_prefix = parent.env_prefix
        self.classes[sym] = cls
        # methods called before their definition (`self._later()`) resolve too
        cls.methods.update(stmt.name.value for stmt in getattr(node.body, "body", ())
                           if isinstance(stmt, cst.FunctionDef))
        self.declare(sym, "class", span, cls.type_name, None)
        if bases and self.facts.decls[-1].sym == sym:
            self.facts.decls[-1].bases = bases
        self.scope.names[name] = Entry("class", sym, cls.type_name)
        saved = self.scope
        self.scope = Scope("class", sym, saved, cls=cls, func=self.func)
        self.block(node.body)
        self.scope = saved
        if cls.is_settings:
            self.settings_bindings(cls)

    def settings_bindings(self, cls: ClassInfo) -> None:
        prefix = cls.env_prefix or ""
        function = self.func.fact.sym if self.func is not None else None
        for name, default, aliases, span in cls.settings_fields:
            names = aliases or [prefix + name]
            reads = [self.env_expr({"k": "str", "v": n.upper()}, default, span) for n in names]
            self.facts.bindings.append(Binding(f"{cls.sym}.{name}", reads[0], span, function))
            nested = self.classes.get("sym:" + cls.field_types.get(name, ""))
            if cls.env_nested_delimiter and nested is not None and not aliases:
                # `llm: LLMSettings` with env_nested_delimiter="__": PREFIX_LLM__TIMEOUT sets llm.timeout
                # (the env read, with the model's default, replaces the plain default binding)
                replaced = {f"{nested.sym}.{f}" for f, _, _ in nested.model_fields}
                self.facts.bindings = [b for b in self.facts.bindings
                                       if not (b.sym in replaced and b.function is None)]
                for field_name, field_default, field_span in nested.model_fields:
                    env_name = f"{prefix}{name}{cls.env_nested_delimiter}{field_name}".upper()
                    read = self.env_expr({"k": "str", "v": env_name}, field_default, field_span)
                    self.facts.bindings.append(Binding(f"{nested.sym}.{field_name}", read, field_span, function))

    # -- functions ----------------------------------------------------------------------
    def _funcdef(self, node: cst.FunctionDef) -> None:
        decorators = [self.expr(decorator.decorator) for decorator in node.decorators]
        self.function(node, lambda_=False)
        fact = self.facts.functions[-1]  # appended when its body is done
        for deco in decorators:
            # `@capped` naming a function of the program: what it wraps the function in
            # may bound it (DA201); a decorator that is a call is marked by its position
            if deco.get("k") in ("ref", "fnref") and deco.get("sym"):
                fact.markers.append({"m": "decorated_by", "sym": deco["sym"]})
        self._cli_defaults(decorators, f"{self.scope.sym}.{node.name.value}")

    def _cli_defaults(self, decorators: list[Expr], fsym: str) -> None:
        """`@click.option("--timeout", "timeout_s", default=14400)`: the default of the
        parameter the option fills (catalog python.toml [cli_options])."""
        funcs = self.idx.catalog.table("python", "cli_options").get("funcs", ())
        for deco in decorators:
            default = (deco.get("kw") or {}).get("default")
            if _called_name(deco) not in funcs or default is None:
                continue
            names = [a.get("v") for a in deco.get("args") or () if a.get("k") == "str" and a.get("v")]
            plain = [n for n in names if n.isidentifier()]
            flags = sorted((n.lstrip("-") for n in names if n.startswith("--")), key=len, reverse=True)
            pname = plain[0] if plain else flags[0].replace("-", "_") if flags else None
            psym = f"{fsym}.{pname}" if pname else None
            if psym is not None and any(d.sym == psym and d.kind == "param" for d in self.facts.decls):
                at = default.get("at") or deco.get("at") or [0, 0]
                self.facts.bindings.append(Binding(psym, default, Span(at[0], at[1], at[0], at[1]), fsym,
                                                   is_default=True))

    def _param_default(self, default: Expr) -> Expr | None:
        """`timeout: float = typer.Option(600.0, "--timeout")`: the parameter's default is
        the marker's own default (catalog python.toml [param_defaults]); a required one
        (`...`) has none."""
        if _called_name(default) not in self.idx.catalog.table("python", "param_defaults").get("funcs", ()):
            return default
        value = (default.get("kw") or {}).get("default") or next(iter(default.get("args") or ()), None)
        if value is None or value.get("k") == "unknown" and value.get("text") in ("...", "Ellipsis"):
            return None
        return value

    def function(self, node: cst.FunctionDef | cst.Lambda, lambda_: bool) -> Expr:
        enclosing = self.func
        outer_scope = self.scope
        cls = outer_scope.cls if outer_scope.kind == "class" else None
        if lambda_:
            span = self.pos("lambda", node)
            base = enclosing.fact.sym if enclosing is not None else self.module_sym
            fsym = f"{base}.lambda@{span.line}:{span.column}"
            name = None
        else:
            name = node.name.value  # type: ignore[union-attr]
            span = self.pos("def", node, name)
            fsym = f"{outer_scope.sym}.{name}"
            kind = "method" if cls is not None else "func"
            self.declare(fsym, kind, span, None, None)
            outer_scope.names[name] = Entry("func", fsym)
            if cls is not None:
                cls.methods.add(name)
        is_method = cls is not None and not lambda_ and not any(
            (name_chain(d.decorator) or [""])[-1] == "staticmethod" for d in node.decorators)  # type: ignore[union-attr]
        is_classmethod = is_method and any(
            (name_chain(d.decorator) or [""])[-1] == "classmethod" for d in node.decorators)  # type: ignore[union-attr]
        fact = FunctionFact(sym=fsym, span=span, receiver_type=cls.type_name if cls and not lambda_ else None,
                            is_async=not lambda_ and node.asynchronous is not None,  # type: ignore[union-attr]
                            enclosing=enclosing.fact.sym if enclosing is not None else None)
        state = FuncState(fact=fact, param_syms={})
        if not lambda_:
            state.yields_results = any((name_chain(d.decorator) or [""])[-1] in self.idx.context_manager_decorators
                                       for d in node.decorators)  # type: ignore[union-attr]
        scope = Scope("function", fsym, outer_scope, func=state)
        if name:
            state.words.append(name)
        params = node.params
        ordered = [*params.posonly_params, *params.params]
        if isinstance(params.star_arg, cst.Param):
            ordered.append(params.star_arg)
        ordered.extend(params.kwonly_params)
        if params.star_kwarg is not None:
            ordered.append(params.star_kwarg)
        for i, param in enumerate(ordered):
            pname = param.name.value
            pspan = self.pos("arg", param, pname)
            type_name = None
            if param.annotation is not None:
                self.expr(param.annotation.annotation)
                type_name = self.type_name(param.annotation.annotation)
            default = self._param_default(self.expr(param.default)) if param.default is not None else None
            if i == 0 and is_method and param.star == "":
                # a classmethod's `cls` is the class itself: `cls(field=…)` builds one
                itself = cls.sym if is_classmethod else ""  # type: ignore[union-attr]
                scope.names[pname] = Entry("self", itself, cls.type_name)  # type: ignore[union-attr]
                continue
            psym = f"{fsym}.{pname}"
            index = len(fact.params)
            if param is params.star_kwarg:  # `**fields`: the keywords no other parameter takes
                fact.markers.append({"m": "kwargs", "param": index})
            if param.annotation is not None and _callable_returning_bool(param.annotation.annotation):
                # `still_running: Callable[[], Awaitable[bool]]`: a predicate, not work it runs
                fact.markers.append({"m": "predicate_param", "param": index})
            fact.params.append(psym)
            fact.param_names.append(pname)
            state.param_syms[psym] = index
            self.param_owner[psym] = (fact, index)
            state.words.append(pname)
            scope.names[pname] = Entry("param", psym, type_name)
            self.declare(psym, "param", pspan, type_name, None, index)
            if param.annotation is not None:  # `tools: Mapping[str, ToolRoute]`
                self._note_item_type(psym, param.annotation.annotation)
            if default is not None:
                self.facts.bindings.append(Binding(psym, default, pspan, fsym, is_default=True))
        if not lambda_ and node.returns is not None:  # type: ignore[union-attr]
            self.expr(node.returns.annotation)  # type: ignore[union-attr]
            fact.result_type = self.type_name(node.returns.annotation)  # type: ignore[union-attr]
        saved_store, saved_comp, saved_elements = self.store, self.comp_names, self.comp_elements
        self.func, self.scope, self.store, self.comp_names, self.comp_elements = state, scope, None, [], []
        try:
            if lambda_:
                fact.returns.append(self.expr(node.body))
            else:
                self.block(node.body)
        finally:
            self.func, self.scope, self.store, self.comp_names = enclosing, outer_scope, saved_store, saved_comp
            self.comp_elements = saved_elements
        blob = "\n".join(state.words).lower()
        fact.vocabulary = [w for w in self.idx.vocabulary if w in blob]
        if enclosing is not None:
            enclosing.words.append(blob)
        self.facts.functions.append(fact)
        return {"k": "fnref", "sym": fsym, "at": [span.line, span.column]}

    def _return(self, node: cst.Return) -> None:
        value = self.expr(node.value) if node.value is not None else {"k": "none"}
        if self.func is not None:
            self.func.fact.returns.append(value)

    def note_called(self, name: str) -> None:
        entry = lookup(self.scope, name, self.comp_names)
        if entry is not None and entry.kind == "param":
            self.called.append(entry.sym)

    # -- compound statements --------------------------------------------------------------
    def _if(self, node: cst.If) -> None:
        self.expr(node.test)
        self.block(node.body)
        orelse = node.orelse
        if isinstance(orelse, cst.If):
            self._if(orelse)
        elif orelse is not None:
            self.block(orelse.body)

    def _while(self, node: cst.While) -> None:
        self.expr(node.test)
        self.block(node.body)
        if node.orelse is not None:
            self.block(node.orelse.body)

    def _for(self, node: cst.For) -> None:
        span = self.pos("for", node)
        slot = self.target(node.target)
        iterable = self.expr(node.iter)
        self.bind_slot(slot, None, span, None)
        for name, element in element_bindings(node.target, iterable):
            self.bind_name(name, element, span)
        self.block(node.body)
        if node.orelse is not None:
            self.block(node.orelse.body)

    def _with(self, node: cst.With) -> None:
        span = self.pos("with", node)
        for item in node.items:
            slot = None
            saved = self.store
            if item.asname is not None and isinstance(item.asname.name, cst.Name):
                slot = ("sym", self.name_slot(item.asname.name.value))
                self.store = _store_of(slot)
            value = self.expr(item.item)
            self.store = saved
            if slot is not None:
                self.bind_slot(slot, value, span, item.item)
            elif item.asname is not None:
                self.target(item.asname.name)
        self.block(node.body)

    def _try(self, node: Any) -> None:
        self.block(node.body)
        for handler in node.handlers:
            if handler.type is not None:
                self.expr(handler.type)
            self.block(handler.body)
        if node.orelse is not None:
            self.block(node.orelse.body)
        if node.finalbody is not None:
            self.block(node.finalbody.body)

    def _match(self, node: cst.Match) -> None:
        self.expr(node.subject)
        for case in node.cases:  # patterns are skipped (py_positions skips them too)
            if case.guard is not None:
                self.expr(case.guard)
            self.block(case.body)

    def _nothing(self, node: cst.CSTNode) -> None:
        return None

    # -- end of file ----------------------------------------------------------------------
    def finish(self) -> None:
        for placeholder, scope, name in self.pending_names:
            entry = lookup(scope, name)
            if entry is not None:
                saved = self.scope
                self.scope = scope
                value = self.entry_value(entry, name) if entry.kind not in ("func", "class") or True else None
                self.scope = saved
                placeholder.clear()
                placeholder.update(value)
        for result, fact, kw, span, function in self.pending_calls:
            callee = result.get("fn") if result.get("k") == "call" else None
            if callee is not None and callee.get("k") == "ref" and callee["sym"].startswith("sym:py:"):
                # an imported project name used as a callee, defined after use: a function
                callee["k"] = "fnref"
            if callee is None or callee.get("k") not in ("fnref", "method", "ext"):
                if fact is not None and fact in self.facts.calls:
                    self.facts.calls.remove(fact)
                if result.get("k") == "call":
                    result.clear()
                    result.update(unknown("call"))
                continue
            if callee["k"] == "fnref":
                self.bind_constructor(callee["sym"], kw, span, function)
        for value in self.timer_values:
            for sym in self.param_refs(value, 0):
                owner = self.param_owner.get(sym)
                if owner is not None and owner[1] not in owner[0].timer_params:
                    owner[0].timer_params.append(owner[1])
        for sym in self.called:
            owner = self.param_owner.get(sym)
            if owner is not None and owner[1] not in owner[0].called_params:
                owner[0].called_params.append(owner[1])
        for fact in self.facts.functions:
            fact.timer_params.sort()
            fact.called_params.sort()
        self.facts.functions.sort(key=lambda f: (f.span.line, f.span.column))

    def param_refs(self, value: Any, depth: int) -> list[str]:
        found: list[str] = []
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                if item.get("k") == "ref":
                    sym = item["sym"]
                    if sym in self.param_owner:
                        found.append(sym)
                    elif depth < 3 and sym in self.local_values:
                        for bound in self.local_values[sym]:
                            found.extend(self.param_refs(bound, depth + 1))
                stack.extend(v for v in item.values() if isinstance(v, (dict, list)))
            elif isinstance(item, list):
                stack.extend(item)
        return found


def _store_of(slot: tuple[str, Any]) -> Expr | None:
    if slot[0] == "sym":
        return {"k": "ref", "sym": slot[1][0]}
    return None


def _field_default(node: Any, value: Expr | None, spec: dict[str, tuple[str, ...]]) -> Expr | None:
    """A class field declared through a field call (catalog python.toml `[fields]`): its
    default (`attrs.field(default=30)`), or a call of its factory (`factory=lambda: env(…)`,
    `default_factory=load_budget`), which the graph evaluates through the factory's returns."""
    if not isinstance(node, cst.Call) or value is None or value.get("k") != "call" or \
            (name_chain(node.func) or [""])[-1] not in spec.get("calls", ()):
        return value
    kw = value.get("kw") or {}
    default = next((kw[k] for k in spec.get("default_keywords", ()) if k in kw), None)
    if default is not None:
        return default
    factory = next((kw[k] for k in spec.get("factory_keywords", ()) if k in kw), None)
    if factory is not None and factory.get("k") in ("fnref", "ref", "ext"):
        return {"k": "call", "fn": factory, "args": [], "kw": {}, "at": value.get("at")}
    return value


def _settings_default(node: Any, value: Expr | None) -> tuple[Expr | None, list[str]]:
    """A settings field's default and env aliases: `x: float = 30`,
    `x: float = Field(30, alias="X")`, `Field(default=30, validation_alias=AliasChoices("A", "B"))`."""
    if isinstance(node, cst.Call) and value is not None and value.get("k") == "call":
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if any(k in keywords for k in ("alias", "validation_alias", "default", "default_factory")) or \
                (name_chain(node.func) or [""])[-1] == "Field":
            aliases: list[str] = []
            for key in ("validation_alias", "alias"):
                aliases.extend(_strings(keywords.get(key)))
            default = value["args"][0] if value["args"] else value["kw"].get("default")
            return default, aliases
    return value, []


def _strings(node: Any) -> list[str]:
    if node is None:
        return []
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        text = string_value(node)
        return [text] if isinstance(text, str) else []
    if isinstance(node, cst.Call):
        return [s for a in node.args for s in _strings(a.value)]
    return []


def _config_string(node: Any, key: str) -> str | None:
    """A string setting of `SettingsConfigDict(key=…)` / `{"key": …}`."""
    if isinstance(node, cst.Call):
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == key:
                found = _strings(arg.value)
                return found[0] if found else None
    if isinstance(node, cst.Dict):
        for element in node.elements:
            if isinstance(element, cst.DictElement) and _strings(element.key) == [key]:
                found = _strings(element.value)
                return found[0] if found else None
    return None


_STMT: dict[type, Any] = {
    cst.SimpleStatementLine: Extractor._simple_line,
    cst.Expr: Extractor._expr_stmt,
    cst.Assign: Extractor._assign,
    cst.AnnAssign: Extractor._ann_assign,
    cst.AugAssign: Extractor._aug_assign,
    cst.Import: Extractor._import,
    cst.ImportFrom: Extractor._import_from,
    cst.Global: Extractor._global,
    cst.Nonlocal: Extractor._nothing,
    cst.Pass: Extractor._nothing,
    cst.Break: Extractor._nothing,
    cst.Continue: Extractor._nothing,
    cst.Return: Extractor._return,
    cst.FunctionDef: Extractor._funcdef,
    cst.ClassDef: Extractor._classdef,
    cst.If: Extractor._if,
    cst.While: Extractor._while,
    cst.For: Extractor._for,
    cst.With: Extractor._with,
    cst.Try: Extractor._try,
    cst.TryStar: Extractor._try,
    cst.Match: Extractor._match,
}


def _callable_returning_bool(node: cst.BaseExpression) -> bool:
    """`Callable[..., bool]`, `Callable[[], Awaitable[bool]]` (any module prefix)."""
    if not isinstance(node, cst.Subscript) or not node.slice:
        return False
    head = node.value
    name = head.attr.value if isinstance(head, cst.Attribute) else head.value if isinstance(head, cst.Name) else ""
    if name != "Callable":
        return False
    result = node.slice[-1].slice
    if not isinstance(result, cst.Index):
        return False
    value = result.value
    while isinstance(value, cst.Subscript) and value.slice and isinstance(value.slice[-1].slice, cst.Index):
        value = value.slice[-1].slice.value  # Awaitable[bool], Coroutine[Any, Any, bool]
    return isinstance(value, cst.Name) and value.value == "bool"


def _called_name(expr: Expr) -> str | None:
    """The dotted name a call expression calls; a library the catalog does not otherwise
    know resolves like a module of the program (`sym:py:click.option`)."""
    if expr.get("k") != "call":
        return None
    fn = expr.get("fn") or {}
    return fn.get("name") if fn.get("k") == "ext" else str(fn.get("sym") or "").removeprefix("sym:py:")
