"""Values the program reads from its config files, as the graph answers for them: a key
read from a loaded document (config_documents.py finds the key paths; here they meet the
config files the program names, every entry of an iterated list or table, and what a
helper's callers pass), a value bound from a config key, and the one key a Go struct held
at several places of a file reads through a given field.

A mixin of `TimeoutGraph` (graph.py): it reads the graph's indexes (`bindings`,
`config_values`, `functions`, `calls_in`, `files`, `decls`) and memoises in its `_memo`.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath

from deadline_audit.analysis.context import Ctx
from deadline_audit.config_documents import ANY_ENTRY, document_keys, key_read
from deadline_audit.facts import Expr

_MAX_ENTRY_READS = 32  # keys read from the entries of one iterated list or table
_MAX_CALLERS = 4  # a parameter is followed to what its callers pass when they are this few


class ConfigReads:
    def _config_read_at(self, sym: str, expr: Expr, ctx: Ctx) -> tuple[Expr, Ctx] | None:
        """A Go field of a struct held at several places of a config file
        (`p.timeouts.Transform.StartToClose`, `ActivityTimeouts` under `extract`,
        `transform`, `publish`): the key under the tag of the field it is read through."""
        reads = [(b, path, _config_key(b.expr)) for b, path in self.bindings.get(sym, ())]
        reads = [(b, path, key) for b, path, key in reads if key]
        through = expr.get("x") or {}
        if len({key for _, _, key in reads}) < 2 or through.get("k") not in ("field", "ref"):
            return None
        holder = self.decls.get((self.resolve_field(through, ctx) if through["k"] == "field" else through["sym"]) or "")
        tag = next((holder.tags[t].split(",")[0] for t in ("yaml", "toml", "mapstructure", "json")
                    if holder is not None and holder.tags.get(t)), None)
        placed = [(b, path) for b, path, key in reads if tag and key.split(".")[-2:-1] == [tag]]
        return (placed[0][0].expr, Ctx(placed[0][1])) if len(placed) == 1 else None

    def document_read(self, expr: Expr, ctx: Ctx) -> Expr | None:
        """`statement["fetch_timeout"]` / `doc.get("timeout_s", 30)` on what a config
        loader returned (config_documents.py): the read of that key, when exactly one
        config file the program names holds it."""
        if key_read(expr) is None or self.lang.get(ctx.path) != "python":
            return None
        loaders = self._document_loaders()
        if not loaders:
            return None

        def argument_in(c: Ctx):
            def argument(sym: str):
                if sym not in c.subst:
                    # no call being evaluated: what the function's callers pass (a few)
                    return [(arg, argument_in(arg_ctx)) for arg, arg_ctx in self._passed_by_callers(sym)] or None
                arg, arg_ctx = c.subst[sym]
                return arg, argument_in(arg_ctx)
            return argument

        def helper(sym: str):
            found = self.functions.get(sym)
            return (found[0].returns, found[0].params) if found else None

        paths = document_keys(expr, loaders, lambda sym: self.bindings.get(sym, ()), argument_in(ctx), helper=helper)
        args = expr.get("args") or []
        default = args[1] if len(args) > 1 else None
        reads = []
        for keys in paths or ():
            if ANY_ENTRY in keys:  # every entry of a list or table the code iterates
                reads.extend(self._entry_reads(keys, default))
                continue
            dotted = ".".join(keys)
            values = self.config_values.get(dotted, ())
            if keys and len(values) == 1 and PurePosixPath(values[0][0]).name in self._named_config_files():
                reads.append({"k": "cfg", "key": dotted, "file": values[0][0], "default": default})
            elif keys and not values and default is not None:
                reads.append(default)  # a table without the key: the read's default
        if not reads or all(r is default for r in reads):
            return None
        # a helper reading several tables (one per call): each value, as alternatives
        return reads[0] if len(reads) == 1 else {"k": "choice", "args": reads}

    def _passed_by_callers(self, sym: str) -> list[tuple[Expr, Ctx]]:
        """The arguments a Python function's callers give its parameter `sym` (when it has
        at most `_MAX_CALLERS` of them): `_tool(t)` for `def _tool(raw)`."""
        fn_sym = sym.rsplit(".", 1)[0]
        entry = self.functions.get(fn_sym)
        if entry is None or sym not in entry[0].params or not fn_sym.startswith("sym:py:"):
            return []
        callers = self._memo.get(("_py_callers",))
        if callers is None:
            callers = self._memo[("_py_callers",)] = defaultdict(list)
            for calls in self.calls_in.values():
                for call, path in calls:
                    if self.lang.get(path) == "python" and call.callee.get("k") in ("fnref", "method"):
                        target = self.resolve_callee(call.callee, Ctx(path))
                        if target is not None:
                            callers[target].append((call, path))
        sites = callers.get(fn_sym, ())
        if not sites or len(sites) > _MAX_CALLERS:
            return []
        passed = [self.call_subst(entry[0], call, Ctx(path)).get(sym) for call, path in sites]
        return [p for p in passed if p is not None]

    def _entry_reads(self, keys: list[str], default: Expr | None) -> list[Expr]:
        """`suites.*.request_timeout_s`: the key of every entry that has it, in the config
        files the program names (each entry's value is one the code may read)."""
        reads: list[Expr] = []
        named = self._named_config_files()
        for dotted, values in self.config_values.items():
            parts = dotted.split(".")
            if len(parts) != len(keys) or not all(k == ANY_ENTRY or k == p for k, p in zip(keys, parts)):
                continue
            for file, _ in values:
                if PurePosixPath(file).name in named:
                    reads.append({"k": "cfg", "key": dotted, "file": file, "default": default})
            if len(reads) >= _MAX_ENTRY_READS:
                break
        return reads

    def _document_loaders(self) -> frozenset[str]:
        found = self._memo.get(("_document_loaders",))
        if found is None:
            settings = self.catalog.table("python", "settings")
            found = self._memo[("_document_loaders",)] = frozenset(settings.get("document_loaders", ()))
        return found

    def _named_config_files(self) -> frozenset[str]:
        """Base names of the config files the program names (paths, file names)."""
        found = self._memo.get(("_named_config_files",))
        if found is None:
            found = self._memo[("_named_config_files",)] = frozenset(
                PurePosixPath(n).name for f in self.files.values() for n in f.config_files_named)
        return found

    def _from_config(self, expr: Expr, ctx: Ctx, depth: int = 0) -> bool:
        """A value read from a loaded config file: the read itself, or parsed from a local
        or field holding one (`d, _ := time.ParseDuration(f.Runner.Timeout)`, then
        `cfg.Timeout = d`)."""
        if _reads_config(expr):
            return True
        if depth > 3:
            return False
        k = expr.get("k")
        if k == "conv" and expr.get("x"):
            return self._from_config(expr["x"], ctx, depth + 1)
        if k in ("ref", "field"):
            sym = expr["sym"] if k == "ref" else self.resolve_field(expr, ctx)
            return any(self._from_config(b.expr, Ctx(p), depth + 1) for b, p in self.bindings.get(sym, ())[:4]) \
                if sym else False
        return False


def _config_key(expr: Expr) -> str | None:
    """The key a config read (`cfg`, or a conversion of one) reads."""
    if expr.get("k") == "conv":
        expr = expr.get("x") or {}
    return expr.get("key") if expr.get("k") == "cfg" else None


def _reads_config(expr: Expr) -> bool:
    """A binding made from a config file key (`conv(cfg)` of config_tags.py, or the text
    itself for a string field)."""
    return expr.get("k") == "cfg" or expr.get("k") == "conv" and (expr.get("x") or {}).get("k") == "cfg"
