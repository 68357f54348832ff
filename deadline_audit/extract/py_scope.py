"""Scopes and per-function state of the Python extractor (plain bookkeeping)."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any

from deadline_audit.facts import Expr, FunctionFact

BUILTINS = frozenset(dir(builtins))


class Entry:
    """What a name means in a scope.

    kind: var | const | field | param | local | self | func | class | import | builtin
    For `import`, `sym` is the qualified name it stands for (`httpx`, `app.config`) and
    `module_import` tells `import a.b` (surely a module) from `from a import b`.
    """

    __slots__ = ("kind", "sym", "type", "module_import")

    def __init__(self, kind: str, sym: str, type: str | None = None, module_import: bool = False) -> None:
        self.kind = kind
        self.sym = sym
        self.type = type
        self.module_import = module_import


@dataclass
class ClassInfo:
    sym: str
    qualified: str  # without `sym:py:`
    is_settings: bool = False
    env_prefix: str | None = None
    methods: set[str] = field(default_factory=set)
    annotated: set[str] = field(default_factory=set)
    # pydantic-settings fields: (name, default expr, alias names, span)
    settings_fields: list[tuple[str, Expr | None, list[str], Any]] = field(default_factory=list)
    env_nested_delimiter: str | None = None  # pydantic-settings: `PREFIX_GROUP__FIELD` reads a nested model
    field_types: dict[str, str] = field(default_factory=dict)  # annotated field -> its type (py:…)
    # every annotated field with a value (a nested model's defaults): (name, default expr, span)
    model_fields: list[tuple[str, Expr | None, Any]] = field(default_factory=list)

    @property
    def type_name(self) -> str:
        return "py:" + self.qualified


@dataclass
class FuncState:
    fact: FunctionFact
    param_syms: dict[str, int]  # param symbol -> index in fact.params
    words: list[str] = field(default_factory=list)
    use_keys: set[str] = field(default_factory=set)
    yields_results: bool = False  # a context-manager generator: what it yields, `with … as` binds


@dataclass
class Scope:
    kind: str  # module | class | function
    sym: str  # prefix of the symbols declared inside
    parent: Scope | None
    names: dict[str, Entry] = field(default_factory=dict)
    imports: dict[str, Entry] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)
    cls: ClassInfo | None = None
    func: FuncState | None = None

    def module(self) -> Scope:
        s = self
        while s.parent is not None:
            s = s.parent
        return s


def lookup(scope: Scope, name: str, comp_names: list[set[str]] | None = None) -> Entry | None:
    """Python's rules: the current scope, then enclosing functions (class bodies are not
    enclosing scopes for nested functions), the module, the builtins."""
    if comp_names:
        for names in comp_names:
            if name in names:
                return Entry("local", "")  # a comprehension variable: nothing to name
    s: Scope | None = scope
    first = True
    while s is not None:
        if s.kind == "class" and not first:
            s = s.parent
            continue
        if name in s.globals:
            s = s.module()
        entry = s.names.get(name)
        if entry is not None:
            return entry
        entry = s.imports.get(name)
        if entry is not None:
            return entry
        first = False
        s = s.parent
    if name in BUILTINS:
        return Entry("builtin", name)
    return None
