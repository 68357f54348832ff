"""The pipeline, top to bottom: discover -> extract -> graph -> checks -> postprocess.

`cli.py` calls `analyse` (check) and `build` (graph, why, report); nothing here imports the CLI.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from deadline_audit import checks
from deadline_audit.catalog import Catalog, load_catalog
from deadline_audit.collector import collector_paused
from deadline_audit.config import RULE_IDS, Config
from deadline_audit.discovery import SourceFile, discover
from deadline_audit.extract_cache import FactCache
from deadline_audit.facts import FileFacts, InputProblem, from_json, to_json
from deadline_audit.findings import AnalysisResult, Finding, InputError, Summary



@dataclass
class Build:
    """Everything the checks and the reporters need from one run."""

    graph: "TimeoutGraph"  # noqa: F821 - imported lazily (networkx)
    facts: list[FileFacts]
    errors: list[InputError] = field(default_factory=list)
    files_scanned: int = 0
    lines_scanned: int = 0
    phase_seconds: dict[str, float] = field(default_factory=dict)
    internal_errors: int = 0  # checks that crashed: the run exits 2 (SPEC §5)


@dataclass(frozen=True)
class ExtractJob:
    """One file to extract, with what the extractor needs to know about its place."""

    kind: str
    path: Path
    display: str
    module: str | None = None  # Python dotted module / Go import path
    go_module: str | None = None  # Go: the go.mod module path
    size: int = 0  # bytes: the parallel schedule starts with the largest files


@dataclass
class Inputs:
    """What a run reads, before anything is parsed: the files, where each sits, and each
    one's fact-cache key (content hash) when the cache is on."""

    files: list[SourceFile]
    errors: list[InputError]
    planned: list[ExtractJob]
    catalog: Catalog
    cache: FactCache | None
    keys: dict[int, str]
    seconds: float


def build(paths: list[Path], config: Config, *, jobs: int = 1, use_cache: bool = True,
          progress: bool = False) -> Build:
    # facts and the graph are long-lived and acyclic in practice: no cyclic GC while they grow
    with collector_paused():
        return _build(gather(paths, config, use_cache=use_cache), config, jobs=jobs, progress=progress)


def gather(paths: list[Path], config: Config, *, use_cache: bool) -> Inputs:
    t0 = time.perf_counter()
    files, errors = discover(paths, config)
    files = _with_explicit_env_files(files, config)
    catalog = load_catalog(config.catalog)
    planned = _plan_jobs(files)
    cache = FactCache(config.root / config.cache_dir, catalog.fingerprint) if use_cache else None
    keys: dict[int, str] = {}
    if cache is not None:
        for i, job in enumerate(planned):
            key = cache.key(job)
            if key is not None:
                keys[i] = key
    return Inputs(files, errors, planned, catalog, cache, keys, time.perf_counter() - t0)


def _build(inputs: Inputs, config: Config, *, jobs: int, progress: bool) -> Build:
    timings: dict[str, float] = {"discover": inputs.seconds}
    errors = list(inputs.errors)
    t0 = time.perf_counter()
    catalog = inputs.catalog
    facts = _extract_all(inputs.planned, catalog, inputs.cache, inputs.keys, jobs=jobs, progress=progress)
    _assign_env_roles(facts, config)
    timings["extract"] = time.perf_counter() - t0

    for item in facts:
        for problem in item.problems:
            errors.append(InputError(item.path, problem.message, problem.line, problem.column))

    t0 = time.perf_counter()
    from deadline_audit.graph import build_graph

    declared = tuple(config.rule_options.get("DA101", {}).get("lease-functions", ()))
    from deadline_audit.wire_config import WireConfig

    wire_config = WireConfig.from_config(config)
    graph = build_graph(facts, catalog, declared, wire_config)
    for problem in _wire_problems(graph):
        errors.append(InputError(str(config.config_file or ""), problem))
    timings["graph"] = time.perf_counter() - t0
    return Build(
        graph=graph,
        facts=facts,
        errors=errors,
        files_scanned=len(inputs.files),
        lines_scanned=sum(f.lines for f in facts),
        phase_seconds=timings,
    )


def _wire_problems(graph) -> list[str]:
    """Configured links that name nothing in the analysed code (the run goes on)."""
    from deadline_audit.wire import analyse

    try:
        return list(analyse(graph).problems)
    except Exception:  # noqa: BLE001 - the DA40x checks report the error
        return []


def run_checks(result: Build, config: Config) -> list[Finding]:
    with collector_paused():
        return _run_checks(result, config)


def _run_checks(result: Build, config: Config) -> list[Finding]:
    findings: list[Finding] = []
    for rule_id in RULE_IDS + tuple(sorted(checks.implemented_rules() - set(RULE_IDS))):
        check = checks.get_check(rule_id)
        if check is None or (rule_id in RULE_IDS and not config.rule_enabled(rule_id)):
            continue  # a deselected rule costs nothing
        options = dict(config.rule_options.get(rule_id, {}))
        try:
            findings.extend(check(result.graph, options))
        except Exception as exc:  # one broken check must not lose the others' findings
            result.errors.append(InputError("", f"internal error in the {rule_id} check: {type(exc).__name__}: {exc}"))
            result.internal_errors += 1
    return findings


def analyse(paths: list[Path], config: Config, *, jobs: int = 1, use_cache: bool = True,
            progress: bool = False) -> AnalysisResult:
    started = time.perf_counter()
    inputs = gather(paths, config, use_cache=use_cache)
    runs, settings, key = _run_cache(inputs, config)
    entry = None
    if runs is not None:
        entry = runs.get(key)
        if entry is None:
            entry = _same_facts(inputs, runs.latest(settings))
            if entry is not None:
                runs.put(key, entry, settings)
    if entry is not None:  # nothing the findings depend on changed since the last run
        raw, errors, lines, internal_errors = entry.findings, inputs.errors + entry.errors, entry.lines_scanned, 0
        inventory = entry.inventory if entry.inventory is not None else _rebuilt_inventory(paths, config, jobs)
    else:
        with collector_paused():
            result = _build(inputs, config, jobs=jobs, progress=progress)
        t0 = time.perf_counter()
        raw = run_checks(result, config)
        result.phase_seconds["checks"] = time.perf_counter() - t0
        errors, lines, internal_errors = result.errors, result.lines_scanned, result.internal_errors
        inventory = _inventory(result, config)
        if runs is not None and key is not None and not internal_errors:
            from deadline_audit.run_cache import RunEntry

            entry = RunEntry(findings=raw, errors=errors[len(inputs.errors):], lines_scanned=lines,
                             inputs=_input_keys(inputs))
            runs.put(key, entry, settings)
            inventory = _remembered(inventory, runs, key, entry)

    from deadline_audit.postprocess import finalize, make_line_reader

    findings, suppressed = finalize(raw, config, make_line_reader())
    summary = Summary(
        files_scanned=len(inputs.files),
        lines_scanned=lines,
        findings=len(findings),
        suppressed=suppressed,
        elapsed_s=round(time.perf_counter() - started, 3),
        internal_errors=internal_errors,
    )
    for finding in findings:
        summary.by_rule[finding.rule_id] = summary.by_rule.get(finding.rule_id, 0) + 1
    return AnalysisResult(findings=findings, errors=errors, summary=summary, inventory=inventory)


def _run_cache(inputs: Inputs, config: Config):
    """The whole-run cache, the key of this run's settings and of the run itself (all
    None without the fact cache, or when a file could not even be read: its error must
    come from a fresh extraction)."""
    if inputs.cache is None or len(inputs.keys) != len(inputs.planned):
        return None, None, None
    from deadline_audit.run_cache import RunCache, run_key, settings_key

    settings = settings_key(config, inputs.catalog.fingerprint)
    key = run_key(settings, [(job.display, job.kind, inputs.keys[i]) for i, job in enumerate(inputs.planned)])
    return RunCache(config.root / config.cache_dir), settings, key


def _input_keys(inputs: Inputs) -> dict[str, str]:
    return {job.display: inputs.keys[i] for i, job in enumerate(inputs.planned)}


MAX_REEXAMINED = 32  # more changed files than this (a branch switch): analyse afresh


def _same_facts(inputs: Inputs, previous):
    """The last run's answer still holds when the files that changed since then yield the
    same facts as before (a comment, a docstring word, spacing within a line): findings
    are a function of the facts, never of the text around them. Line counts may differ:
    they only feed `lines_scanned`. None when anything else differs."""
    if previous is None or inputs.cache is None:
        return None
    now = _input_keys(inputs)
    if now.keys() != previous.inputs.keys():
        return None  # a file added or removed
    changed = [(i, job) for i, job in enumerate(inputs.planned) if previous.inputs[job.display] != now[job.display]]
    if not changed or len(changed) > MAX_REEXAMINED:
        return None
    lines = previous.lines_scanned
    for i, job in changed:
        before = inputs.cache.get(previous.inputs[job.display])
        if before is None:
            return None
        after = inputs.cache.get(now[job.display])
        if after is None:
            after = extract_one(job, inputs.catalog)
            inputs.cache.put(now[job.display], after)  # the full build that may follow reuses it
        before.path = after.path = job.display
        if dataclasses.replace(before, lines=0) != dataclasses.replace(after, lines=0):
            return None
        lines += after.lines - before.lines
    return dataclasses.replace(previous, lines_scanned=lines, inputs=now)


def _remembered(build_inventory, runs, key: str, entry):
    """The lazy inventory of a fresh run, saved with its run entry once built, so a warm
    JSON run needs no graph either."""
    def inventory():
        built = build_inventory()
        if built is not None:
            entry.inventory = built
            runs.put(key, entry)
        return built
    return inventory


def _rebuilt_inventory(paths: list[Path], config: Config, jobs: int):
    """A cached run saved before any reporter asked for the inventory: build it (from the
    fact cache) only if one asks now."""
    def inventory():
        return knob_inventory(build(paths, config, jobs=jobs), config.rule_options.get("DA501", {}))
    return inventory


def _inventory(result: Build, config: Config):
    """The knob inventory (SPEC §5 additive field), built when a reporter asks for it
    (only JSON does)."""
    return lambda: knob_inventory(result, config.rule_options.get("DA501", {}))


def knob_inventory(result: Build, options: dict) -> list[dict] | None:
    """inventory.build_inventory over a build, for `check --format json` and `report`
    alike; never loses the run (a failure is reported as an input error)."""
    from deadline_audit.inventory import build_inventory

    try:
        return build_inventory(result.graph, options)
    except Exception as exc:
        result.errors.append(InputError("", f"internal error while building the inventory: "
                                            f"{type(exc).__name__}: {exc}"))
        return None


# -- planning: where each file sits (Go module, Python package) ----------------------

def _plan_jobs(files: list[SourceFile]) -> list[ExtractJob]:
    go_mods = {}
    for f in files:
        if f.kind == "gomod":
            go_mods[f.path.parent] = _read_module_path(f.path)
    planned = []
    for f in files:
        if f.kind == "go":
            module_dir = next((d for d in [f.path.parent, *f.path.parent.parents] if d in go_mods), None)
            if module_dir is not None and go_mods[module_dir]:
                rel = f.path.parent.relative_to(module_dir).as_posix()
                import_path = go_mods[module_dir] if rel == "." else f"{go_mods[module_dir]}/{rel}"
                planned.append(ExtractJob("go", f.path, f.display, import_path, go_mods[module_dir], f.size))
            else:
                planned.append(ExtractJob("go", f.path, f.display, f.path.parent.name, None, f.size))
        elif f.kind == "python":
            planned.append(ExtractJob("python", f.path, f.display, python_module_name(f.path), size=f.size))
        else:
            planned.append(ExtractJob(f.kind, f.path, f.display, size=f.size))
    return planned


def _read_module_path(gomod: Path) -> str | None:
    try:
        for line in gomod.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = line.split("//")[0].split()
            if len(parts) >= 2 and parts[0] == "module":
                return parts[1].strip('"')
    except OSError:
        return None
    return None


def python_module_name(path: Path) -> str:
    """Dotted module name as Python would import it: climb while the folder is a package."""
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        if folder.parent == folder:
            break
        folder = folder.parent
    return ".".join(parts) or path.parent.name


# -- extraction -------------------------------------------------------------------

def extract_one(job: ExtractJob, catalog: Catalog) -> FileFacts:
    """One file -> facts. Never raises for bad input: problems go into the facts."""
    try:
        data = job.path.read_bytes()
    except OSError as exc:
        return FileFacts(path=job.display, kind=job.kind, problems=[InputProblem(f"cannot read: {exc.strerror}")])
    try:
        return _dispatch(job, data, catalog)
    except RecursionError:
        return FileFacts(path=job.display, kind=job.kind, lines=data.count(b"\n"),
                         problems=[InputProblem("too deeply nested to analyse")])
    except Exception as exc:  # an extractor bug must not lose the run
        return FileFacts(path=job.display, kind=job.kind, lines=data.count(b"\n"),
                         problems=[InputProblem(f"internal error while extracting: {type(exc).__name__}: {exc}")])


def _dispatch(job: ExtractJob, data: bytes, catalog: Catalog) -> FileFacts:
    if job.kind == "go":
        from deadline_audit.extract.go import extract_go

        return extract_go(job.display, data, job.module or "", job.go_module, catalog)
    if job.kind == "gomod":
        from deadline_audit.extract.go import extract_gomod

        return extract_gomod(job.display, data.decode("utf-8", errors="replace"))
    if job.kind == "python":
        from deadline_audit.extract.python import extract_python

        return extract_python(job.display, data, job.module or "", catalog)
    text = data.decode("utf-8", errors="replace")
    if job.kind == "env":
        from deadline_audit.extract.envfile import extract_env

        return extract_env(job.display, text)
    if job.kind in ("yaml", "toml", "json"):
        from deadline_audit.extract import configfile

        return getattr(configfile, f"extract_{job.kind}")(job.display, text)
    if job.kind == "markdown":
        from deadline_audit.extract.markdown import extract_markdown

        return extract_markdown(job.display, text)
    return FileFacts(path=job.display, kind=job.kind, lines=text.count("\n"))


_worker_state: tuple[Catalog, FactCache | None] | None = None


def _init_worker(catalog: Catalog, cache: FactCache | None) -> None:
    """Pool initializer: the catalog crosses to each worker once, not with every file."""
    global _worker_state
    _worker_state = (catalog, cache)


def _extract_in_worker(job: ExtractJob, key: str | None) -> str:
    """Extract, and write the cache entry here: serialising facts is a share of the work
    worth spreading over the workers too. The facts go back to the parent as that same
    JSON (one serialisation for both, instead of JSON for the cache plus a pickle)."""
    assert _worker_state is not None
    catalog, cache = _worker_state
    facts = extract_one(job, catalog)
    text = to_json(facts)
    if cache is not None and key is not None:
        cache.put(key, facts, text)
    return text


def _import_extractors(kinds: set[str]) -> None:
    """Import the extractors (libcst, tree-sitter) in the parent, so forked workers
    share them instead of each importing them again."""
    if "go" in kinds or "gomod" in kinds:
        import deadline_audit.extract.go  # noqa: F401
    if "python" in kinds:
        import deadline_audit.extract.python  # noqa: F401


def _extract_all(planned: list[ExtractJob], catalog: Catalog, cache: FactCache | None, keys: dict[int, str], *,
                 jobs: int, progress: bool) -> list[FileFacts]:
    results: list[FileFacts | None] = [None] * len(planned)
    todo: list[int] = []
    for i, job in enumerate(planned):
        if cache is not None and i in keys:
            hit = cache.get(keys[i])
            if hit is not None:
                hit.path = job.display
                results[i] = hit
                continue
        todo.append(i)
    todo_to_write = todo
    if jobs > 1 and len(todo) > 8:
        from concurrent.futures import ProcessPoolExecutor

        _import_extractors({planned[i].kind for i in todo})  # once, before the workers fork
        # largest files first, small ones last in small chunks: no worker is left alone
        # with one big file at the end (the cost of a file follows its size)
        order = sorted(todo, key=lambda i: -planned[i].size)
        chunk = max(1, min(8, len(order) // (jobs * 16)))
        with ProcessPoolExecutor(max_workers=min(jobs, len(todo)), initializer=_init_worker,
                                 initargs=(catalog, cache)) as pool:
            done = pool.map(_extract_in_worker, [planned[i] for i in order], [keys.get(i) for i in order],
                            chunksize=chunk)
            for i, text in zip(order, done):
                results[i] = from_json(text)
        todo_to_write = []  # the workers wrote their cache entries
    elif progress and len(todo) > 200:
        # a large tree on a terminal: show where extraction is (stderr, never stdout)
        from rich.console import Console
        from rich.progress import Progress

        with Progress(console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("extracting facts", total=len(todo))
            for i in todo:
                results[i] = extract_one(planned[i], catalog)
                bar.advance(task)
    else:
        for i in todo:
            results[i] = extract_one(planned[i], catalog)
    if cache is not None:
        for i in todo_to_write:
            if i in keys:
                cache.put(keys[i], results[i])
    return [r for r in results if r is not None]


# -- env layers ---------------------------------------------------------------------

def _with_explicit_env_files(files: list[SourceFile], config: Config) -> list[SourceFile]:
    """`--env-file`/`env-files` may name files discovery did not list (outside a root
    or ignored): they are inputs too."""
    known = {f.path for f in files}
    extra = []
    for name in config.env_files:
        path = (config.root / name).resolve() if not Path(name).is_absolute() else Path(name)
        if path not in known and path.is_file():
            extra.append(SourceFile(path=path, display=_display(path), kind="env", size=path.stat().st_size))
    return files + extra


def _display(path: Path) -> str:
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_posix()


def _assign_env_roles(facts: list[FileFacts], config: Config) -> None:
    """SPEC §2: configured env-files are the layers, in order; otherwise files named
    exactly `.env` are layers, shallower first; `.env.<profile>` are profiles; example
    files document."""
    from deadline_audit.extract.envfile import env_file_role

    configured = [(config.root / n).resolve() for n in config.env_files]
    env_facts = [f for f in facts if f.kind == "env"]
    for item in env_facts:
        role, profile = env_file_role(PurePosixPath(item.path).name)
        item.env_role, item.profile = role, profile
        if configured:
            resolved = Path(item.path).resolve()
            if resolved in configured:
                item.env_role, item.profile = "layer", None
            elif role == "layer":
                item.env_role = "unlisted"
    order = {p: i for i, p in enumerate(configured)}

    def layer_key(item: FileFacts):
        if configured:
            return (order.get(Path(item.path).resolve(), len(order)), item.path)
        return (len(PurePosixPath(item.path).parts), item.path)

    layers = sorted((f for f in env_facts if f.env_role == "layer"), key=layer_key)
    for rank, item in enumerate(layers):
        item.layer_rank = rank
