import pytest

from deadline_audit.extract.markdown import extract_markdown, is_config_key, is_env_name
from deadline_audit.facts import Span, from_json, to_json


def mentions(text):
    return [(m.name, m.span.line, m.span.column) for m in extract_markdown("README.md", text).knob_mentions]


def names(text):
    return [m[0] for m in mentions(text)]


def test_inline_code_spans_with_positions():
    text = (
        "# Configuration\n"
        "\n"
        "Set `MODEL_TIMEOUT` to `30m`; `MODEL_TIMEOUT` wins over `config.yaml`.\n"
        "> quoted `LEASE_RENEW_INTERVAL=10s` and `$WATCHDOG_PERIOD`, `${HEARTBEAT_TTL}`\n"
        "- item with `server.read_timeout` and ``lease_ttl``\n"
    )
    assert mentions(text) == [
        ("MODEL_TIMEOUT", 3, 6),
        ("MODEL_TIMEOUT", 3, 32),
        ("LEASE_RENEW_INTERVAL", 4, 11),
        ("WATCHDOG_PERIOD", 4, 43),
        ("HEARTBEAT_TTL", 4, 64),
        ("server.read_timeout", 5, 14),
        ("lease_ttl", 5, 41),
    ]
    span = extract_markdown("README.md", text).knob_mentions[0].span
    assert span == Span(3, 6, 3, 19)


def test_code_spans_that_are_code_are_not_knobs():
    text = (
        "Use `asyncio.timeout(5)`, `asyncio.wait_for`, `time.Second`, `http.Client.Timeout`,\n"
        "`config.yaml`, `example.com`, `v1.2.3`, `go`, `ctx.Done()`, `os.getenv(\"X\")`, `30m`.\n"
    )
    assert mentions(text) == []


def test_unicode_columns_are_code_points():
    assert mentions("Délai réglé par `MODEL_TIMEOUT`.\n") == [("MODEL_TIMEOUT", 1, 18)]


def test_tables_body_cells_not_headers():
    text = (
        "| NAME | DEFAULT | Meaning |\n"
        "|------|---------|---------|\n"
        "| LEASE_TTL | 90s | lease |\n"
        "| `HEARTBEAT_INTERVAL` | 10s | beat |\n"
        "| **server.write_timeout** | 5m | read_timeout_s vs timeout_s |\n"
        "| timeout_s | 1 | x |\n"
    )
    assert mentions(text) == [
        ("LEASE_TTL", 3, 3),
        ("HEARTBEAT_INTERVAL", 4, 4),
        ("server.write_timeout", 5, 5),
        ("timeout_s", 6, 3),
    ]


def test_env_and_shell_fences():
    text = (
        "```env\n"
        "A_TIMEOUT=1\n"
        "export B_TTL=2\n"
        "# C_DEADLINE=3\n"
        "lower=ignored\n"
        "```\n"
        "\n"
        "```bash\n"
        "$ docker run -e WATCHDOG_PERIOD -e X_TIMEOUT=5 img\n"
        "MODEL_TIMEOUT=1h ./run --flag=VALUE\n"
        "```\n"
    )
    assert mentions(text) == [
        ("A_TIMEOUT", 2, 1),
        ("B_TTL", 3, 8),
        ("C_DEADLINE", 4, 3),
        ("X_TIMEOUT", 9, 36),
        ("WATCHDOG_PERIOD", 9, 17),
        ("MODEL_TIMEOUT", 10, 1),
    ]


def test_yaml_and_toml_fences():
    text = (
        "```yaml\n"
        "server:\n"
        "  write_timeout: 5m   # comment\n"
        "  lease:\n"
        "    ttl: 30s\n"
        "services:\n"
        "  app:\n"
        "    environment:\n"
        "      MODEL_TIMEOUT: 30m\n"
        "    command:\n"
        "      - RETRY_TIMEOUT=5\n"
        "```\n"
        "```toml\n"
        "[model]\n"
        'timeout = "30m"\n'
        "lease.ttl = 90\n"
        "```\n"
    )
    assert mentions(text) == [
        ("server.write_timeout", 3, 3),
        ("server.lease.ttl", 5, 5),
        ("MODEL_TIMEOUT", 9, 7),
        ("RETRY_TIMEOUT", 11, 9),
        ("model.timeout", 15, 1),
        ("model.lease.ttl", 16, 1),
    ]
    spans = extract_markdown("d.md", text).knob_mentions
    assert spans[1].span == Span(5, 5, 5, 8)  # the leaf key `ttl`


@pytest.mark.parametrize("lang", ["go", "python", "sql", "js", "json", "dockerfile"])
def test_other_languages_are_ignored(lang):
    text = f"```{lang}\nMODEL_TIMEOUT=30\nos.Getenv(\"GO_TIMEOUT\")\ntimeout: 5\n```\n"
    assert mentions(text) == []


def test_unlabelled_fence_only_when_it_is_all_assignments():
    assert names("```\nPLAIN_TIMEOUT=1\n# note\nexport OTHER_TTL=2\n```\n") == ["PLAIN_TIMEOUT", "OTHER_TTL"]
    assert names("```\nrun it with PLAIN_TIMEOUT=1\n```\n") == []
    assert names("```text\nA_TIMEOUT=1\n```\n") == ["A_TIMEOUT"]
    assert names("    INDENTED_TIMEOUT=1\n") == []  # indented code: no info string, not read


def test_fence_info_with_attributes_and_unclosed_fence():
    text = '```yaml title="deploy/values.yaml"\nmodel:\n  timeout: 30m\n```\n'
    assert names(text) == ["model.timeout"]
    assert names("```env\nLAST_TIMEOUT=1\n") == ["LAST_TIMEOUT"]  # runs to the end of file


def test_html_and_empty_documents():
    assert mentions("") == []
    assert mentions("<div>`MODEL_TIMEOUT`</div>\n") == []
    facts = extract_markdown("docs/a.md", "\ufeffSee `MODEL_TIMEOUT`.\r\nAnd `LEASE_TTL`.\r\n")
    assert [(m.name, m.span.line, m.span.column) for m in facts.knob_mentions] == [
        ("MODEL_TIMEOUT", 1, 6),
        ("LEASE_TTL", 2, 6),
    ]
    assert facts.kind == "markdown" and facts.lines == 2
    assert from_json(to_json(facts)) == facts


@pytest.mark.parametrize("name", ["MODEL_TIMEOUT", "TIMEOUT", "A_B", "HTTP2_TTL"])
def test_env_names(name):
    assert is_env_name(name)


@pytest.mark.parametrize("name", ["TTL", "Model_Timeout", "model_timeout", "_X", "A"])
def test_not_env_names(name):
    assert not is_env_name(name)


@pytest.mark.parametrize("name", ["server.write_timeout", "lease_ttl", "jobs.0.timeout", "a-b.c"])
def test_config_keys(name):
    assert is_config_key(name)


@pytest.mark.parametrize("name", ["timeout", "asyncio.timeout", "config.yaml", "v1.2", "Server.Timeout", "self.timeout"])
def test_not_config_keys(name):
    assert not is_config_key(name)
