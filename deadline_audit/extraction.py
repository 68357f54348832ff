"""Extraction: where each discovered file sits (Go module and import path, Python
module), its facts (one extractor per input kind, in parallel processes when asked, from
the fact cache when it has them), and the env files' roles (layers, profiles, examples).

Below `pipeline.py`; above the extractors themselves (`extract/`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from deadline_audit.catalog import Catalog
from deadline_audit.config import Config
from deadline_audit.discovery import SourceFile
from deadline_audit.extract_cache import FactCache, is_light
from deadline_audit.facts import FileFacts, InputProblem, from_json, to_json
from deadline_audit.go_roots import infer_roots
from deadline_audit.testfiles import TestFiles


@dataclass(frozen=True)
class ExtractJob:
    """One file to extract, with what the extractor needs to know about its place."""

    kind: str
    path: Path
    display: str
    module: str | None = None  # Python dotted module / Go import path
    go_module: str | None = None  # Go: the go.mod module path
    size: int = 0  # bytes: the parallel schedule starts with the largest files
    names_only: bool = False  # test code, tests not included: only the names it spells (extract/names.py)


# -- planning: where each file sits (Go module, Python package) ----------------------

def plan_jobs(files: list[SourceFile], tests: TestFiles | None = None) -> list[ExtractJob]:
    """`tests`: test files whose code is not analysed (`include-tests` unset)."""
    go_mods = {}
    packages: dict[Path, tuple[str, ...]] = {}
    for f in files:
        if f.kind == "gomod":
            go_mods[f.path.parent] = _read_module_path(f.path)
    planned = []
    module_dirs = {f.path: next((d for d in [f.path.parent, *f.path.parent.parents] if go_mods.get(d)), None)
                   for f in files if f.kind == "go"}
    inferred = infer_roots([path for path, d in module_dirs.items() if d is None])
    for f in files:
        if f.kind == "go":
            module_dir = module_dirs[f.path]
            if module_dir is not None:
                rel = f.path.parent.relative_to(module_dir).as_posix()
                import_path = go_mods[module_dir] if rel == "." else f"{go_mods[module_dir]}/{rel}"
                planned.append(ExtractJob("go", f.path, f.display, import_path, go_mods[module_dir], f.size))
            elif f.path.parent in inferred:  # no go.mod: the path its imports reveal (go_roots.py)
                import_path, root = inferred[f.path.parent]
                planned.append(ExtractJob("go", f.path, f.display, import_path, root, f.size))
            else:
                planned.append(ExtractJob("go", f.path, f.display, f.path.parent.name, None, f.size))
        elif f.kind == "python":
            planned.append(ExtractJob("python", f.path, f.display, python_module_name(f.path, packages), size=f.size))
        else:
            planned.append(ExtractJob(f.kind, f.path, f.display, size=f.size))
    if tests is not None:
        planned = [replace(job, names_only=True) if job.kind in ("go", "python") and tests.holds(job.path) else job
                   for job in planned]
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


def python_module_name(path: Path, packages: dict[Path, tuple[str, ...]] | None = None) -> str:
    """Dotted module name as Python would import it: climb while the folder is a package.
    `packages`: folder -> its dotted package parts, shared by the files of one plan."""
    parts = [] if path.name == "__init__.py" else [path.stem]
    return ".".join([*_package_parts(path.parent, {} if packages is None else packages), *parts]) \
        or path.parent.name


def _package_parts(folder: Path, memo: dict[Path, tuple[str, ...]]) -> tuple[str, ...]:
    found = memo.get(folder)
    if found is None:
        if not (folder / "__init__.py").is_file():
            found = ()
        elif folder.parent == folder:
            found = (folder.name,)
        else:
            found = (*_package_parts(folder.parent, memo), folder.name)
        memo[folder] = found
    return found


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
    if job.names_only:
        from deadline_audit.extract.names import extract_names

        return extract_names(job.display, job.kind, data, job.module)
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
    if cache is not None and key is not None and not is_light(job, facts):
        cache.put(key, facts, text)  # light facts go into the parent's pack
    return text


def _import_extractors(kinds: set[str]) -> None:
    """Import the extractors (libcst, tree-sitter) in the parent, so forked workers
    share them instead of each importing them again."""
    if "go" in kinds or "gomod" in kinds:
        import deadline_audit.extract.go  # noqa: F401
    if "python" in kinds:
        import deadline_audit.extract.python  # noqa: F401


def extract_all(planned: list[ExtractJob], catalog: Catalog, cache: FactCache | None, keys: dict[int, str], *,
                 jobs: int, progress: bool, while_waiting: Callable[[], None] | None = None) -> list[FileFacts]:
    """Facts for every planned file, in order. `while_waiting`: work for the parent process
    while the pool's workers extract (run only when there is a pool)."""
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
            if while_waiting is not None:  # the workers are forked and busy: the parent is idle
                while_waiting()
            for i, text in zip(order, done):
                facts = results[i] = from_json(text)
                if cache is not None and i in keys and is_light(planned[i], facts):
                    cache.put(keys[i], facts, text, light=True)
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
                cache.put(keys[i], results[i], light=is_light(planned[i], results[i]))
        cache.flush()
    return [r for r in results if r is not None]


# -- env layers ---------------------------------------------------------------------

def with_explicit_env_files(files: list[SourceFile], config: Config) -> list[SourceFile]:
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


def assign_env_roles(facts: list[FileFacts], config: Config) -> None:
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
