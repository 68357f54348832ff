"""DA402 silent-fallback-timeout across components (Python console -> Go vault agent, Go ops
-> Go vault agent, Python console -> Python indexer)."""

from __future__ import annotations

from analysis_support import analyse, finding_at, rel, rule_findings

T = "da402"


def test_every_send_that_leaves_the_receiver_to_its_fallback():
    result = analyse(T)
    assert rule_findings(result, "DA402") == [
        ("DA402", f"{T}/console/console/jobs.py", 20),  # dict built by a helper, key left out
        ("DA402", f"{T}/console/console/jobs.py", 33),  # dict with deadline_seconds = 0
        ("DA402", f"{T}/console/console/jobs.py", 37),  # pydantic model call: field defaults to None
        ("DA402", f"{T}/console/console/jobs.py", 50),  # Python -> Python: `req.timeout_s or 120`
        ("DA402", f"{T}/console/console/jobs.py", 58),  # Python -> Python: body.get("timeout_s", 300)
        ("DA402", f"{T}/ops/internal/vault/client.go", 40),  # Go literal, omitempty field left out
        ("DA402", f"{T}/ops/internal/vault/client.go", 48),  # Go literal, zero sent; cmp.Or fallback
        ("DA402", f"{T}/ops/internal/vault/client.go", 56),  # Go map literal without the key
    ]
    # negatives: the field always set (jobs.py:42 constant, :46 model keyword, :54 literal 900;
    # client.go:44, :52, :60 a map literal), a log dict sharing one key with the schema (jobs.py:25), an explicit 0
    # where the receiver falls back only on an absent key (`.get`, jobs.py:63)


def test_finding_names_the_fallback_value_and_where_it_is():
    result = analyse(T)
    f = finding_at(result, "DA402", "console/console/jobs.py", 33)
    assert "deadline_seconds" in f.message and "= 0" in f.message and "runs under 2 min" in f.message
    assert [rel(r.location) for r in f.related] == [(f"{T}/vault-agent/internal/task/task.go", 17),
                                                    (f"{T}/vault-agent/internal/task/task.go", 12)]
    restore = finding_at(result, "DA402", "ops/internal/vault/client.go", 48)
    assert "grace_seconds" in restore.message and "45 s" in restore.message


def test_graph_shows_wire_links_and_fallbacks():
    from analysis_support import build

    g = build(T).graph.g
    kinds = {d.get("kind") for _, _, d in g.edges(data=True)}
    assert {"sent_as", "received_as", "falls_back"} <= kinds
    roles = {d.get("role") for _, d in g.nodes(data=True)}
    assert {"wire_field", "fallback"} <= roles
    sent = [(u, v, d) for u, v, d in g.edges(data=True) if d.get("kind") == "sent_as"
            and u.endswith("console/console/jobs.py:33:18")]
    assert sent and all(d["field"] == "deadline_seconds" for _, _, d in sent)


def test_fallback_under_one_case_of_the_discriminator(tmp_path):
    """A fallback written under `case "restart":` applies to restart payloads only; the
    sender's file names no timeout at all (the prefilter still reads it: it sends JSON)."""
    from deadline_audit import pipeline
    from deadline_audit.config import load_config

    (tmp_path / "go.mod").write_text("module example.com/d\n\ngo 1.22\n")
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "cmd.go").write_text('''package agent

import "time"

type Command struct {
	Kind           string `json:"kind"`
	Target         string `json:"target"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

func (c Command) Budget() time.Duration {
	d := time.Duration(c.TimeoutSeconds) * time.Second
	switch c.Kind {
	case "restart":
		if d <= 0 {
			d = 30 * time.Second
		}
		return d
	default:
		return d
	}
}
''')
    (tmp_path / "send.py").write_text('''def restart(client, target):
    client.post("/c", json={"kind": "restart", "target": target})


def inspect(client, target):
    client.post("/c", json={"kind": "inspect", "target": target})
''')
    result = pipeline.analyse([tmp_path], load_config([tmp_path]), use_cache=False)
    assert [(f.location.path.rsplit("/", 1)[-1], f.location.line) for f in result.findings
            if f.rule_id == "DA402"] == [("send.py", 2)]


def test_a_cadence_field_that_falls_back_is_not_a_timeout():
    # ExportInput.timeout omitted -> 2 min fallback: DA402. TickerInput.interval omitted ->
    # 200 ms tick: a period between events, not a limit on the operation (seen on a real
    # workflow-samples tree, where "the operation runs under 200 ms" was reported).
    result = analyse("da402_cadence")
    assert rule_findings(result, "DA402") == [("DA402", "da402_cadence/cmd/submit/main.go", 21)]


def test_payloads_built_up_after_the_literal_and_objects_that_are_not_messages():
    # fixtures/da402_built_up: the portal sends the indexer's IndexJob (a dataclass) as JSON
    # dicts; the indexer's Worker is a plain class whose state is stored as a hash; ops
    # sends the agent's Job (Go) as a struct or a map, then sets fields on it
    result = analyse("da402_built_up")
    assert rule_findings(result, "DA402") == [
        ("DA402", "da402_built_up/ops/internal/agentclient/client.go", 39),  # sets Priority, not TimeoutSec
        ("DA402", "da402_built_up/ops/internal/agentclient/client.go", 62),  # adds "priority" to the map
        ("DA402", "da402_built_up/portal/portal/dispatch.py", 9),  # never sends timeout_s
        ("DA402", "da402_built_up/portal/portal/dispatch.py", 14),  # adds a key, not timeout_s
    ]
    # Go negatives: `j.TimeoutSec = budgetSec` after `&job{…}` (client.go:46) and
    # `body["timeout_sec"] = budgetSec` after the map literal (client.go:55); no payload sends
    # `progress`, whose Interval falls back to 1 s: a cadence inside the field, no budget
    # negatives: timeout_s set after the literal by subscript (:20, under an `if`),
    # `update(timeout_s=…)` (:27), `update({…})` (:33), `setdefault` (:39), `**defaults`
    # spread into the literal (:45); the worker's serialize() and the portal's announce()
    # share keys with Worker, whose fields are `self.x = …` state, not a message; no payload
    # sends buffer_seconds, which falls back to 0.5 s, but a buffer is a size, not a budget
    f = finding_at(result, "DA402", "portal/portal/dispatch.py", 9)
    assert "without `timeout_s`" in f.message and "2 min" in f.message
    assert [rel(r.location) for r in f.related] == [
        ("da402_built_up/indexer/indexer/jobs.py", 15), ("da402_built_up/indexer/indexer/jobs.py", 10)]


def test_nested_structs_empty_literals_and_fields_of_a_whole_struct_parameter():
    # fixtures/da402_nested (the shape of a real job scheduler): the executor falls back to
    # the node's 10 min default when Spec.Timeout is 0. Flagged: a Spec built without
    # Timeout (submit.go:16). Silent: `return model.Spec{}, err` and `&model.Job{}` filled by
    # Unmarshal (zero values, not sends); a Job literal without Spec (the nested struct's own
    # fields are judged where a Spec is built); the Resources literal handed to
    # NewConfig(Params{…}) (its fields never feed Params.DefaultJobTimeout, although the
    # whole Params value is bound to the parameter the fallback reads).
    result = analyse("da402_nested")
    assert rule_findings(result, "DA402") == [("DA402", "da402_nested/cli/submit.go", 16)]
    f = finding_at(result, "DA402", "cli/submit.go", 16)
    assert "without `timeout_seconds`" in f.message and "10 min" in f.message
    assert [rel(r.location) for r in f.related] == [
        ("da402_nested/node/executor.go", 17), ("da402_nested/model/job.go", 15)]


def test_keywords_forwarded_whole_by_a_kwargs_helper_are_a_payload():
    # fixtures/da402_kwargs_helper: `_command(**fields)` hands its keywords on whole to
    # `_post(body)` (json=body). recount sends timeout_seconds=0, which the agent's
    # `cmd.timeout_seconds or DEFAULT_COMMAND_TIMEOUT_S` turns into 2 min: flagged at the
    # call. sweep sends 1800: not.
    result = analyse("da402_kwargs_helper")
    assert rule_findings(result, "DA402") == [("DA402", "da402_kwargs_helper/store/store/agent_client.py", 19)]
    assert "falls back to 2 min" in finding_at(result, "DA402", "store/agent_client.py", 19).message


def test_a_python_receiver_that_returns_its_fallback():
    # fixtures/da402_returned_fallback: the worker's `if not job.timeout_s: return
    # FALLBACK_JOB_SECONDS` (a return, not an assignment) is the fallback; the feeder's
    # Rebuild job leaves TimeoutS out (omitempty): flagged at the struct literal, runs under
    # 90 s. Compact sends its budget: not.
    result = analyse("da402_returned_fallback")
    assert rule_findings(result, "DA402") == [("DA402", "da402_returned_fallback/feeder/internal/jobs/jobs.go", 25)]
    assert "falls back to 90 s" in finding_at(result, "DA402", "jobs/jobs.go", 25).message
