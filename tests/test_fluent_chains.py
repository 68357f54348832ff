"""A long fluent chain on a receiver whose type is unknown (a builder from another
library, `client.job(…).create().environment_variable(…)…` fifty times, as workflow SDKs
write Kubernetes specs) must cost the type resolution a bounded amount of work. The call
graph's dispatch once restarted the depth budget of `type_of` at every link, and the work
doubled per link: a 13 MB real tree never finished."""

from __future__ import annotations

from deadline_audit import pipeline
from deadline_audit.config import load_config
from deadline_audit.graph import TimeoutGraph


def _builder_tree(root, links: int) -> None:
    chain = "".join(f'\n        .environment_variable("K{i}", {i})' for i in range(links))
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "launch.py").write_text(f'''"""Launch a job through a builder client."""

import os
import time


def build(client, name):
    job = (
        client.job(name, timeout=int(os.environ.get("JOB_TIMEOUT", "600")))
        .create(){chain}
    )
    time.sleep(job.timeout)
    return job
''')


def test_type_resolution_over_a_long_unresolvable_chain_is_bounded(tmp_path, monkeypatch):
    _builder_tree(tmp_path, 40)
    asked = {"n": 0}
    original = TimeoutGraph.type_of

    def counting(self, *args, **kwargs):
        asked["n"] += 1
        if asked["n"] > 200_000:  # the old doubling: stop instead of hanging the suite
            raise RuntimeError("type_of asked more than 200,000 times")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(TimeoutGraph, "type_of", counting)
    config = load_config([tmp_path])
    result = pipeline.build([tmp_path], config, use_cache=False)
    pipeline.run_checks(result, config)
    assert not result.errors
    assert asked["n"] < 50_000


def _rebinding_tree(root, rounds: int) -> None:
    """A Go function that rebinds two contexts from each other again and again
    (`a = context.WithValue(b, …)`, `b = context.WithValue(a, …)`), then records how a job
    ended with one of them: a symbol met again at an earlier line is no cycle."""
    steps = "".join(f"\n\ta = context.WithValue(b, key{{}}, {i})\n\tb = context.WithValue(a, key{{}}, {i})"
                    for i in range(rounds))
    (root / "go.mod").write_text("module example.com/rebind\n\ngo 1.22\n")
    (root / "jobs").mkdir()
    (root / "jobs" / "jobs.go").write_text(f'''package jobs

import (
	"context"
	"net/http"
)

type key struct{{}}

type Store interface {{
	FinishJob(ctx context.Context, id string) error
}}

func Finish(w http.ResponseWriter, r *http.Request, s Store) {{
	a := r.Context()
	b := a{steps}
	_ = s.FinishJob(b, r.URL.Query().Get("id"))
}}
''')


def test_a_few_rebindings_still_reach_the_request_context(tmp_path):
    # (the context walk revisits a symbol only at a strictly earlier line, within a budget
    # of symbols per query: keyed by line alone, it never finished on cadence's 1.2M lines)
    _rebinding_tree(tmp_path, 5)
    result = pipeline.analyse([tmp_path], load_config([tmp_path]), use_cache=False)
    assert [(f.rule_id, f.location.line) for f in result.findings] == [("DA201", 27)]
