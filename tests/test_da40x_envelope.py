"""DA402/DA403 on an envelope whose budget is nested, and on a sender's own unit arithmetic."""

from __future__ import annotations

from analysis_support import analyse, finding_at, rel, rule_findings

T = "da40x_envelope"


def test_an_envelope_matching_its_own_struct_is_not_a_send_of_a_sibling_without_its_timeout_and_forwarded_keywords_are():
    # payloads.mirror() sends {"kind", "job_id", "spec"}: MirrorRequest has all three keys
    # (its budget-free spec is nested), so it is not a ReindexRequest sent without
    # timeout_ms, though it shares kind and job_id with it. reindex() sends timeout_ms.
    # client.submit(kind, **fields) posts {"kind": kind, **fields}: each call is a payload
    # at the call; reindex_products() sends no timeout_ms (the crawler falls back to its
    # 10 min default): flagged; reindex_orders() sends one: silent.
    # payloads.scan() sends no budget_seconds to a ScanRequest whose Budget() keeps its
    # 15 min default unless `r.BudgetSeconds > 0` (`d := defaultScan; if … { d = … }`):
    # flagged; deep_scan() sends one: silent.
    result = analyse(T)
    # payloads.probe() sends no within_ms to ProbeRequest.Deadline, whose default is
    # assigned two statements before the `if r.WithinMs > 0` guard: flagged.
    assert rule_findings(result, "DA402") == [
        ("DA402", f"{T}/console/console/client.py", 32),
        ("DA402", f"{T}/console/console/payloads.py", 29),
        ("DA402", f"{T}/console/console/payloads.py", 37),
    ]
    assert "timeout_ms" in finding_at(result, "DA402", "client.py", 32).message
    scan = finding_at(result, "DA402", "payloads.py", 29)
    assert "budget_seconds" in scan.message and "15 min" in scan.message


def test_seconds_times_ns_per_second_is_sent_in_nanoseconds():
    # stop() sends int(grace.total_seconds() * NS_PER_S) into the time.Duration `grace`:
    # nanoseconds, as encoding/json decodes them (silent). hold() sends seconds into the
    # time.Duration `linger`: flagged at the receiving field.
    result = analyse(T)
    assert rule_findings(result, "DA403") == [("DA403", f"{T}/crawler/internal/api/requests.go", 37)]
    f = finding_at(result, "DA403", "requests.go", 37)
    assert [rel(r.location) for r in f.related] == [(f"{T}/console/console/payloads.py", 25)]
