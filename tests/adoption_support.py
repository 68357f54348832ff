"""Test support for the CI / pre-commit features: throw-away git repositories holding a
copy of the demo's Python service (one DA101 finding, with a clean variant)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVICE = ROOT / "fixtures" / "demo" / "service"
# The demo's client timeout equals the lease (DA101); eight times the lease does not.
DEFECT = "timeout=settings.MODEL_TIMEOUT,"
FIXED = "timeout=settings.MODEL_TIMEOUT * 8,"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_ENV)
    env["HOME"] = env.get("HOME", "/tmp")
    return env


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=repo, capture_output=True, text=True, env=git_env(), check=check,
    )


def copy_service(dest: Path, *, defective: bool = True) -> Path:
    shutil.copytree(SERVICE, dest, ignore=shutil.ignore_patterns(".deadline-audit-cache", "__pycache__"))
    if not defective:
        set_defect(dest, False)
    return dest


def set_defect(tree: Path, defective: bool) -> None:
    llm = tree / "service" / "llm.py"
    text = llm.read_text(encoding="utf-8")
    old, new = (FIXED, DEFECT) if defective else (DEFECT, FIXED)
    llm.write_text(text.replace(old, new), encoding="utf-8")


def init_repo(repo: Path) -> Path:
    git(repo, "init", "-q")
    (repo / ".gitignore").write_text(".deadline-audit-cache/\n", encoding="utf-8")
    return repo


def commit_all(repo: Path, message: str = "c") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").stdout.strip()
