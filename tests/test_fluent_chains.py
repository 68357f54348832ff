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
