"""A Go relay (fixtures/go_engine_objects) that exercises four things at once: settings
decoded from a JSON file through `json:` tags, two objects of one client type, a request
helper given the client per call, and map literals the relay sends to its own backend."""

from __future__ import annotations

from analysis_support import analyse, finding_at, rel, where


def test_exact_findings():
    # DA102: the server's WriteTimeout is `secs(fs.WriteTimeoutS)`, 600 from
    # config/relay.json (a struct whose other `json:` keys that file also holds), over the
    # SSE handler. DA101: the interactive client's 90 s equals the handler's lease. Silent:
    # the bulk client's 90 s cap (the interactive lease supervises the interactive object,
    # not NewBulk's); the streaming call, whose helper is handed the client without a total;
    # the backend payloads, map literals that share keys with the relay's own request type.
    result = analyse("go_engine_objects")
    assert sorted(where(f) for f in result.findings) == [
        ("DA101", "go_engine_objects/internal/upstream/client.go", 19),
        ("DA102", "go_engine_objects/cmd/relay/main.go", 29),
    ]
    stream = finding_at(result, "DA102", "cmd/relay/main.go", 29)
    assert "600 s" in stream.message or "10 min" in stream.message
    lease = finding_at(result, "DA101", "internal/upstream/client.go", 19)
    assert [rel(r.location) for r in lease.related] == [("go_engine_objects/internal/api/api.go", 64)]
