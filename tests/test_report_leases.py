"""Supervision arithmetic of the review on lease shapes written by other teams
(fixtures/report/leases): a Go watchdog with its own cap and an extension limit, a
Python crawl lease renewed without limit, a lease call wrapped in a retry loop, and a
lease whose duration the graph cannot resolve."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis_support import FIXTURES
from deadline_audit.config import load_config
from deadline_audit.report.review import analyse_for_review

ROOT = FIXTURES / "report" / "leases"


@pytest.fixture(scope="module")
def review():
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        return analyse_for_review([Path(".")], load_config([Path(".")]), use_cache=False)


@pytest.fixture(scope="module")
def budgets(review):
    return {(b.location.path, b.location.line): b for b in review.leases}


def test_every_lease_call_is_reviewed(budgets):
    assert sorted(k for k, b in budgets.items() if b.name != "activity heartbeat") == [("crawler/crawler/pages.py", 28), ("crawler/crawler/pages.py", 34),
                               ("dispatch/export/exporter.go", 26), ("dispatch/export/exporter.go", 31),
                               ("dispatch/export/exporter.go", 36), ("dispatch/export/exporter.go", 45)]
    assert sorted(k for k, b in budgets.items() if b.name == "activity heartbeat") == [
        ("crawler/crawler/sitemaps.py", 16), ("dispatch/flows/reconcile.go", 16)]


def test_extension_limit_caps_before_the_helpers_own_deadline(budgets):
    b = budgets[("dispatch/export/exporter.go", 26)]
    assert (b.ttl, b.renewals, b.cap, b.deadline, b.worst) == (300.0, 4.0, 1500.0, 1200.0, 1200.0)
    assert b.renewals_how == "extended >= extensionLimit in supervise.Watch"
    assert b.cap_how.startswith("L × (R + 1), before the helper's own cap (context.WithTimeout, line 16)")
    assert b.deadline_how == "context.WithTimeout (dispatch/export/exporter.go:53)"
    assert b.sentence == ("L 5 min, R 4, C 25 min, T 20 min, A 1 inside ⇒ at most 20 min; "
                          "renewals past 20 min never happen (at most 3 of R used).")


def test_unresolved_lease_duration_is_named(budgets):
    b = budgets[("dispatch/export/exporter.go", 31)]
    assert b.ttl is None
    assert (b.cap, b.cap_how) == (3600.0, "the helper's own cap (context.WithTimeout, line 16)")
    assert b.sentence.startswith("L unknown, R 4, C 1 h, T ∞, A 1 inside ⇒ at most 1 h")
    assert "not resolved: the lease duration L" in b.sentence


def test_unbounded_renewals_without_a_deadline_have_no_bound(budgets):
    b = budgets[("crawler/crawler/pages.py", 28)]
    assert b.renewals == float("inf") and b.cap == float("inf") and b.deadline == float("inf")
    assert b.renewals_how == "no bound on the renewals in crawler.keepalive.hold_lease"
    assert b.sentence.endswith("⇒ no bound found: no hard deadline on the supervised path, no cap in the helper, "
                               "and nothing limits the renewals.")


def test_retry_loop_outside_the_lease_multiplies_it(budgets):
    b = budgets[("crawler/crawler/pages.py", 34)]
    assert (b.deadline, b.attempts_inside, b.attempts_outside, b.worst) == (150.0, 1, 3, 450.0)
    assert b.outside == "a loop around the lease call (line 32) runs it 3 times"
    assert b.sentence.startswith("L 1 min, R ∞, C ∞, T 150 s, A 1 inside, 3 outside ⇒ at most 450 s plus backoff")


def test_timers_detect_only_inside_a_lease_helper(review):
    rows = {(r.path, r.line): (r.role, r.classification) for r in review.inventory}
    assert rows[("dispatch/supervise/watch.go", 22)] == ("timer", "detector")
    assert rows[("crawler/crawler/keepalive.py", 13)] == ("timer", "detector")
    assert rows[("dispatch/export/metrics.go", 10)][1] == "other"  # a metrics ticker supervises nothing
    assert rows[("dispatch/export/exporter.go", 53)] == ("context_deadline", "allocator")


def test_profiles_show_beside_the_compiled_default(review):
    row = next(r for r in review.inventory if (r.path, r.line) == ("crawler/crawler/pages.py", 23))
    (source,) = row.sources
    assert source.label == "FETCH_DEADLINE_SECONDS"
    # the knob inventory entry (the JSON `inventory`): no layer sets it, the production profile's value wins
    assert source.knob.settings == [("profile production: crawler/.env.production:2", "150", True),
                                     ("profile staging: crawler/.env.staging:1", "45", False)]
    assert source.knob.winning == "profile production: crawler/.env.production:2"
    assert [(sec, at) for sec, _, at in source.knob.defaults] == [(20.0, "crawler/crawler/pages.py:11")]
    assert (row.effective_seconds, row.default_seconds, row.winning) == (
        150.0, 20.0, "profile production: crawler/.env.production:2")
    assert source.chain == ["$FETCH_DEADLINE_SECONDS", "default 20 s", "crawler.pages.FETCH_DEADLINE", "asyncio.wait_for"]
    assert [(e.path, e.role, e.profile) for e in review.env_files] == [
        ("crawler/.env.production", "profile", "production"), ("crawler/.env.staging", "profile", "staging")]


def test_a_cut_picture_without_findings_draws_nothing(review, monkeypatch):
    from deadline_audit.report import review_graph

    monkeypatch.setattr(review_graph, "NODE_LIMIT", 3)
    drawn, files = review_graph.pictures(review, full_svg_stem="review")
    crawler = next(p for p in drawn if p.component == "crawler")
    assert crawler.cut and crawler.shown_nodes == 0 and crawler.svg is None
    assert "No site of this component carries a finding: nothing to draw here." in crawler.notes
    if review_graph.dot_available():
        assert crawler.full_svg_name == "review-crawler-graph.svg" and files[crawler.full_svg_name].startswith("<svg")


def test_configured_components_name_the_sites(review):
    by_path = {r.path: r.component for r in review.inventory}
    assert by_path["dispatch/supervise/watch.go"] == "supervisor"
    assert by_path["dispatch/export/exporter.go"] == "exporter"
    assert by_path["crawler/crawler/pages.py"] == "crawler"  # no glob matches: the folder names it
    assert by_path["dispatch/flows/reconcile.go"] == "workflows"
    assert set(review.components) == {"supervisor", "exporter", "workflows", "crawler", "(other files)"}


def test_a_renewal_calls_own_deadline_is_not_the_supervisors_cap(budgets):
    b = budgets[("dispatch/export/exporter.go", 36)]  # Hold: 2 s bounds each Renew, not the job
    assert (b.name, b.ttl, b.renewals, b.cap, b.deadline) == ("reindex", 90.0, float("inf"), float("inf"), float("inf"))


def test_a_go_counted_loop_around_the_lease_call(budgets):
    b = budgets[("dispatch/export/exporter.go", 45)]  # for attempt := 0; attempt < exportAttempts; attempt++
    assert (b.attempts_outside, b.worst) == (2, 2400.0)
    assert b.sentence.startswith("L 5 min, R 4, C 25 min, T 20 min, A 1 inside, 2 outside ⇒ at most 40 min plus backoff")


def test_temporal_heartbeat_with_a_retry_policy(budgets):
    b = budgets[("dispatch/flows/reconcile.go", 16)]
    assert (b.ttl, b.renewals, b.cap, b.attempts_outside, b.worst) == (30.0, float("inf"), 2400.0, 3, 7200.0)
    assert b.sentence == ("L 30 s, R ∞, C 40 min (StartToCloseTimeout), A 3 (maximum attempts 3) "
                          "⇒ at most 2 h plus backoff.")


def test_temporal_heartbeat_without_a_retry_policy_names_what_is_missing(budgets):
    b = budgets[("crawler/crawler/sitemaps.py", 16)]
    assert (b.ttl, b.cap, b.worst) == (20.0, 900.0, None)
    assert b.sentence.startswith("L 20 s, R ∞, C 15 min (StartToCloseTimeout) ⇒ one attempt at most 15 min; ")
    assert "missing the activity's RetryPolicy attempts (Temporal retries without limit by default)" in b.sentence


def test_loop_headers_give_their_counts():
    from deadline_audit.report.review_renewals import _go_loops, _py_loops

    go = (b"package x\n\nfunc f() {\n"
          b"\tfor attempt := 1; attempt <= maxAttempts; attempt++ {\n\t}\n"  # maxAttempts times
          b"\tfor i := 0; i < 3; i++ {\n\t}\n"  # 3 times
          b"\tfor i := first; i < 3; i++ {\n\t}\n"  # unknown start: unknown count
          b"\tfor range n {\n\t}\n}\n")
    assert [(bound, extra) for _, _, bound, extra in _go_loops(go, 3)] == [
        ("maxAttempts", 0), ("3", 0), (None, 0), ("n", 0)]
    py = (b"def f():\n    for a in range(1, 4):\n        pass\n    for a in range(n):\n        pass\n"
          b"    for a in range(s, 4):\n        pass\n    while True:\n        pass\n")
    assert [(bound, extra) for _, _, bound, extra in _py_loops(py, 1)] == [("4", -1), ("n", 0), (None, 0), (None, 0)]
