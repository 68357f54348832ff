"""DA401-DA403 with `components` and `[[links]]` from configuration (SPEC §6): a monorepo
whose control plane and runner only configuration tells apart, and links the wire field
names cannot find (a body sharing one key with the receiver, a renamed field)."""

from __future__ import annotations

import shutil

import pytest

from analysis_support import FIXTURES, analyse, finding_at, rule_findings
from deadline_audit import pipeline
from deadline_audit.config import ConfigError, Config, load_config

T = "da40x_config"
DA4 = ("DA401", "DA402", "DA403")


def _all(result) -> list[tuple[str, str, int]]:
    return sorted(f for rule in DA4 for f in rule_findings(result, rule))


def test_configured_components_name_both_ends_and_keep_the_runner_talking_to_itself_out():
    result = analyse(f"{T}/fleet")
    assert _all(result) == [
        # REINDEX_BUDGET_S = 3600 sent as timeout_sec, clamped by the runner at 45 min
        ("DA401", f"{T}/fleet/control/dispatch.py", 4),
        # the ping job leaves timeout_sec out: the runner falls back to 5 min
        ("DA402", f"{T}/fleet/control/dispatch.py", 13),
    ]
    # negatives: compact sends 2700 == the ceiling (dispatch.py:17); the runner's own retry
    # builds job.Job without TimeoutSec (retry.go:11) inside the runner component
    f = finding_at(result, "DA401", "control/dispatch.py")
    assert "from control" in f.message and "job.Job (runner)" in f.message and "45 min" in f.message
    g = finding_at(result, "DA402", "control/dispatch.py")
    assert "from control" in g.message and "(runner)" in g.message and "5 min" in g.message


def test_without_configuration_the_monorepo_is_one_component(tmp_path):
    tree = tmp_path / "fleet"
    shutil.copytree(FIXTURES / T / "fleet", tree)
    (tree / "pyproject.toml").unlink()
    result = pipeline.analyse([tree], load_config([tree]), use_cache=False)
    found = sorted((f.rule_id, f.location.path.split("/fleet/", 1)[1], f.location.line)
                   for f in result.findings if f.rule_id in DA4)
    # the retry inside the runner now looks like a send from another component
    assert found == [("DA401", "control/dispatch.py", 4), ("DA402", "control/dispatch.py", 13),
                     ("DA402", "runner/retry/retry.go", 11)]


def test_explicit_links_join_the_automatic_ones():
    result = analyse(f"{T}/archive")
    assert _all(result) == [
        # a function named as sender: its body shares only `deadline_seconds` with ExportOrder
        ("DA401", f"{T}/archive/portal/portal/exports.py", 9),
        # a model named as sender with field-map timeout -> wait_seconds: left at None
        ("DA402", f"{T}/archive/portal/portal/exports.py", 21),
    ]
    # negatives: the preview export sends 1800 under the 1 h ceiling (exports.py:11); the
    # audit entry (exports.py:16) has the same keys but its function is not a linked sender;
    # purge_tmp sends timeout=300 (exports.py:25)
    assert not result.errors
    f = finding_at(result, "DA401", "exports.py")
    assert "links[0] in pyproject.toml" in f.message and "orders.ExportOrder (worker)" in f.message
    assert "2 h" in f.message and "1 h" in f.message
    g = finding_at(result, "DA402", "exports.py")
    assert "links[1] in pyproject.toml" in g.message and "2 min" in g.message


def test_without_the_links_nothing_is_linked(tmp_path):
    tree = tmp_path / "archive"
    shutil.copytree(FIXTURES / T / "archive", tree)
    (tree / "pyproject.toml").unlink()
    result = pipeline.analyse([tree], load_config([tree]), use_cache=False)
    assert [f for f in result.findings if f.rule_id in DA4] == []


def test_a_glob_sender_with_keys(tmp_path):
    tree = tmp_path / "archive"
    shutil.copytree(FIXTURES / T / "archive", tree)
    (tree / "pyproject.toml").write_text(
        '[tool.deadline-audit]\n[[tool.deadline-audit.links]]\nsender = "portal/**"\n'
        'keys = ["requested_by"]\nreceiver = "ExportOrder"\n')
    result = pipeline.analyse([tree], load_config([tree]), use_cache=False)
    found = sorted((f.rule_id, f.location.line) for f in result.findings if f.rule_id in DA4)
    assert found == [("DA401", 9), ("DA401", 16)]  # every body with `requested_by` in portal/


def test_a_link_naming_nothing_is_reported_and_the_run_goes_on(tmp_path):
    tree = tmp_path / "archive"
    shutil.copytree(FIXTURES / T / "archive", tree)
    (tree / "pyproject.toml").write_text(
        '[tool.deadline-audit]\n[[tool.deadline-audit.links]]\nsender = "portal.exports.nowhere"\n'
        'receiver = "orders.Missing"\n')
    result = pipeline.analyse([tree], load_config([tree]), use_cache=False)
    messages = [e.message for e in result.errors]
    assert any("receiver `orders.Missing` names no struct" in m for m in messages)
    assert any("sender `portal.exports.nowhere` names no payload" in m for m in messages)


@pytest.mark.parametrize("entry, named", [
    ('{ sender = "a.f", receiver = "b.T", to = "x" }', "links[0].to"),
    ('{ sender = "a.f" }', "needs `receiver`"),
    ('{ sender = "a.f", receiver = "b.T", field-map = { timeout = 3 } }', "links[0].field-map"),
    ('{ sender = "svc/**", receiver = "b.T" }', "needs `keys`"),
    ('"a.f -> b.T"', "links[0]"),
])
def test_link_entries_are_validated(tmp_path, entry, named):
    (tmp_path / "pyproject.toml").write_text(f"[tool.deadline-audit]\nlinks = [{entry}]\n")
    with pytest.raises(ConfigError, match=named.replace("[", r"\[").replace("]", r"\]")):
        load_config([tmp_path])


def test_component_globs_are_relative_to_the_configuration_file():
    from deadline_audit.wire_config import WireConfig

    root = FIXTURES / T / "fleet"
    cfg = WireConfig.from_config(Config(root=root, components={"a": ["control/**"], "b": ["**/*.go"]}))
    assert cfg.component(str(root / "control" / "dispatch.py")) == "a"
    assert cfg.component(str(root / "runner" / "job" / "job.go")) == "b"
    assert cfg.component(str(root / "pyproject.toml")) is None


def test_the_exported_graph_names_the_configured_components():
    from analysis_support import build

    graph = build(f"{T}/fleet").graph.g
    sent = [(graph.nodes[a]["component"], graph.nodes[b]["component"])
            for a, b, data in graph.edges(data=True) if data.get("kind") == "sent_as"]
    assert sent and set(sent) == {("control", "runner")}
