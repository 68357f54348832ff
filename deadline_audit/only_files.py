"""`check --only-files FILE…`: analyse the whole project, report what touches FILEs.

The timeout-flow graph spans files (a lease in one package, the deadline that shadows it
in another, its value in an env layer), so a pre-commit run on the staged files still
analyses the whole project (the git top level, or the current directory outside a
repository) and restricts only what is *reported*: a finding is kept when its primary
location, a related location or a step of its flow (env layers and defaults included)
is in one of the given files (or under a given folder). When pre-commit splits a long
file list into batches, each batch therefore reports its own findings, and together they
equal one run over all the files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from deadline_audit import gitrev
from deadline_audit.findings import Finding


def project_root(cwd: Path | None = None) -> Path:
    here = (cwd or Path.cwd()).resolve()
    return gitrev.toplevel(here) or here


def _absolute(path: str | Path, cwd: Path) -> Path:
    return Path(os.path.normpath(cwd / path)).resolve()


def finding_paths(finding: Finding) -> Iterator[str]:
    yield finding.location.path
    for rel in finding.related:
        yield rel.location.path
    for step in finding.flow:
        if step.location is not None:
            yield step.location.path
        if step.default_location is not None:
            yield step.default_location.path
        for layer in step.layers:
            yield layer.path


class ReportFilter:
    def __init__(self, files: Iterable[str | Path], cwd: Path | None = None) -> None:
        self.cwd = (cwd or Path.cwd()).resolve()
        self.files: set[Path] = set()
        self.folders: list[Path] = []
        for f in files:
            if not str(f):
                continue  # `--only-files=` (empty): the PATHs name the files (pre-commit)
            path = _absolute(f, self.cwd)
            if path.is_dir():
                self.folders.append(path)
            else:
                self.files.add(path)

    def touches(self, finding: Finding) -> bool:
        for display in finding_paths(finding):
            path = _absolute(display, self.cwd)
            if path in self.files or any(path.is_relative_to(d) for d in self.folders):
                return True
        return False

    def apply(self, findings: list[Finding]) -> tuple[list[Finding], int]:
        """The findings that touch the files, and how many were left out."""
        kept = [f for f in findings if self.touches(f)]
        return kept, len(findings) - len(kept)
