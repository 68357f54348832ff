"""`check --new-from-rev REV`: keep only findings whose fingerprint did not exist at REV.

REV's files are unpacked into a temporary folder (gitrev.archived_tree) and analysed with
the *same* configuration, mapped onto that tree:
- the paths to analyse, the configuration root and absolute env-file layers move to the
  same place under the old tree;
- the fact cache stays the working tree's (facts are keyed by content hash and the file's
  module, so every file unchanged since REV is a cache hit, not a parse);
- the run happens with the working directory moved to the same place in the old tree,
  so display paths, and with them fingerprint paths, are the same strings in both runs.
Fingerprints hash the path relative to the configuration root and the line's text, never
the line number, so a finding on code that merely moved is not new.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from deadline_audit import gitrev
from deadline_audit.config import Config
from deadline_audit.findings import Finding


def _moved(path: Path, top: Path, tree: Path) -> Path | None:
    """`path` (in the working tree) at the same place under `tree`; None when it is
    outside the repository."""
    try:
        return tree / path.resolve().relative_to(top)
    except ValueError:
        return None


def config_at(config: Config, top: Path, tree: Path) -> Config:
    root = _moved(config.root, top, tree) or config.root
    env_files = []
    for name in config.env_files:
        p = Path(name)
        env_files.append(str(_moved(p, top, tree) or p) if p.is_absolute() else name)
    return dataclasses.replace(
        config, root=root, env_files=env_files, cache_dir=str(config.cache_path().resolve())
    )


def fingerprints_at(rev: str, targets: list[Path], config: Config, *, jobs: int, use_cache: bool) -> set[str]:
    """The fingerprints of everything the analysis reports at `rev` (before any baseline).
    Raises gitrev.GitError when there is no repository or no such commit."""
    from deadline_audit import pipeline

    start = targets[0] if targets else Path(".")
    top = gitrev.toplevel(start if start.exists() else Path("."))
    if top is None:
        raise gitrev.GitError(f"--new-from-rev needs a git repository; {start.resolve()} is not in one")
    commit = gitrev.resolve_commit(top, rev)
    cwd = Path.cwd().resolve()
    with gitrev.archived_tree(top, commit) as tree:
        old_targets = [p for p in (_moved(t, top, tree) for t in targets) if p is not None and p.exists()]
        if not old_targets:
            return set()  # nothing analysed existed at REV: everything is new
        old_cwd = _moved(cwd, top, tree)
        if old_cwd is not None:
            old_cwd.mkdir(parents=True, exist_ok=True)
        with gitrev.working_directory(old_cwd or cwd):
            result = pipeline.analyse(old_targets, config_at(config, top, tree), jobs=jobs, use_cache=use_cache)
    return {f.fingerprint for f in result.findings}


def keep_new(findings: list[Finding], old: set[str]) -> tuple[list[Finding], int]:
    """Findings not present at REV, and how many were dropped."""
    kept = [f for f in findings if f.fingerprint not in old]
    return kept, len(findings) - len(kept)
