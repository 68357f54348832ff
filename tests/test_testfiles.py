"""Test code unless `include-tests`: read for the names it spells, never parsed.

fixtures/test_code/relay: a Go service whose lease keeper is renewed every 10 s for a
30 s TTL in production, and built with a 60 s period and a 1 s TTL by its test; env knobs
read by production (RELAY_DIAL_TIMEOUT), only by a Go test (RELAY_FLUSH_TIMEOUT via
`t.Setenv`), only by a Python test (WORKER_POLL_TIMEOUT via `monkeypatch.setenv`), and by
nothing (RELAY_DRAIN_TIMEOUT)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from analysis_support import FIXTURES, rule_findings

from deadline_audit import pipeline
from deadline_audit.config import load_config
from deadline_audit.extract.names import extract_names

TREE = "test_code/relay"


def _analyse(root, *, include_tests: bool, use_cache: bool = False):
    config = dataclasses.replace(load_config([root]), include_tests=include_tests)
    return pipeline.analyse([root], config, use_cache=use_cache)


def test_a_tests_values_do_not_decide_production_findings():
    result = _analyse(FIXTURES / TREE, include_tests=False)
    # only the knob nothing spells; no DA103 on the production ticker from the test's
    # 60 s period and 1 s TTL, and the knobs that only tests set are still alive
    assert sorted(rule_findings(result, "DA501") + rule_findings(result, "DA103")) == [
        ("DA501", f"{TREE}/.env", 3)]
    assert result.summary.files_scanned == 7


def test_with_include_tests_test_code_is_analysed_and_reported():
    result = _analyse(FIXTURES / TREE, include_tests=True)
    assert sorted(rule_findings(result, "DA501") + rule_findings(result, "DA103")) == [
        ("DA103", f"{TREE}/internal/lease/keeper.go", 24),  # the object the test builds
        ("DA501", f"{TREE}/.env", 3),
    ]


def test_test_files_keep_only_their_names():
    built = pipeline.build([FIXTURES / TREE], load_config([FIXTURES / TREE]), use_cache=False)
    by_name = {f.path.rsplit("/", 1)[-1]: f for f in built.facts}
    go_test, py_test, prod = by_name["keeper_test.go"], by_name["test_poll.py"], by_name["keeper.go"]
    assert (go_test.kind, go_test.functions, go_test.calls, go_test.bindings) == ("go", [], [], [])
    assert "RELAY_FLUSH_TIMEOUT" in go_test.config_keys_read and go_test.lines == 19
    assert (py_test.kind, py_test.functions, py_test.calls) == ("python", [], [])
    assert "WORKER_POLL_TIMEOUT" in py_test.config_keys_read
    assert prod.functions  # production code is parsed as ever
    ttl_from = {path.rsplit("/", 1)[-1] for _, path in
               built.graph.bindings["sym:go:example.com/relay/internal/lease.NewKeeper.ttl"]}
    assert ttl_from == {"main.go"}  # the production call only


def test_the_fact_cache_keeps_the_two_readings_apart(tmp_path):
    root = tmp_path / "relay"
    shutil.copytree(FIXTURES / TREE, root)
    first = _analyse(root, include_tests=False, use_cache=True)
    assert [f.rule_id for f in first.findings] == ["DA501"]
    full = _analyse(root, include_tests=True, use_cache=True)  # the names-only entries must not answer
    assert sorted(f.rule_id for f in full.findings) == ["DA103", "DA501"]
    again = _analyse(root, include_tests=False, use_cache=True)
    assert [f.rule_id for f in again.findings] == ["DA501"]


def test_names_are_the_literals_that_spell_a_name():
    go = b'''package x
import "testing"
type cfg struct { Lease string `env:"LEASE_TTL" yaml:"lease_ttl"` }
func TestX(t *testing.T) {
	t.Setenv("JOB_TIMEOUT", "1s")
	os.Setenv("CHILD", "WORKER_DEADLINE=5s")
	load("testdata/app.yaml")
	t.Log("not a name: has spaces")
}
'''
    facts = extract_names("x_test.go", "go", go, "example.com/x")
    # an import path counts too: one name more only makes DA501 quieter
    assert facts.config_keys_read == ["testing", "LEASE_TTL", "lease_ttl", "JOB_TIMEOUT", "CHILD", "WORKER_DEADLINE"]
    assert facts.config_files_named == ["testdata/app.yaml"]
    assert (facts.kind, facts.lines, facts.module) == ("go", 9, "example.com/x")
    py = b"def test_x(monkeypatch):\n    monkeypatch.setenv('POLL_TIMEOUT', '3')\n    assert f(\"a b\")\n"
    assert extract_names("tests/test_x.py", "python", py, "tests.test_x").config_keys_read == ["POLL_TIMEOUT"]


def test_a_broken_test_file_is_an_input_error_only_when_test_code_is_analysed(tmp_path):
    root = tmp_path / "relay"
    shutil.copytree(FIXTURES / TREE, root)
    (root / "internal" / "lease" / "keeper_test.go").write_text(
        'package lease\n\nfunc TestBroken(t *testing.T) {\n\tt.Setenv("RELAY_FLUSH_TIMEOUT", \n', encoding="utf-8")
    quiet = _analyse(root, include_tests=False)
    assert quiet.errors == [] and [f.rule_id for f in quiet.findings] == ["DA501"]  # the name still counts
    full = _analyse(root, include_tests=True)
    assert [(e.path.rsplit("/", 1)[-1], e.line) for e in full.errors] == [("keeper_test.go", 3)]


def test_test_paths_are_relative_to_the_root(tmp_path):
    # a project checked out under a folder named `tests` is not test code; its own tests/
    # and Go testdata/ are
    from deadline_audit.catalog import load_catalog
    from deadline_audit.testfiles import TestFiles

    root = tmp_path / "tests" / "proj"
    tests = TestFiles(load_catalog(), root)
    assert not tests.holds(root / "svc" / "jobs.py")
    assert tests.holds(root / "tests" / "unit" / "jobs.py")
    assert tests.holds(root / "pkg" / "parse" / "testdata" / "sample.go")
    assert tests.holds(root / "pkg" / "parse" / "parse_test.go")


def test_wiring_rules_ask_the_project_relative_question(tmp_path):
    # DA402's senders and receivers skip test code: under a `tests/` parent folder the
    # wiring findings are the same as in place
    copy = tmp_path / "tests" / "da402"
    shutil.copytree(FIXTURES / "da402", copy)
    here = pipeline.analyse([copy], load_config([copy]), use_cache=False)
    there = pipeline.analyse([FIXTURES / "da402"], load_config([FIXTURES / "da402"]), use_cache=False)

    def lines(result, base):
        return sorted((str(Path(f.location.path).resolve().relative_to(base.resolve())), f.location.line)
                      for f in result.findings if f.rule_id == "DA402")

    assert lines(here, copy) == lines(there, FIXTURES / "da402")
    assert len(lines(here, copy)) == 8


def test_test_suites_in_folders_named_for_tests(tmp_path):
    # Go test suites kept outside _test.go files, in a folder named for them
    from deadline_audit.catalog import load_catalog
    from deadline_audit.testfiles import TestFiles

    tests = TestFiles(load_catalog(), tmp_path)
    assert tests.holds(tmp_path / "common" / "persistence" / "persistence-tests" / "executionManagerTest.go")
    assert tests.holds(tmp_path / "integration_tests" / "flow.py")
    assert not tests.holds(tmp_path / "common" / "persistence" / "execution_manager.go")


def test_env_files_for_tests_are_test_code(tmp_path):
    from deadline_audit.catalog import load_catalog
    from deadline_audit.testfiles import TestFiles

    tests = TestFiles(load_catalog(), tmp_path)
    assert tests.holds(tmp_path / ".env.test") and tests.holds(tmp_path / "svc" / ".env.testing")
    assert not tests.holds(tmp_path / ".env") and not tests.holds(tmp_path / "deploy" / ".env.production")
