"""Git, read-only: the project's top level, and a revision's tree in a temporary folder.

`--new-from-rev` and `--only-files` need to know where the repository starts; only
`--new-from-rev` needs an old tree. The old tree comes from `git archive REV` unpacked
into a temporary folder: nothing is written into the repository (no worktree, no
checkout, no index change), and the folder is removed afterwards.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path


class GitError(Exception):
    """Git is missing, the path is not in a repository, or the revision is unknown."""


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as e:
        raise GitError("git is not installed (needed by --new-from-rev)") from e


def toplevel(start: Path) -> Path | None:
    """The repository's top level holding `start` (a file or folder), or None."""
    start = start.resolve()
    folder = start if start.is_dir() else start.parent
    try:
        out = _git(["rev-parse", "--show-toplevel"], folder)
    except GitError:
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return Path(out.stdout.strip()).resolve()


def resolve_commit(top: Path, rev: str) -> str:
    """The commit id `rev` names, or a GitError saying why not (shallow clones included)."""
    if rev.startswith("-"):
        raise GitError(f"invalid revision {rev!r}")
    out = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], top)
    if out.returncode == 0 and out.stdout.strip():
        return out.stdout.strip()
    shallow = _git(["rev-parse", "--is-shallow-repository"], top).stdout.strip() == "true"
    hint = (
        " This is a shallow clone: fetch the history first (actions/checkout with"
        " `fetch-depth: 0`, or `git fetch --unshallow`)."
        if shallow
        else " Fetch it first (e.g. `git fetch origin main`) or name an existing commit."
    )
    raise GitError(f"revision {rev!r} is not a commit in {top}.{hint}")


@contextlib.contextmanager
def archived_tree(top: Path, commit: str) -> Iterator[Path]:
    """The files of `commit` in a temporary folder named like the top level (Python module
    names climb package folders, so the tree's own name matters when it is a package).
    An empty `.git` folder marks the tree's root for .gitignore lookups, as in the
    working tree."""
    scratch = Path(tempfile.mkdtemp(prefix="deadline-audit-rev-"))
    tree = scratch / top.name
    try:
        tree.mkdir()
        proc = subprocess.Popen(
            ["git", "archive", "--format=tar", commit], cwd=top, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert proc.stdout is not None
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as archive:
                _extract(archive, tree)
        except tarfile.TarError as e:
            proc.kill()
            raise GitError(f"cannot unpack `git archive {commit}`: {e}") from e
        finally:
            stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            proc.wait()
        if proc.returncode != 0:
            raise GitError(f"`git archive {commit}` failed: {stderr.strip()}")
        (tree / ".git").mkdir(exist_ok=True)
        yield tree
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _extract(archive: tarfile.TarFile, dest: Path) -> None:
    if hasattr(tarfile, "data_filter"):
        # no absolute paths, no links out of the tree: such members are skipped, not fatal
        def safe(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
            try:
                return tarfile.data_filter(member, path)
            except tarfile.FilterError:
                return None

        archive.extractall(dest, filter=safe)
        return
    for member in archive:  # pragma: no cover - Python without extraction filters
        target = (dest / member.name).resolve()
        if not target.is_relative_to(dest.resolve()) or member.issym() or member.islnk():
            continue
        archive.extract(member, dest)


@contextlib.contextmanager
def working_directory(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)
