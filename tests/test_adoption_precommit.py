"""The pre-commit hook, run by the real `pre-commit` package.

pre-commit installs the hook's own virtualenv with pip from a git checkout of this
repository, so the tests first commit a copy of the current working tree (tracked and
untracked, minus ignored files) into a temporary repository: uncommitted changes are what
is tested. Each `try-repo` installs that environment anew (pip, ~10 s); everything lives
under a temporary PRE_COMMIT_HOME.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from adoption_support import ROOT, commit_all, copy_service, git, git_env, init_repo, set_defect


def _pre_commit(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = git_env()
    env["PRE_COMMIT_HOME"] = str(home)
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def hook_checkout(tmp_path_factory) -> tuple[Path, str]:
    """This working tree, committed into a temporary repository: (path, commit)."""
    pytest.importorskip("pre_commit")  # declared in the test extras; the import is the check
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, env=git_env())
    if listed.returncode != 0:
        pytest.skip("the source tree is not a git checkout")
    checkout = tmp_path_factory.mktemp("hook") / "deadline-audit"
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, checkout / name)
    init_repo(checkout)
    return checkout, commit_all(checkout, "snapshot of the working tree")


@pytest.fixture
def project(tmp_path) -> Path:
    """A git repository holding the demo's Python service (one DA101 in service/llm.py)."""
    root = init_repo(copy_service(tmp_path / "project"))
    (root / "service" / "clean.py").write_text('"""Nothing about timeouts here."""\n\nVERSION = "1"\n',
                                               encoding="utf-8")
    commit_all(root, "service")
    return root


def test_try_repo_fails_on_a_defective_tree_and_passes_on_a_clean_file(hook_checkout, project, tmp_path):
    checkout, _ = hook_checkout
    home = tmp_path / "pre-commit-home"
    every = _pre_commit(["try-repo", str(checkout), "deadline-audit", "--all-files"], project, home)
    assert every.returncode == 1, every.stdout + every.stderr
    assert "service/llm.py:12:13  DA101 shadowed-lease" in every.stdout
    # the same tree, reporting on a file no finding touches: the analysis still spans the
    # project, and nothing is reported
    one = _pre_commit(["try-repo", str(checkout), "deadline-audit", "--files", "service/clean.py"], project, home)
    assert one.returncode == 0, one.stdout + one.stderr
    assert "Passed" in one.stdout


def test_the_hook_refuses_a_commit_that_introduces_a_defect(hook_checkout, tmp_path):
    checkout, commit = hook_checkout
    home = tmp_path / "pre-commit-home"
    root = init_repo(copy_service(tmp_path / "app", defective=False))
    (root / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        f"  - repo: {checkout}\n"
        f"    rev: {commit}\n"
        "    hooks:\n"
        "      - id: deadline-audit\n"
        "        args: [--fail-on, warning]\n",
        encoding="utf-8",
    )
    installed = _pre_commit(["install"], root, home)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    def commit(message: str) -> subprocess.CompletedProcess:
        git(root, "add", "-A")
        env = git_env()
        env["PRE_COMMIT_HOME"] = str(home)
        return subprocess.run(["git", "commit", "-q", "-m", message], cwd=root, env=env,
                              capture_output=True, text=True, timeout=600)

    first = commit("clean service")
    assert first.returncode == 0, first.stdout + first.stderr

    set_defect(root, True)
    llm = root / "service" / "llm.py"
    llm.write_text(llm.read_text(encoding="utf-8") + "\n# summaries for the digest\n", encoding="utf-8")
    refused = commit("client timeout from the settings")
    assert refused.returncode != 0
    assert "DA101" in refused.stdout + refused.stderr
    assert git(root, "rev-list", "--count", "HEAD").stdout.strip() == "1"

    set_defect(root, False)
    fixed = commit("client timeout from the settings, above the lease")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert git(root, "rev-list", "--count", "HEAD").stdout.strip() == "2"
