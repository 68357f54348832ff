"""What the analyses and the graph share (below both): where an expression is evaluated
(`Ctx`), an operation lease (`Lease`), and `GraphView`, the part of the timeout-flow graph
(graph.py) the analyses of this package read. The graph calls the analyses (call graph,
leases, summaries) and hands itself to them; they see it through `GraphView`, so that
this package never imports the graph above it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from deadline_audit.catalog import Catalog, SiteSpec
from deadline_audit.facts import Binding, CallFact, Expr, FileFacts, FunctionFact, SiteFact, SymbolDecl
from deadline_audit.findings import Location


@dataclass
class Ctx:
    """Where an expression is evaluated: its file and, inside a summarised call, the
    arguments standing for the callee's parameters."""

    path: str
    subst: dict[str, tuple[Expr, "Ctx"]] = field(default_factory=dict)
    call_at: tuple[str, int, int] | None = None  # outermost call: where a helper's env read is attributed
    fn: str | None = None  # the summarised function whose parameters `subst` binds

    def local(self, sym: str) -> bool:
        """A local of the summarised function: evaluated with this call's arguments."""
        return self.fn is not None and sym.startswith(self.fn + ".") and sym not in self.subst

    def key(self) -> tuple:
        return (self.path, tuple(sorted((k, id(v[0])) for k, v in self.subst.items())))


@dataclass
class Lease:
    """An operation lease: a call that supervises one operation with a renewable timer."""

    id: str  # the site id of the lease call
    location: Location
    function: str | None  # where the lease call is written
    duration: Expr | None
    ctx: Ctx
    operations: list[str]  # function symbols the lease supervises
    helper: str | None  # the lease helper function, when there is one
    kind: str = "helper"  # helper | temporal
    unit: str = "s"
    name: str | None = None  # a short string argument naming the lease ("model_call")
    body_sites: list[str] = field(default_factory=list)  # sites written inside the lease's own body
    # the calls written in the lease's own body (in `function`, at `location.path`), and the
    # symbols they go through (receivers, arguments): the clients an external call under
    # the lease uses (`await llm.chat.completions.create()`)
    body_calls: list[CallFact] = field(default_factory=list)
    body_uses: list[str] = field(default_factory=list)


class GraphView(Protocol):
    """The indexes and queries of `graph.TimeoutGraph` that the analyses use."""

    catalog: Catalog
    declared_leases: tuple[str, ...]
    files: dict[str, FileFacts]
    tests: Any  # testfiles.TestFiles: which of `files` are test code
    lang: dict[str, str]  # path -> "go" | "python"
    decls: dict[str, SymbolDecl]
    functions: dict[str, tuple[FunctionFact, str]]  # sym -> (fact, path)
    bindings: dict[str, list[tuple[Binding, str]]]
    calls_in: dict[str | None, list[tuple[CallFact, str]]]  # enclosing function -> calls
    sites: list[tuple[SiteFact, str]]
    sites_in: dict[str | None, list[SiteFact]]
    closures: dict[str, list[str]]  # function -> the closures written inside it
    _memo: dict[tuple, Any]  # results memoised per graph (summaries, lease forms)

    @property
    def callgraph(self) -> Any: ...

    def type_of(self, expr: Expr | None, ctx: Ctx, depth: int = 0) -> str | None: ...

    def member(self, type_name: str | None, name: str, path: str) -> str | None: ...

    def resolve_field(self, expr: Expr, ctx: Ctx, depth: int = 0) -> str | None: ...

    def resolve_callee(self, callee: Expr | None, ctx: Ctx, depth: int = 0) -> str | None: ...

    def resolve_callees(self, callee: Expr | None, ctx: Ctx) -> tuple[str, ...]: ...

    def resolve_sym(self, expr: Expr | None, ctx: Ctx) -> str | None: ...

    def call_subst(self, fn: FunctionFact, call: Expr | CallFact, ctx: Ctx) -> dict[str, tuple[Expr, Ctx]]: ...

    def reachable(self, roots: list[str], limit: int = 400) -> set[str]: ...

    def lease_helpers(self, declared: tuple[str, ...] = ()) -> dict[str, tuple[int, int]]: ...

    def bindings_by_function(self) -> dict[str, list[tuple[str, Binding, str]]]: ...

    def spec(self, site: SiteFact) -> SiteSpec | None: ...
