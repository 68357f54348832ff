"""The per-file fact cache (SPEC §7): a warm run on an unchanged tree parses nothing and
reports the same findings; a changed file is extracted again."""

from __future__ import annotations

import json
import shutil

from analysis_support import FIXTURES
from deadline_audit import extraction, pipeline
from deadline_audit.extract_cache import is_light
from deadline_audit.config import load_config


def run(root):
    result = pipeline.analyse([root], load_config([root]), use_cache=True)
    return [(f.rule_id, f.location.path, f.location.line, f.message) for f in result.findings]


def test_warm_run_parses_nothing_and_reports_the_same(tmp_path, monkeypatch):
    root = tmp_path / "demo"
    shutil.copytree(FIXTURES / "demo", root, ignore=shutil.ignore_patterns(".deadline-audit-cache"))
    monkeypatch.chdir(tmp_path)
    cold = run(root)
    assert (root / ".deadline-audit-cache" / "facts").is_dir()

    def no_parsing(job, data, catalog):
        raise AssertionError(f"{job.display} was parsed on a warm run")

    monkeypatch.setattr(extraction, "_dispatch", no_parsing)
    assert run(root) == cold
    assert sum(f[0] in ("DA101", "DA201") for f in cold) == 4  # 3 DA101 (§1.1) + 1 DA201 (§1.2 legacy handler)
    assert [f[:3] for f in cold if f[0] == "DA502"] == [("DA502", "demo/engine/config/.env", 1)]  # 30m vs 120 s


def test_changed_file_is_extracted_again(tmp_path, monkeypatch):
    root = tmp_path / "demo"
    shutil.copytree(FIXTURES / "demo", root, ignore=shutil.ignore_patterns(".deadline-audit-cache"))
    monkeypatch.chdir(tmp_path)
    run(root)
    (root / "engine" / "config" / ".env").write_text("MODEL_TIMEOUT=4h\n", encoding="utf-8")
    parsed = []
    real = extraction._dispatch

    def counting(job, data, catalog):
        facts = real(job, data, catalog)
        if not is_light(job, facts):  # a file the prefilter passes over is not parsed
            parsed.append(job.display)
        return facts

    monkeypatch.setattr(extraction, "_dispatch", counting)
    findings = run(root)
    assert parsed == ["demo/engine/config/.env"]
    assert all("4 h" in message or "4h" in message or "240 min" in message or "14400" in message
               for rule, path, line, message in findings if path.endswith(".go") and rule == "DA101")


def test_no_cache_writes_nothing(tmp_path, monkeypatch):
    root = tmp_path / "demo"
    shutil.copytree(FIXTURES / "demo", root, ignore=shutil.ignore_patterns(".deadline-audit-cache"))
    monkeypatch.chdir(tmp_path)
    pipeline.analyse([root], load_config([root]), use_cache=False)
    assert not (root / ".deadline-audit-cache").exists()


# -- the whole-run cache (run_cache.py) ---------------------------------------------------

def copy_demo(tmp_path, monkeypatch):
    root = tmp_path / "demo"
    shutil.copytree(FIXTURES / "demo", root, ignore=shutil.ignore_patterns(".deadline-audit-cache"))
    monkeypatch.chdir(tmp_path)
    return root


def forbid_graph(monkeypatch):
    def no_graph(*args, **kwargs):
        raise AssertionError("the graph was built although nothing changed")

    monkeypatch.setattr(pipeline, "_build", no_graph)


def test_unchanged_tree_reuses_the_last_run_whole(tmp_path, monkeypatch):
    root = copy_demo(tmp_path, monkeypatch)
    cold = pipeline.analyse([root], load_config([root]), use_cache=True)
    cold_inventory = cold.knob_inventory()
    assert len(list((root / ".deadline-audit-cache" / "runs").glob("*.json"))) == 1
    forbid_graph(monkeypatch)
    warm = pipeline.analyse([root], load_config([root]), use_cache=True)
    assert warm.findings == cold.findings  # locations, flow, evidence and fingerprints alike
    assert warm.errors == cold.errors
    assert warm.summary.lines_scanned == cold.summary.lines_scanned
    assert warm.summary.files_scanned == cold.summary.files_scanned
    assert warm.knob_inventory() == cold_inventory  # saved with the entry once JSON asked


def test_any_input_or_option_change_is_a_fresh_analysis(tmp_path, monkeypatch):
    root = copy_demo(tmp_path, monkeypatch)
    before = run(root)
    assert [f[:3] for f in before if f[0] == "DA502"] == [("DA502", "demo/engine/config/.env", 1)]
    (root / "engine" / "config" / ".env").write_text("MODEL_TIMEOUT=120s\n", encoding="utf-8")  # drift fixed
    after = run(root)
    assert not [f for f in after if f[0] == "DA502"]
    assert [f for f in after if f[0] == "DA101"] and len(after) == len(before) - 1
    only_da101 = load_config([root]).with_overrides(select=["DA101"])
    selected = pipeline.analyse([root], only_da101, use_cache=True)
    assert {f.rule_id for f in selected.findings} == {"DA101"}


def test_damaged_run_entry_is_a_miss(tmp_path, monkeypatch):
    root = copy_demo(tmp_path, monkeypatch)
    cold = run(root)
    for entry in (root / ".deadline-audit-cache" / "runs").glob("*.json"):
        entry.write_text('{"findings": [{"rule_id": "DA101"}]', encoding="utf-8")
    assert run(root) == cold


def test_suppression_added_on_a_warm_tree_is_honoured(tmp_path, monkeypatch):
    root = copy_demo(tmp_path, monkeypatch)
    cold = run(root)
    rule, path, line, _ = next(f for f in cold if f[0] == "DA502")
    env = tmp_path / path
    lines = env.read_text(encoding="utf-8").splitlines()
    lines[line - 1] += f"  # deadline-audit: ignore[{rule}]"
    env.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert [f for f in run(root) if f[0] == "DA502"] == []


def test_edit_that_leaves_every_fact_alone_reuses_the_findings(tmp_path, monkeypatch):
    root = copy_demo(tmp_path, monkeypatch)
    cold = pipeline.analyse([root], load_config([root]), use_cache=True)
    llm = root / "service" / "service" / "llm.py"
    llm.write_text(llm.read_text(encoding="utf-8") + "\n# tuned for the batch window\n\n", encoding="utf-8")
    forbid_graph(monkeypatch)
    warm = pipeline.analyse([root], load_config([root]), use_cache=True)
    assert warm.findings == cold.findings
    assert warm.summary.lines_scanned == cold.summary.lines_scanned + 3  # a blank, the comment, a blank


def test_suppression_comment_on_an_unchanged_tree_of_facts_is_honoured(tmp_path, monkeypatch):
    root = copy_demo(tmp_path, monkeypatch)
    cold = run(root)
    assert ("DA101", "demo/service/service/llm.py", 12) in [f[:3] for f in cold]
    llm = root / "service" / "service" / "llm.py"
    lines = llm.read_text(encoding="utf-8").splitlines()
    lines[11] += "  # deadline-audit: ignore[DA101] the worker's lease is renewed"
    llm.write_text("\n".join(lines) + "\n", encoding="utf-8")
    forbid_graph(monkeypatch)  # the facts are the same: only the post-processing differs
    assert ("DA101", "demo/service/service/llm.py", 12) not in [f[:3] for f in run(root)]


def test_edit_that_moves_facts_is_analysed_afresh(tmp_path, monkeypatch):
    root = copy_demo(tmp_path, monkeypatch)
    cold = run(root)
    llm = root / "service" / "service" / "llm.py"
    llm.write_text("# a line on top moves every fact below it\n" + llm.read_text(encoding="utf-8"), encoding="utf-8")
    moved = run(root)
    assert ("DA101", "demo/service/service/llm.py", 13) in [f[:3] for f in moved]
    assert [f for f in moved if f[1] != "demo/service/service/llm.py"] == \
        [f for f in cold if f[1] != "demo/service/service/llm.py"]


def test_facts_got_without_a_parse_share_one_pack(tmp_path, monkeypatch):
    """A test file (names only) and a Python file the prefilter passes over cost less to
    get again than an entry costs to create: they share one pack file, written once per
    run; parsed files get an entry each. A warm run reads both, and extracts nothing."""
    root = tmp_path / "relay"
    shutil.copytree(FIXTURES / "test_code" / "relay", root)
    (root / "worker" / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    first = run(root)
    inputs = pipeline.gather([root], load_config([root]), use_cache=True)
    entries = {job.display.rsplit("/", 1)[-1] for i, job in enumerate(inputs.planned)
               if (inputs.cache.folder / f"{inputs.keys[i]}.json").is_file()}
    assert entries == {"keeper.go", "main.go", "poll.py", ".env", "go.mod"}
    pack = json.loads((inputs.cache.folder / "light.json").read_text(encoding="utf-8"))
    assert sorted(pack) == sorted(inputs.keys[i] for i, job in enumerate(inputs.planned)
                                  if job.display.rsplit("/", 1)[-1] in ("keeper_test.go", "test_poll.py", "__init__.py"))

    def no_extraction(job, catalog):
        raise AssertionError(f"{job.display} was extracted on a warm run")

    monkeypatch.setattr(extraction, "extract_one", no_extraction)
    built = pipeline.build([root], load_config([root]), use_cache=True)  # the graph from cached facts only
    assert {f.path.rsplit("/", 1)[-1] for f in built.facts} >= {"keeper_test.go", "test_poll.py", "__init__.py"}
    assert run(root) == first
