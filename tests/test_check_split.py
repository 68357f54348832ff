"""Checks split between the process and a fork of it (check_split.py): the same findings
in the same order as one process, errors of a check in the fork reported the same way."""

from __future__ import annotations

import os
import sys

import pytest

from analysis_support import FIXTURES
from da_cli_support import rule_registry  # noqa: F401
from deadline_audit import check_split, pipeline
from deadline_audit.config import load_config

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the split forks (Linux only)")


def findings(root, jobs):
    result = pipeline.analyse([root], load_config([root]), jobs=jobs, use_cache=False)
    return [(f.rule_id, f.location, f.message, f.related, f.flow) for f in result.findings], result


@pytest.mark.parametrize("tree", ["da401", "da201", "probe", "demo"])
def test_split_checks_report_what_one_process_reports(tree, monkeypatch):
    monkeypatch.setattr(check_split, "MIN_LINES", 0)  # fixtures are small: split them anyway
    sent, ran_here = [], []

    class Pool(check_split.ProcessPoolExecutor):
        def submit(self, fn, *args, **kwargs):
            sent.append(args[0])
            return super().submit(fn, *args, **kwargs)

    real = check_split._run_forked
    monkeypatch.setattr(check_split, "ProcessPoolExecutor", Pool)
    monkeypatch.setattr(check_split, "_run_forked", lambda rules: ran_here.append(os.getpid()) or real(rules))
    one, _ = findings(FIXTURES / tree, 1)
    assert sent == []
    split, _ = findings(FIXTURES / tree, 2)
    assert split == one and one
    assert len(sent) == 1 and "DA101" in sent[0] and "DA501" not in sent[0]  # DA501/502 stay here
    assert ran_here == []  # the spy's list lives in this process: the fork's appends never come back


def test_a_check_failing_in_the_fork_is_an_internal_error(monkeypatch, rule_registry):  # noqa: F811
    monkeypatch.setattr(check_split, "MIN_LINES", 0)

    def broken():
        raise RuntimeError("index out of sync")

    rule_registry("DA901", broken)
    _, result = findings(FIXTURES / "demo", 2)
    assert result.summary.internal_errors == 1
    assert any(e.message == "internal error in the DA901 check: RuntimeError: index out of sync"
               for e in result.errors)
    assert {f.rule_id for f in result.findings} >= {"DA101", "DA201", "DA502"}  # the others still report
