"""Per-file fact cache (SPEC §7): facts keyed by content hash, tool version, facts
version, catalog fingerprint and the file's place (module / import path).

A warm run on an unchanged tree parses nothing: the graph is rebuilt from cached facts.
Facts that took a parse get an entry (a file) each; facts got without one (a test file's
names, a Python file the prefilter passes over: `is_light`) share one pack file, written
once per run, since creating a file costs more here (~0.7 ms) than getting them again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from deadline_audit import __version__
from deadline_audit.facts import FACTS_VERSION, FileFacts, from_json, to_json


_LIGHT_PACK = "light.json"
_LIGHT_LIMIT = 50_000


def is_light(job, facts: FileFacts) -> bool:
    """Facts got without a parse: a test file's names only (extract/names.py), or a Python
    file the prefilter passes over (nothing but its line count)."""
    if getattr(job, "names_only", False):
        return True
    return job.kind == "python" and not (facts.decls or facts.functions or facts.problems)


def _extractor_fingerprint() -> str:
    """The extractors' own code is part of the key: facts from an older extractor (same
    version number, patched code) are never reused."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for source in sorted([here / "facts.py", *(here / "extract").glob("*.py")]):
        try:
            digest.update(source.read_bytes())
        except OSError:
            pass
    return digest.hexdigest()[:16]


class FactCache:
    def __init__(self, folder: Path, catalog_fingerprint: str) -> None:
        self.folder = folder / "facts"
        self.salt = f"{__version__}|{FACTS_VERSION}|{catalog_fingerprint}|{_extractor_fingerprint()}"
        self._made: set[Path] = set()
        self._light: dict[str, str] | None = None  # the pack: key -> facts JSON, read on first need
        self._light_hits: set[str] = set()
        self._light_new: dict[str, str] = {}

    def key(self, job) -> str | None:
        try:
            data = job.path.read_bytes()
        except OSError:
            return None
        digest = hashlib.sha256()
        digest.update(self.salt.encode())
        digest.update(f"|{job.kind}|{job.module}|{job.go_module}|{'names' if job.names_only else 'code'}|".encode())
        digest.update(data)
        return digest.hexdigest()

    def _file(self, key: str) -> Path:
        # one flat folder: a tree's few thousand entries need no fan-out, and each folder
        # made cost as much as an entry written (~1 ms here)
        return self.folder / f"{key}.json"

    def get(self, key: str) -> FileFacts | None:
        try:
            text = self._light_pack().get(key)
            if text is not None:
                self._light_hits.add(key)
                return from_json(text)
            return from_json(self._file(key).read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError, KeyError):
            return None  # a missing or damaged entry is a miss, never an error

    def put(self, key: str, facts: FileFacts, text: str | None = None, *, light: bool = False) -> None:
        """`text`: `to_json(facts)` when the caller has it already. `light`: kept for the
        pack, written by `flush`."""
        if any(p.message.startswith("internal error") for p in facts.problems):
            return  # an extractor failure is not a property of the file: retry next run
        if light:
            self._light_new[key] = text if text is not None else to_json(facts)
            return
        self._write(self._file(key), text if text is not None else to_json(facts))

    def flush(self) -> None:
        """Write the pack when this run added to it. It keeps what it held, unless it grew
        past `_LIGHT_LIMIT` entries: then only what this run read or added (edits make
        new keys; old ones are never read again)."""
        if not self._light_new:
            return
        pack = self._light_pack()
        if len(pack) + len(self._light_new) > _LIGHT_LIMIT:
            pack = {k: v for k, v in pack.items() if k in self._light_hits}
        pack.update(self._light_new)
        self._light, self._light_new = pack, {}
        self._write(self.folder / _LIGHT_PACK, json.dumps(pack, separators=(",", ":")))

    def _light_pack(self) -> dict[str, str]:
        if self._light is None:
            try:
                data = json.loads((self.folder / _LIGHT_PACK).read_text(encoding="utf-8"))
                self._light = data if isinstance(data, dict) else {}
            except (OSError, ValueError):
                self._light = {}
        return self._light

    def _write(self, target: Path, text: str) -> None:
        try:
            if target.parent not in self._made:  # once per folder and process, not per entry
                target.parent.mkdir(parents=True, exist_ok=True)
                ignore = self.folder.parent / ".gitignore"
                if not ignore.exists():
                    ignore.write_text("*\n", encoding="utf-8")
                self._made.add(target.parent)
            fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, target)  # atomic: parallel runs never read half an entry
        except OSError:
            pass  # a read-only tree still gets analysed, just without a cache
