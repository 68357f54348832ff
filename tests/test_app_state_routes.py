"""A FastAPI service whose settings and model live on `app.state` (set in the lifespan
handler, read through `request.app.state` in routes), a model Protocol whose
implementation streams, and clients posting to two routes that share one request model."""

from __future__ import annotations

from analysis_support import analyse, finding_at, rel, rule_findings


def test_settings_and_clients_reached_through_app_state():
    # fixtures/py_app_state: `min(body.budget_s or state.settings.stream_budget_s,
    # MAX_BUDGET_S)` with `state = request.app.state`: the 900 s default is cut at 600 s
    # (DA401); the budget bounds `model.stream(…)`, a Protocol method whose implementation
    # iterates a streamed completion (DA102). follow() posts to /v1/answer/stream without
    # budget_s (DA402); ask() posts the same model to /v1/answer, whose handler has no
    # fallback: silent.
    result = analyse("py_app_state")
    assert rule_findings(result, "DA401") == [("DA401", "py_app_state/answers/settings.py", 8)]
    assert rule_findings(result, "DA102") == [("DA102", "py_app_state/answers/app.py", 32)]
    assert rule_findings(result, "DA402") == [("DA402", "py_app_state/client/follow.py", 5)]
    stream = finding_at(result, "DA102", "answers/app.py", 32)
    assert "OpenAIModel.stream" in stream.message
    assert ("py_app_state/answers/models.py", 27) in [rel(r.location) for r in stream.related]
