"""DA102 deadline-covers-stream on independent shapes of the defect, and on correct code."""

from __future__ import annotations

import shutil

from analysis_support import FIXTURES, analyse, finding_at, rel, rule_findings

from deadline_audit import pipeline
from deadline_audit.config import load_config


def da102(result):
    return rule_findings(result, "DA102")


def at(result, suffix: str):
    return finding_at(result, "DA102", suffix)


def test_go_shapes():
    # WriteTimeout (constant in another package) over a handler routed by a mux that a
    # function in another package builds, streaming through an SSE helper; a Client.Timeout
    # from an env layer on a client whose body a scanner reads; a WithTimeout around a body read loop
    result = analyse("da102/go")
    assert da102(result) == [
        ("DA102", "da102/go/cmd/relay/main.go", 17),
        ("DA102", "da102/go/internal/export/export.go", 14),
        ("DA102", "da102/go/internal/tail/tail.go", 17),
    ]
    server = at(result, "main.go")
    assert "WriteTimeout 120 s" in server.message and "routes.Handlers.Events" in server.message
    assert [rel(r.location) for r in server.related] == [("da102/go/internal/routes/routes.go", 30)]
    client = at(result, "tail.go")
    assert "http.Client.Timeout 45 s (compiled default 30 s)" in client.message
    assert [rel(r.location) for r in client.related] == [("da102/go/internal/tail/tail.go", 31)]
    assert client.flow[0].node == "env:TAIL_TIMEOUT"
    assert [rel(r.location) for r in at(result, "export.go").related] == [("da102/go/internal/export/export.go", 27)]


def test_go_single_server_fallback_when_the_mux_is_not_resolvable():
    result = analyse("da102/go_fallback")
    assert da102(result) == [("DA102", "da102/go_fallback/server.go", 27)]
    assert [rel(r.location) for r in result.findings[0].related] == [("da102/go_fallback/server.go", 19)]


def test_go_correct_shapes_are_silent():
    # a handler that lifts its deadline, non-streaming handlers, WriteTimeout: 0, a blocking
    # client with a total timeout, a streaming client with phase timeouts only, a
    # WithTimeout in a function that does not stream, a WithTimeout around NATS JetStream's
    # `js.Stream(ctx, name)` (a lookup of a stream resource, not a streamed read), a
    # WithTimeout made after a stream's Recv failed (replication/pump.go: not over the read),
    # a handler that asks an upstream for `text/event-stream` (Accept) and compares the
    # upstream's Content-Type with it, then answers with one JSON body (relay/relay.go)
    assert da102(analyse("da102/go_negatives")) == []


def test_python_shapes():
    result = analyse("da102/py")
    assert da102(result) == [
        ("DA102", "da102/py/feeds/client.py", 9),
        ("DA102", "da102/py/llm/stream.py", 10),
    ]
    feed = at(result, "client.py")
    assert "aiohttp.ClientTimeout.total 120 s (compiled default 60 s)" in feed.message
    assert [rel(r.location) for r in feed.related] == [("da102/py/feeds/client.py", 13)]
    assert feed.flow[0].node == "env:FEED_TOTAL_SECONDS"
    assert [rel(r.location) for r in at(result, "stream.py").related] == [("da102/py/llm/stream.py", 12)]


def test_python_correct_shapes_are_silent_in_the_same_tree():
    # blocking aiohttp read with total=, total=None with sock_read, an httpx read timeout
    # on a stream, asyncio.timeout around the connect only, a blocking call under a timeout
    result = analyse("da102/py")
    lines = {(f.location.path.rsplit("/", 1)[-1], f.location.line) for f in result.findings if f.rule_id == "DA102"}
    assert not {p for p, _ in lines} & {"download.py"}
    assert ("stream.py", 18) not in lines and ("stream.py", 36) not in lines


def test_go_handler_assigned_after_the_server_literal():
    # two servers in one module (no fallback): `public.Handler = mux` after the literal links
    # the 30 s WriteTimeout to an SSE handler routed on that mux; the internal server's
    # handler, assigned from a router builder, answers short JSON only: silent
    result = analyse("da102/go_assigned")
    assert da102(result) == [("DA102", "da102/go_assigned/cmd/gateway/main.go", 16)]
    f = at(result, "main.go")
    assert "WriteTimeout 30 s" in f.message and "events.Stream" in f.message
    assert [rel(r.location) for r in f.related] == [("da102/go_assigned/internal/events/events.go", 11)]


def test_python_implicit_session_total_and_wait_for_around_a_streaming_coroutine():
    # aiohttp.ClientSession() without timeout= relies on its 300 s total (catalog
    # implicit_default) and its response is iterated; asyncio.wait_for (env layer 600 s,
    # compiled 300 s) around a coroutine that streams; negatives in the same tree: the
    # implicit session of short JSON lookups, wait_for around a non-streaming coroutine
    result = analyse("da102/py_more")
    assert da102(result) == [
        ("DA102", "da102/py_more/ingest/events.py", 9),
        ("DA102", "da102/py_more/ingest/follow.py", 15),
    ]
    session = at(result, "events.py")
    assert "implicit total timeout 300 s" in session.message and "EventTail.tail" in session.message
    assert [rel(r.location) for r in session.related] == [("da102/py_more/ingest/events.py", 13)]
    waited = at(result, "follow.py")
    assert "asyncio.wait_for 10 min (compiled default 300 s)" in waited.message
    assert [rel(r.location) for r in waited.related] == [("da102/py_more/ingest/follow.py", 10)]
    assert waited.flow[0].node == "env:FOLLOW_BUDGET_SECONDS"


def test_go_sdk_client_built_from_a_config_that_holds_the_http_client():
    # go-openai: `cfg.HTTPClient = &http.Client{Timeout: 45 s}` then
    # `openai.NewClientWithConfig(cfg)`, returned by a helper into a struct field; the
    # field's CreateChatCompletionStream is cut at 45 s. The batch client (same bound) only
    # makes one-shot calls: silent.
    result = analyse("da102/go_sdk")
    assert da102(result) == [("DA102", "da102/go_sdk/internal/llm/client.go", 13)]
    f = at(result, "llm/client.go")
    assert "http.Client.Timeout 45 s" in f.message
    assert [rel(r.location) for r in f.related] == [("da102/go_sdk/internal/assist/assist.go", 26)]


def test_go_sdk_builders_are_catalog_data(tmp_path):
    # an SDK whose constructor does not follow Go's NewT naming: the client it builds from
    # the config holds nothing until the configuration names the builder
    root = tmp_path / "go_sdk"
    shutil.copytree(FIXTURES / "da102" / "go_sdk", root)
    client = root / "internal" / "llm" / "client.go"
    client.write_text(client.read_text().replace("openai.NewClientWithConfig(", "openai.ClientFromConfig("))

    def da102_lines():
        result = pipeline.analyse([root], load_config([root]), use_cache=False)
        return [(f.location.path.rsplit("/", 1)[-1], f.location.line) for f in result.findings if f.rule_id == "DA102"]

    assert da102_lines() == []
    (root / "deadline-audit.toml").write_text('[catalog.go.builders]\nnames = ["ClientFrom*"]\n')
    assert da102_lines() == [("client.go", 13)]


def test_go_sdk_client_bound_also_shadows_a_lease():
    # the batch client's 45 s (set in the SDK config) bounds a one-shot call made under a
    # two-minute turn lease: DA101 at the same site, through the same holder chain
    result = analyse("da102/go_sdk")
    assert rule_findings(result, "DA101") == [("DA101", "da102/go_sdk/internal/llm/client.go", 20)]
    f = finding_at(result, "DA101", "llm/client.go", 20)
    assert "45 s ≤ the lease 120 s" in f.message
    assert [rel(r.location) for r in f.related] == [("da102/go_sdk/internal/assist/lease.go", 42)]


def test_a_handler_object_served_by_a_mux():
    # fixtures/da102_handler_object: `events := relay.NewEvents(…)` (an *Events whose
    # ServeHTTP flushes server-sent events) registered with mux.Handle under a server with
    # a 30 s WriteTimeout: flagged. The internal server's handler is relay.Status{}, which
    # answers at once: silent.
    result = analyse("da102_handler_object")
    assert rule_findings(result, "DA102") == [("DA102", "da102_handler_object/cmd/relay/main.go", 26)]
    f = finding_at(result, "DA102", "cmd/relay/main.go", 26)
    assert [rel(r.location) for r in f.related] == [("da102_handler_object/relay/events.go", 19)]


def test_aiohttp_sessions_handed_to_a_helper_and_settings_built_by_a_classmethod():
    # fixtures/da102_session_param: MirrorClient keeps two sessions as fields and hands
    # each to `_copy`, which streams the body: the 120 s total one is flagged, the one
    # with total=None and sock_read is not. index.py: a session made in `async with` and
    # passed to a streaming reader (flagged) or to a JSON reader (silent). feed.py: the
    # total comes from `FeedSettings.from_env()`, a classmethod returning `cls(total_s=…)`.
    # events.py: anyio.fail_after(900) around a stream consumed by the helper `sse(resp)`:
    # flagged; a fail_after around a helper that reads JSON, a stream read after the scope
    # has closed, and a nightly job's budget over helpers that stream deeper down, are not.
    result = analyse("da102_session_param")
    assert da102(result) == [
        ("DA102", "da102_session_param/mirror/client.py", 20),
        ("DA102", "da102_session_param/mirror/events.py", 27),
        ("DA102", "da102_session_param/mirror/feed.py", 17),
        ("DA102", "da102_session_param/mirror/index.py", 22),
    ]
    events = at(result, "events.py")
    assert [rel(r.location) for r in events.related] == [("da102_session_param/mirror/events.py", 13)]
    feed = at(result, "feed.py")
    assert "90 s" in feed.message
    assert [rel(r.location) for r in feed.related] == [("da102_session_param/mirror/feed.py", 25)]
    assert any(step.node == "env:MIRROR_FEED_TOTAL_S" for step in feed.flow)


def test_a_write_timeout_read_through_viper_defaults_and_env_bindings():
    # fixtures/da102_viper: `WriteTimeout time.Duration mapstructure:"write_timeout"` under
    # `http`; viper gives http.write_timeout a 20 s SetDefault and binds it to
    # FEED_HTTP_WRITE_TIMEOUT (45s in .env): the public server's streaming /live handler is
    # cut at 45 s (flagged, with both values). The admin server's timeout defaults to 0.
    result = analyse("da102_viper")
    assert rule_findings(result, "DA102") == [("DA102", "da102_viper/internal/web/web.go", 38)]
    f = finding_at(result, "DA102", "web/web.go", 38)
    assert "45 s (compiled default 20 s)" in f.message


def test_a_zero_returned_on_a_failure_path_is_not_the_value_a_helper_gives():
    # fixtures/da102_parse_helper: parse(key, raw) returns `0, fmt.Errorf(…)` when raw does
    # not parse, else d: the public server's WriteTimeout is the file's 90s (flagged: its
    # /quotes handler streams). lenient(raw) returns 0 for an empty raw, a real "no
    # limit", so the internal server's value stays unresolved: not flagged.
    result = analyse("da102_parse_helper")
    assert rule_findings(result, "DA102") == [("DA102", "da102_parse_helper/internal/web/web.go", 33)]
    assert "WriteTimeout 90 s" in finding_at(result, "DA102", "web/web.go", 33).message


def test_a_response_body_handed_to_a_reader_is_streamed():
    # fixtures/da102_stream_reader: `async for event in _frames(resp.content)` reads the body
    # incrementally through a helper: the session's ClientTimeout(total=300) cuts the stream
    # (flagged at total=). snapshot reads its body whole with `await resp.read()`: not.
    result = analyse("da102_stream_reader")
    assert rule_findings(result, "DA102") == [("DA102", "da102_stream_reader/relay/events.py", 16)]


def test_a_scope_deadline_whose_value_is_a_default_or_a_config_value_covers_the_stream():
    # fixtures/da102_config_budget: `anyio.fail_after(self.conf.budget_s)` over a streamed
    # httpx download; budget_s is 300 by the dataclass default and 900 in config/tiles.toml,
    # two values but both a deadline: flagged at line 15. The probe's budget may be None
    # (no deadline) and is not set in the file: silent.
    result = analyse("da102_config_budget")
    assert rule_findings(result, "DA102") == [("DA102", "da102_config_budget/tiles/export.py", 15)]


def test_wait_for_over_a_helper_that_enters_a_handed_in_stream():
    # fixtures/da102_stream_helper: `_collect(stream_cm, out)` enters the stream manager it
    # is given (`async with stream_cm as stream`) and iterates `stream.text_stream`; reply
    # runs it under asyncio.wait_for(…, timeout=REPLY_BUDGET_S): the total deadline cuts
    # the stream (line 22). title's wait_for bounds a non-streamed create: silent.
    result = analyse("da102_stream_helper")
    assert rule_findings(result, "DA102") == [("DA102", "da102_stream_helper/assist/reply.py", 22)]


def test_a_deadline_given_as_a_typer_or_fastapi_parameter_default():
    # fixtures/py_param_defaults: `--stop-after` (typer.Option(900.0)) reaches
    # anyio.fail_after around a followed log stream through anyio.run(_follow, …);
    # `budget_s: float = Query(120.0)` bounds an archive streamed from another service.
    # Silent: `--gap` is only an httpx read (idle) timeout.
    result = analyse("py_param_defaults")
    assert da102(result) == [
        ("DA102", "py_param_defaults/tailer/api.py", 18),
        ("DA102", "py_param_defaults/tailer/cli.py", 29),
    ]
    assert "anyio.fail_after 15 min" in at(result, "tailer/cli.py").message


def test_a_write_timeout_read_by_a_viper_getter_under_automatic_env(tmp_path, monkeypatch):
    # fixtures/go_viper_getters: `WriteTimeout: v.GetDuration("web.write_timeout")` with
    # SetEnvPrefix("relay"), a "." -> "_" key replacer and AutomaticEnv: RELAY_WEB_WRITE_TIMEOUT
    # (3m in .env) wins over the YAML (45s) over SetDefault (30s). The server serves an SSE
    # handler: flagged with the env value; without the env file, the YAML's.
    result = analyse("go_viper_getters")
    assert da102(result) == [("DA102", "go_viper_getters/internal/web/server.go", 17)]
    assert "WriteTimeout 180 s (compiled default 30 s)" in at(result, "web/server.go").message
    # the env variable AutomaticEnv names is a knob: RELAY_INBOX_LEASE=30m in a deeper
    # layer against SetDefault's 1 min (not the YAML's 2m, a deployed value too) is DA502
    assert rule_findings(result, "DA502") == [("DA502", "go_viper_getters/deploy/local/.env", 1)]
    assert "30× larger than the compiled default 60 s" in finding_at(
        result, "DA502", "deploy/local/.env", 1).message
    root = tmp_path / "go_viper_getters"
    shutil.copytree(FIXTURES / "go_viper_getters", root)
    (root / ".env").unlink()
    monkeypatch.chdir(tmp_path)
    bare = pipeline.analyse([root], load_config([root]), use_cache=False)
    assert [f.message.split(" also")[0] for f in bare.findings if f.rule_id == "DA102"] == [
        "http.Server.WriteTimeout 45 s (compiled default 30 s)"]


def test_a_client_type_with_a_timed_and_a_streaming_constructor(tmp_path, monkeypatch):
    # fixtures/da102_two_constructors: store.Client has NewClient (Client.Timeout 20 s) and
    # NewStreamingClient (no Timeout); Lines streams through the receiver's `hc`, and the
    # only object it is called on was built by NewStreamingClient: silent. Handing the
    # exporter a NewClient instead puts the 20 s total over the stream: flagged.
    assert da102(analyse("da102_two_constructors")) == []
    root = tmp_path / "da102_two_constructors"
    shutil.copytree(FIXTURES / "da102_two_constructors", root)
    main = root / "cmd" / "exporter" / "main.go"
    main.write_text(main.read_text(encoding="utf-8").replace(
        "api.NewExporter(store.NewStreamingClient(", "api.NewExporter(store.NewClient("), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    timed = pipeline.analyse([root], load_config([root]), use_cache=False)
    assert [(f.rule_id, f.location.path, f.location.line) for f in timed.findings] == [
        ("DA102", "da102_two_constructors/internal/store/client.go", 18)]


def test_an_aiohttp_timeout_given_to_the_request_itself():
    # fixtures/da102_request_timeout: `session.get(url, timeout=ARCHIVE_TIMEOUT)` (a module
    # ClientTimeout with total=300) over `resp.content.iter_chunked`: flagged at the total.
    # Also a session made on first use by an accessor (`self._session_for_clips().get(url)`)
    # whose total covers iter_chunked (media.py). Silent: the change feed's timeout
    # (total=None, sock_read), a total over a JSON read, and the probe's accessor session.
    result = analyse("da102_request_timeout")
    assert da102(result) == [("DA102", "da102_request_timeout/harvest/limits.py", 3),
                             ("DA102", "da102_request_timeout/harvest/media.py", 15)]
    assert ("da102_request_timeout/harvest/pull.py", 9) in [rel(r.location) for r in
                                                           at(result, "harvest/limits.py").related]


def test_the_default_mux_is_one_per_program(tmp_path, monkeypatch):
    # fixtures/da102_two_programs: one Go module, two binaries on http.DefaultServeMux.
    # cmd/feed (WriteTimeout 15 s) imports internal/live, which registers a streaming
    # handler on the default mux: flagged, with that handler. cmd/console registers its own
    # streaming /tail and serves it with no write deadline: another process, so feed's
    # 15 s does not cover it (the related locations name live.go only). A library's
    # registrations stay with every program of the module: which programs import it is
    # not in the facts.
    result = analyse("da102_two_programs")
    assert da102(result) == [("DA102", "da102_two_programs/cmd/feed/main.go", 22)]
    f = at(result, "feed/main.go")
    assert [rel(r.location) for r in f.related] == [("da102_two_programs/internal/live/live.go", 16)]
    assert "console" not in f.message

    root = tmp_path / "da102_two_programs"
    shutil.copytree(FIXTURES / "da102_two_programs", root)
    shutil.rmtree(root / "internal")  # feed streams nothing of its own now
    feed = root / "cmd" / "feed" / "main.go"
    feed.write_text(feed.read_text(encoding="utf-8").replace("\tlive.Register()\n", "")
                    .replace('\t"example.com/ledgerline/internal/live"\n', ""), encoding="utf-8")
    console = root / "cmd" / "console" / "main.go"
    console.write_text(console.read_text(encoding="utf-8").replace(
        'Addr: ":9090", ReadHeaderTimeout', 'Addr: ":9090", WriteTimeout: 30 * time.Second, ReadHeaderTimeout'),
        encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    moved = pipeline.analyse([root], load_config([root]), use_cache=False)
    # console's own 30 s covers its own stream; feed's 15 s covers only /healthz
    assert [(f.rule_id, f.location.path, f.location.line) for f in moved.findings] == [
        ("DA102", "da102_two_programs/cmd/console/main.go", 29)]
    assert [(r.location.path, r.location.line) for r in moved.findings[0].related] == [
        ("da102_two_programs/cmd/console/main.go", 13)]


def test_each_inline_client_timeout_covers_its_own_session_only():
    # fixtures/da102_session_per_method: three methods each open
    # `aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout))`; two stream
    # the body (flagged, each with its own stream only), `complete` reads JSON (silent).
    # The three ClientTimeout expressions are identical: position tells them apart.
    result = analyse("da102_session_per_method")
    assert da102(result) == [
        ("DA102", "da102_session_per_method/llmhub/local_model.py", 14),
        ("DA102", "da102_session_per_method/llmhub/local_model.py", 22),
    ]
    assert [rel(r.location) for r in at(result, "local_model.py").related] == [
        ("da102_session_per_method/llmhub/local_model.py", 17)]
    second = finding_at(result, "DA102", "local_model.py", 22)
    assert [rel(r.location) for r in second.related] == [("da102_session_per_method/llmhub/local_model.py", 25)]
