"""CI adoption: --new-from-rev, --only-files, several outputs from one run, --jobs default.

Everything runs the real CLI on a copy of the demo's Python service inside a throw-away
git repository (adoption_support.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from adoption_support import ROOT, commit_all, copy_service, git, init_repo, set_defect
from da_cli_support import run_cli, sarif_schema
from deadline_audit import cli, extraction, pipeline
from deadline_audit.extract_cache import is_light


def findings_of(result) -> list[tuple[str, str, int]]:
    data = json.loads(result.output)
    return sorted((f["rule_id"], f["location"]["path"], f["location"]["line"]) for f in data["findings"])


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git repo whose HEAD holds the service with its one DA101 (llm.py:12)."""
    root = init_repo(copy_service(tmp_path / "repo"))
    commit_all(root, "service with a shadowed lease")
    monkeypatch.chdir(root)
    return root


NEW_CLIENT = '''"""A second client and its worker, added after the base revision."""

import openai

from service import settings
from service.lease import run_with_lease


class Drafter:
    def __init__(self) -> None:
        self.client = openai.AsyncOpenAI(
            base_url=settings.GATEWAY_URL,
            timeout=settings.MODEL_TIMEOUT,
        )

    async def draft(self, text: str) -> str:
        resp = await self.client.chat.completions.create(
            model="gpt-4.1-mini",
            messages=[{"role": "user", "content": text}],
        )
        return resp.choices[0].message.content


class DraftWorker:
    def __init__(self, drafter: Drafter) -> None:
        self.drafter = drafter

    async def handle(self, job: dict) -> str:
        return await run_with_lease(
            lambda: self.drafter.draft(job["text"]),
            lease_seconds=settings.LEASE_SECONDS,
        )
'''


# --- --new-from-rev -----------------------------------------------------------------------


def test_new_from_rev_reports_only_what_the_change_introduced(repo):
    llm = repo / "service" / "llm.py"
    # move the existing finding down three lines: same fingerprint, not new
    llm.write_text("# moved\n# down\n# three\n" + llm.read_text(encoding="utf-8"), encoding="utf-8")
    (repo / "service" / "drafts.py").write_text(NEW_CLIENT, encoding="utf-8")
    full = run_cli("check", "--format", "json")
    assert ("DA101", "service/llm.py", 15) in findings_of(full)
    new = [f for f in findings_of(full) if f[1] != "service/llm.py"]
    assert new, "the added client must be a finding for this test to mean anything"

    result = run_cli("check", "--format", "json", "--new-from-rev", "HEAD")
    assert result.exit_code == 1
    assert findings_of(result) == new
    assert json.loads(result.output)["summary"]["baselined"] == 1


def test_new_from_rev_is_clean_when_nothing_was_introduced(repo):
    assert run_cli("check").exit_code == 1
    result = run_cli("check", "--new-from-rev", "HEAD")
    assert result.exit_code == 0, result.output
    # a fix since REV is not a finding either
    set_defect(repo, False)
    assert run_cli("check", "--new-from-rev", "HEAD").exit_code == 0


def test_new_from_rev_flags_a_defect_introduced_after_a_clean_base(tmp_path, monkeypatch):
    root = init_repo(copy_service(tmp_path / "repo", defective=False))
    commit_all(root, "clean")
    set_defect(root, True)
    commit_all(root, "defect")
    monkeypatch.chdir(root)
    assert findings_of(run_cli("check", "--format", "json", "--new-from-rev", "HEAD~1")) == [
        ("DA101", "service/llm.py", 12)
    ]
    assert findings_of(run_cli("check", "--format", "json", "--new-from-rev", "HEAD")) == []


def test_new_from_rev_from_a_subfolder_with_paths(repo, monkeypatch):
    """Paths relative to a subfolder of the repository map to the same place at REV."""
    outer = repo.parent / "outer"
    outer.mkdir()
    shutil.move(str(repo / "service"), outer / "service")
    shutil.move(str(repo / ".env"), outer / ".env")
    (repo / "svc").mkdir()
    shutil.move(str(outer / "service"), repo / "svc" / "service")
    shutil.move(str(outer / ".env"), repo / "svc" / ".env")
    commit_all(repo, "move the service into svc/")
    (repo / "svc" / "service" / "drafts.py").write_text(NEW_CLIENT, encoding="utf-8")
    monkeypatch.chdir(repo / "svc")
    full = findings_of(run_cli("check", "service", ".env", "--format", "json"))
    result = run_cli("check", "service", ".env", "--format", "json", "--new-from-rev", "HEAD")
    assert findings_of(result) == [f for f in full if f[1] != "service/llm.py"]


def test_new_from_rev_reuses_the_fact_cache(repo, monkeypatch):
    """Only files that changed since REV are parsed a second time."""
    (repo / "service" / "drafts.py").write_text(NEW_CLIENT, encoding="utf-8")
    llm = repo / "service" / "llm.py"
    llm.write_text(llm.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    extracted: list[str] = []
    real = extraction.extract_one

    def counting(job, catalog):
        facts = real(job, catalog)
        if not is_light(job, facts):  # an empty __init__.py is never parsed
            extracted.append(job.display)
        return facts

    monkeypatch.setattr(extraction, "extract_one", counting)
    run_cli("check", "--jobs", "1")  # warms the cache for the working tree
    extracted.clear()
    run_cli("check", "--jobs", "1", "--new-from-rev", "HEAD")
    assert extracted == ["service/llm.py"]  # the REV version of the one edited file


def test_new_from_rev_never_writes_into_the_repository(repo):
    (repo / "service" / "drafts.py").write_text(NEW_CLIENT, encoding="utf-8")

    def snapshot():
        return sorted(
            (p.relative_to(repo).as_posix(), p.stat().st_mtime_ns)
            for p in (repo / ".git").rglob("*")
        )

    status = git(repo, "status", "--porcelain").stdout  # (git status itself refreshes the index)
    before = snapshot()
    run_cli("check", "--no-cache", "--new-from-rev", "HEAD")
    assert snapshot() == before
    assert git(repo, "status", "--porcelain").stdout == status


def test_new_from_rev_unknown_revision_is_a_usage_error(repo):
    result = run_cli("check", "--new-from-rev", "no-such-branch")
    assert result.exit_code == 2
    assert "no-such-branch" in result.output and "not a commit" in result.output


def test_new_from_rev_in_a_shallow_clone_says_so(repo, tmp_path, monkeypatch):
    set_defect(repo, False)
    commit_all(repo, "second")
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(clone)], check=True,
                   capture_output=True)
    monkeypatch.chdir(clone)
    result = run_cli("check", "--new-from-rev", "HEAD~1")
    assert result.exit_code == 2
    assert "shallow" in result.output and "fetch-depth: 0" in result.output


def test_new_from_rev_outside_a_repository_is_a_usage_error(tmp_path, monkeypatch):
    copy_service(tmp_path / "plain")
    monkeypatch.chdir(tmp_path / "plain")
    result = run_cli("check", "--new-from-rev", "HEAD")
    assert result.exit_code == 2 and "git repository" in result.output


def test_new_from_rev_agrees_with_a_baseline_written_at_rev(repo):
    run_cli("check", "--write-baseline", "baseline.json")
    (repo / "service" / "drafts.py").write_text(NEW_CLIENT, encoding="utf-8")
    with_baseline = findings_of(run_cli("check", "--format", "json", "--baseline", "baseline.json"))
    with_rev = findings_of(run_cli("check", "--format", "json", "--new-from-rev", "HEAD"))
    assert with_rev == with_baseline and with_rev


# --- --only-files --------------------------------------------------------------------------


def test_only_files_analyses_the_project_and_reports_findings_touching_the_files(repo, monkeypatch):
    # the finding is in llm.py; worker.py holds the lease (related), .env and settings.py the flow
    for touching in ("service/llm.py", "service/worker.py", ".env", "service/settings.py"):
        result = run_cli("check", "--format", "json", "--only-files", touching)
        assert findings_of(result) == [("DA101", "service/llm.py", 12)], touching
        assert result.exit_code == 1
    result = run_cli("check", "--only-files", "service/lease.py")
    assert result.exit_code == 0, result.output
    # run from a subfolder: the project is still the git top level, paths stay relative to the cwd
    monkeypatch.chdir(repo / "service")
    result = run_cli("check", "--format", "json", "--only-files", "worker.py")
    assert findings_of(result) == [("DA101", "llm.py", 12)]


def test_only_files_takes_positional_files_as_pre_commit_passes_them(repo):
    """pre-commit appends the file names after the hook's `args`: the entry ends with
    --only-files, the first name is its value and the others are PATHs."""
    result = run_cli("check", "--format", "json", "--only-files", "service/lease.py", "service/__init__.py", "service/llm.py")
    assert findings_of(result) == [("DA101", "service/llm.py", 12)]
    assert run_cli("check", "--only-files", "service/lease.py", "service/__init__.py").exit_code == 0


def test_only_files_batches_add_up_to_one_run(repo):
    files = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts)
    whole = findings_of(run_cli("check", "--format", "json"))
    seen = set()
    for i in range(0, len(files), 2):
        seen |= set(findings_of(run_cli("check", "--format", "json", "--only-files", *files[i:i + 2])))
    assert sorted(seen) == whole


def test_only_files_outside_a_repository_uses_the_current_directory(tmp_path, monkeypatch):
    copy_service(tmp_path / "plain")
    monkeypatch.chdir(tmp_path / "plain")
    assert findings_of(run_cli("check", "--format", "json", "--only-files", "service/worker.py")) == [
        ("DA101", "service/llm.py", 12)
    ]


# --- several outputs ------------------------------------------------------------------------


def test_one_run_writes_json_sarif_and_markdown_besides_the_main_format(repo):
    result = run_cli(
        "check", "--format", "github",
        "--json-output", "out/findings.json", "--sarif-output", "out/findings.sarif",
        "--markdown-output", "out/comment.md",
    )
    assert result.exit_code == 1
    assert result.output.startswith("::error")
    data = json.loads((repo / "out/findings.json").read_text(encoding="utf-8"))
    assert [f["location"]["path"] for f in data["findings"]] == ["service/llm.py"]
    sarif = json.loads((repo / "out/findings.sarif").read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0" and len(sarif["runs"][0]["results"]) == 1
    assert sarif["runs"][0]["results"][0]["partialFingerprints"]
    assert "DA101" in (repo / "out/comment.md").read_text(encoding="utf-8")
    jsonschema.validate(sarif, sarif_schema())


def test_extra_outputs_follow_the_filters(repo):
    run_cli("check", "--new-from-rev", "HEAD", "--json-output", "new.json", "--sarif-output", "new.sarif")
    assert json.loads((repo / "new.json").read_text(encoding="utf-8"))["findings"] == []
    assert json.loads((repo / "new.sarif").read_text(encoding="utf-8"))["runs"][0]["results"] == []


# --- --jobs -------------------------------------------------------------------------------------


def test_jobs_defaults_to_the_usable_cores(monkeypatch):
    import os

    if hasattr(os, "sched_getaffinity"):
        assert cli.usable_cores() == len(os.sched_getaffinity(0))
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert cli.usable_cores() == 3
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert cli.usable_cores() == 1


def test_check_uses_the_default_jobs(repo, monkeypatch):
    seen = []
    real = pipeline.analyse

    def spy(*args, **kwargs):
        seen.append(kwargs["jobs"])
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "analyse", spy)
    monkeypatch.setattr(cli, "usable_cores", lambda: 5)
    run_cli("check", "--no-cache")
    run_cli("check", "--no-cache", "--jobs", "1")
    assert seen == [5, 1]


def _json_without_timing(text: str) -> dict:
    data = json.loads(text)
    data["summary"].pop("elapsed_s", None)
    return data


@pytest.mark.parametrize("tree", ["demo", "generated"])
def test_parallel_results_equal_one_job(tree, tmp_path, monkeypatch):
    if tree == "demo":
        target = ROOT / "fixtures" / "demo"
    else:
        target = tmp_path / "gen"
        subprocess.run([sys.executable, str(ROOT / "bench" / "generate.py"), str(target), "--lines", "6000",
                        "--seed", "3"], check=True, capture_output=True)
    monkeypatch.chdir(target)
    one = run_cli("check", "--no-cache", "--jobs", "1", "--format", "json", "--exit-zero")
    two = run_cli("check", "--no-cache", "--jobs", "2", "--format", "json", "--exit-zero")
    assert one.exit_code == two.exit_code == 0
    assert _json_without_timing(one.output) == _json_without_timing(two.output)
    assert json.loads(one.output)["summary"]["files_scanned"] > 8  # enough files for the pool


def test_parallel_workers_write_the_cache(tmp_path, monkeypatch):
    """With --jobs 2 the workers write the cache entries; the next run parses nothing and
    reports the same."""
    target = tmp_path / "gen"
    subprocess.run([sys.executable, str(ROOT / "bench" / "generate.py"), str(target), "--lines", "3000",
                    "--seed", "4"], check=True, capture_output=True)
    monkeypatch.chdir(target)
    cold = run_cli("check", "--jobs", "2", "--format", "json", "--exit-zero")
    extracted = []
    real = extraction.extract_one
    monkeypatch.setattr(extraction, "extract_one", lambda job, catalog: extracted.append(job) or real(job, catalog))
    warm = run_cli("check", "--jobs", "1", "--format", "json", "--exit-zero")
    assert extracted == []
    assert _json_without_timing(cold.output) == _json_without_timing(warm.output)


def test_new_from_rev_again_answers_both_sides_from_the_run_cache(repo, monkeypatch):
    """REV is unpacked into a new temporary folder every run; its analysis is still the one
    cached the first time (the root counts relative to the working directory)."""
    (repo / "service" / "drafts.py").write_text(NEW_CLIENT, encoding="utf-8")
    first = run_cli("check", "--format", "json", "--new-from-rev", "HEAD")
    built = []
    real = pipeline._build
    monkeypatch.setattr(pipeline, "_build", lambda *a, **k: built.append(1) or real(*a, **k))
    again = run_cli("check", "--format", "json", "--new-from-rev", "HEAD")
    assert built == []
    assert findings_of(again) == findings_of(first) == [("DA101", "service/drafts.py", 13)]
