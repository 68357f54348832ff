"""Per-file fact cache (SPEC §7): facts keyed by content hash, tool version, facts
version, catalog fingerprint and the file's place (module / import path).

A warm run on an unchanged tree parses nothing: the graph is rebuilt from cached facts.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from deadline_audit import __version__
from deadline_audit.facts import FACTS_VERSION, FileFacts, from_json, to_json


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
            return from_json(self._file(key).read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError, KeyError):
            return None  # a missing or damaged entry is a miss, never an error

    def put(self, key: str, facts: FileFacts, text: str | None = None) -> None:
        """`text`: `to_json(facts)` when the caller has it already."""
        if any(p.message.startswith("internal error") for p in facts.problems):
            return  # an extractor failure is not a property of the file: retry next run
        target = self._file(key)
        try:
            if target.parent not in self._made:  # once per folder and process, not per entry
                target.parent.mkdir(parents=True, exist_ok=True)
                ignore = self.folder.parent / ".gitignore"
                if not ignore.exists():
                    ignore.write_text("*\n", encoding="utf-8")
                self._made.add(target.parent)
            fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text if text is not None else to_json(facts))
            os.replace(tmp, target)  # atomic: parallel runs never read half an entry
        except OSError:
            pass  # a read-only tree still gets analysed, just without a cache
