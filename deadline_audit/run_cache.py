"""Whole-run cache (SPEC §7, §8): the checks' raw findings and the input errors of a run,
reused when nothing they depend on changed.

The fact cache (extract_cache.py) spares the parse of unchanged files, but the graph and
every check still run over all facts, because a finding spans files. Their result is a
function of the set of inputs (each file's place and content hash), the configuration, the
catalog and the tool's own code; when all of these are the same as the last run's, the
last run's raw findings are the answer. When only a few files changed and each yields
the same facts as before (a comment, a docstring, spacing within a line), the answer
holds too (`same_facts`). Postprocessing (suppression comments, baselines,
severities, fingerprints) always runs fresh on top: it reads the sources and the options
of this invocation.

Entries are JSON, never pickle: the cache folder sits in the analysed tree (untrusted).
A damaged entry is a miss.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from deadline_audit import __version__
from deadline_audit.extract_cache import is_light
from deadline_audit.findings import FlowStep, InputError, Layer, Location, Related, Finding

ENTRY_VERSION = 1
KEEP = 4  # entries kept per cache folder


def _code_fingerprint() -> str:
    """Every module of the tool: a patched check in an editable install must not be
    answered by an older run's findings."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for source in sorted(here.rglob("*.py")):
        try:
            digest.update(source.relative_to(here).as_posix().encode())
            digest.update(source.read_bytes())
        except OSError:
            pass
    return digest.hexdigest()[:16]


def settings_key(config: Any, catalog_fingerprint: str) -> str:
    """Everything but the inputs: the tool's code and version, the catalog, the options.
    The root counts as the run sees it, from the working directory (like every path a
    finding carries): `--new-from-rev` analyses REV in a fresh temporary folder each time,
    entered the same way, and its answer is still the one cached for REV."""
    options = dataclasses.asdict(config)
    try:
        options["root"] = os.path.relpath(config.root, Path.cwd())
    except ValueError:  # another drive (Windows): no relative form
        options["root"] = str(config.root)
    digest = hashlib.sha256()
    digest.update(f"{ENTRY_VERSION}|{__version__}|{catalog_fingerprint}|{_code_fingerprint()}|".encode())
    digest.update(json.dumps(options, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def run_key(settings: str, inputs: list[tuple[str, str, str]]) -> str:
    """`inputs`: (display path, kind, fact-cache key) for every planned file, in order."""
    digest = hashlib.sha256(settings.encode())
    for display, kind, key in inputs:
        digest.update(f"\0{display}\0{kind}\0{key}".encode())
    return digest.hexdigest()


@dataclasses.dataclass
class RunEntry:
    findings: list[Finding]
    errors: list[InputError]  # from extraction and the graph (discovery's are re-made)
    lines_scanned: int
    inventory: list[dict] | None = None  # only once a reporter asked for it
    inputs: dict[str, str] = dataclasses.field(default_factory=dict)  # display path -> fact-cache key


class RunCache:
    def __init__(self, folder: Path) -> None:
        self.folder = folder / "runs"

    def _file(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str) -> RunEntry | None:
        try:
            data = json.loads(self._file(key).read_text(encoding="utf-8"))
            return RunEntry(
                findings=[_finding(f) for f in data["findings"]],
                errors=[InputError(**e) for e in data["errors"]],
                lines_scanned=int(data["lines_scanned"]),
                inventory=data.get("inventory"),
                inputs={str(k): str(v) for k, v in data.get("inputs", {}).items()},
            )
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None  # missing or damaged: a miss, never an error

    def latest(self, settings: str) -> RunEntry | None:
        """The last run made with these settings, whatever its inputs were."""
        try:
            key = self._pointer(settings).read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return self.get(key) if key.isalnum() else None

    def _pointer(self, settings: str) -> Path:
        return self.folder / f"latest-{settings[:32]}"

    def put(self, key: str, entry: RunEntry, settings: str | None = None) -> None:
        data = {
            "findings": [dataclasses.asdict(f) for f in entry.findings],
            "errors": [dataclasses.asdict(e) for e in entry.errors],
            "lines_scanned": entry.lines_scanned,
            **({"inventory": entry.inventory} if entry.inventory is not None else {}),
            "inputs": entry.inputs,
        }
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, separators=(",", ":"))
            os.replace(tmp, self._file(key))  # atomic: a parallel run never reads half an entry
            if settings is not None:
                fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(key)
                os.replace(tmp, self._pointer(settings))
            self._prune()
        except (OSError, TypeError, ValueError):
            pass  # a read-only tree is still analysed, just not remembered


    def _prune(self) -> None:
        """Keep the few latest answers (a tree and its `--new-from-rev` base, a branch
        switched back and forth), not one per run ever made."""
        for pattern in ("*.json", "latest-*"):
            entries = sorted(self.folder.glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in entries[KEEP:]:
                old.unlink(missing_ok=True)


def _location(data: dict | None) -> Location | None:
    return Location(**data) if data is not None else None


def _finding(data: dict) -> Finding:
    return Finding(
        rule_id=data["rule_id"], rule=data["rule"], severity=data["severity"], message=data["message"],
        location=Location(**data["location"]),
        related=[Related(r["message"], Location(**r["location"])) for r in data["related"]],
        flow=[_flow_step(s) for s in data["flow"]],
        fix=data["fix"],
        fingerprint=data["fingerprint"],
    )


def _flow_step(data: dict) -> FlowStep:
    return FlowStep(**{
        **data,
        "location": _location(data["location"]),
        "default_location": _location(data["default_location"]),
        "layers": tuple(Layer(**layer) for layer in data["layers"]),
    })


MAX_REEXAMINED = 32  # more changed files than this (a branch switch): analyse afresh


def same_facts(previous: RunEntry | None, planned: list, now: dict[str, str], cache: Any,
               extract: Callable[[Any], Any]) -> RunEntry | None:
    """The last run's answer still holds when the files that changed since then yield the
    same facts as before (a comment, a docstring word, spacing within a line): findings
    are a function of the facts, never of the text around them. Line counts may differ:
    they only feed `lines_scanned`. None when anything else differs.

    `planned`: this run's extraction jobs; `now`: display path -> fact-cache key;
    `cache`: the fact cache; `extract`: job -> facts, for a changed file not cached yet."""
    if previous is None or cache is None:
        return None
    if now.keys() != previous.inputs.keys():
        return None  # a file added or removed
    changed = [job for job in planned if previous.inputs[job.display] != now[job.display]]
    if not changed or len(changed) > MAX_REEXAMINED:
        return None
    lines = previous.lines_scanned
    for job in changed:
        before = cache.get(previous.inputs[job.display])
        if before is None:
            return None
        after = cache.get(now[job.display])
        if after is None:
            after = extract(job)
            cache.put(now[job.display], after, light=is_light(job, after))  # the full build may reuse it
        before.path = after.path = job.display
        if dataclasses.replace(before, lines=0) != dataclasses.replace(after, lines=0):
            return None
        lines += after.lines - before.lines
    return dataclasses.replace(previous, lines_scanned=lines, inputs=now)
