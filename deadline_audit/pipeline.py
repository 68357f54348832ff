"""The pipeline, top to bottom: discover -> extract -> graph -> checks -> postprocess.

`cli.py` calls `analyse` (check) and `build` (graph, why, report); nothing here imports the
CLI. Extraction (planning, the extractor pool, env layers) is `extraction.py`; what a run
may reuse from the last one is `run_cache.py`.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from pathlib import Path

from deadline_audit import checks, extraction
from deadline_audit.catalog import Catalog, load_catalog
from deadline_audit.collector import collector_paused
from deadline_audit.config import RULE_IDS, Config
from deadline_audit.discovery import SourceFile, discover
from deadline_audit.extract_cache import FactCache
from deadline_audit.extraction import ExtractJob, assign_env_roles, extract_all, plan_jobs, with_explicit_env_files
from deadline_audit.facts import FileFacts
from deadline_audit.findings import AnalysisResult, Finding, InputError, Summary
from deadline_audit.testfiles import TestFiles
from deadline_audit.run_cache import RunCache, RunEntry, run_key, same_facts, settings_key



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
    files = with_explicit_env_files(files, config)
    catalog = load_catalog(config.catalog)
    # test code is read for its names only unless findings there are wanted (testfiles.py)
    planned = plan_jobs(files, None if config.include_tests else TestFiles(catalog, config.root))
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
    facts = extract_all(inputs.planned, catalog, inputs.cache, inputs.keys, jobs=jobs, progress=progress,
                        while_waiting=_import_analysis)
    assign_env_roles(facts, config)
    timings["extract"] = time.perf_counter() - t0

    for item in facts:
        for problem in item.problems:
            errors.append(InputError(item.path, problem.message, problem.line, problem.column))

    t0 = time.perf_counter()
    from deadline_audit.graph_build import build_graph

    declared = tuple(config.rule_options.get("DA101", {}).get("lease-functions", ()))
    from deadline_audit.wire_config import WireConfig

    wire_config = WireConfig.from_config(config)
    graph = build_graph(facts, catalog, declared, wire_config, config.root)
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


def _import_analysis() -> None:
    """Import the graph (networkx) and every check while extraction workers run: ~0.3 s
    that would otherwise come after them, on the critical path."""
    try:
        import deadline_audit.graph_build  # noqa: F401
        import deadline_audit.postprocess  # noqa: F401
        import deadline_audit.wire_config  # noqa: F401

        for rule_id in checks.implemented_rules():
            checks.get_check(rule_id)
    except Exception:  # noqa: BLE001 - only a head start: the real imports report any problem
        pass


def _wire_problems(graph) -> list[str]:
    """Configured links that name nothing in the analysed code (the run goes on)."""
    from deadline_audit.wire import analyse

    try:
        return list(analyse(graph).problems)
    except Exception:  # noqa: BLE001 - the DA40x checks report the error
        return []


def run_checks(result: Build, config: Config, *, jobs: int = 1) -> list[Finding]:
    """Every enabled check over the graph, findings in rule order. In this process: a fork
    running some of them meanwhile cost more than it saved once the checks took a fifth
    of a second (copy-on-write faults over the graph; bench/README.md, fourteenth round).
    `jobs` is kept for callers and does not change the result."""
    with collector_paused():
        rules = [r for r in RULE_IDS + tuple(sorted(checks.implemented_rules() - set(RULE_IDS)))
                 if checks.get_check(r) is not None and (r not in RULE_IDS or config.rule_enabled(r))]
        findings: list[Finding] = []
        for rule_id in rules:
            found, error = _run_check(rule_id, result.graph, config)
            findings.extend(found)
            if error is not None:  # one broken check must not lose the others' findings
                result.errors.append(InputError("", error))
                result.internal_errors += 1
        return findings


def _run_check(rule_id: str, graph, config: Config) -> tuple[list[Finding], str | None]:
    check = checks.get_check(rule_id)
    try:
        return list(check(graph, dict(config.rule_options.get(rule_id, {})))), None
    except Exception as exc:  # noqa: BLE001 - reported as an internal error, the run goes on
        return [], f"internal error in the {rule_id} check: {type(exc).__name__}: {exc}"


def analyse(paths: list[Path], config: Config, *, jobs: int = 1, use_cache: bool = True,
            progress: bool = False) -> AnalysisResult:
    started = time.perf_counter()
    inputs = gather(paths, config, use_cache=use_cache)
    runs, settings, key = _run_cache(inputs, config)
    entry = None
    if runs is not None:
        entry = runs.get(key)
        if entry is None:
            entry = same_facts(runs.latest(settings), inputs.planned, _input_keys(inputs), inputs.cache,
                               lambda job: extraction.extract_one(job, inputs.catalog))
            if inputs.cache is not None:
                inputs.cache.flush()  # what it extracted for a light file
            if entry is not None:
                runs.put(key, entry, settings)
    if entry is not None:  # nothing the findings depend on changed since the last run
        raw, errors, lines, internal_errors = entry.findings, inputs.errors + entry.errors, entry.lines_scanned, 0
        inventory = entry.inventory if entry.inventory is not None else _rebuilt_inventory(paths, config, jobs)
    else:
        with collector_paused():
            result = _build(inputs, config, jobs=jobs, progress=progress)
        t0 = time.perf_counter()
        raw = run_checks(result, config, jobs=jobs)
        result.phase_seconds["checks"] = time.perf_counter() - t0
        errors, lines, internal_errors = result.errors, result.lines_scanned, result.internal_errors
        inventory = _inventory(result, config)
        if runs is not None and key is not None and not internal_errors:
            # copies: post-processing sets severities and fingerprints on the findings it
            # reports, and the entry is written again once a reporter asks for the inventory
            entry = RunEntry(findings=[copy.copy(f) for f in raw], errors=errors[len(inputs.errors):],
                             lines_scanned=lines, inputs=_input_keys(inputs))
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
    settings = settings_key(config, inputs.catalog.fingerprint)
    key = run_key(settings, [(job.display, job.kind, inputs.keys[i]) for i, job in enumerate(inputs.planned)])
    return RunCache(config.root / config.cache_dir), settings, key


def _input_keys(inputs: Inputs) -> dict[str, str]:
    return {job.display: inputs.keys[i] for i, job in enumerate(inputs.planned)}


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
