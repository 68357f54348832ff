import time

import pytest

from deadline_audit.extract.configfile import MAX_YAML_NODES, extract_json, extract_toml, extract_yaml
from deadline_audit.facts import Span, from_json, to_json


def table(facts):
    return {v.key: (v.raw, v.span.line, v.span.column, v.is_number) for v in facts.config_values}


# --- YAML -------------------------------------------------------------------------------

SERVICE_YAML = """\
# service settings
server:
  write_timeout: 5m
  read_timeout: "30s"
model:
  timeout: 1800
  lease:
    ttl: 2.5
    renew_every: 'PT1M'
workers:
  - name: backup
    timeout: 90m
  - 42
"""


def test_yaml_keys_values_and_positions():
    facts = extract_yaml("config/service.yaml", SERVICE_YAML)
    assert facts.kind == "yaml" and facts.lines == 13 and facts.problems == []
    assert table(facts) == {
        "server.write_timeout": ("5m", 3, 18, False),
        "server.read_timeout": ("30s", 4, 17, False),
        "model.timeout": ("1800", 6, 12, True),
        "model.lease.ttl": ("2.5", 8, 10, True),
        "model.lease.renew_every": ("PT1M", 9, 18, False),
        "workers.0.name": ("backup", 11, 11, False),
        "workers.0.timeout": ("90m", 12, 14, False),
        "workers.1": ("42", 13, 5, True),
    }
    span = next(v.span for v in facts.config_values if v.key == "server.read_timeout")
    assert span == Span(4, 17, 4, 22)  # the quoted scalar, quotes included


def test_yaml_anchors_and_merge_keys():
    text = "defaults: &d\n  timeout: 30s\n  retries: 3\nsvc:\n  <<: *d\n  timeout: 1m\n"
    facts = extract_yaml("c.yaml", text)
    assert table(facts)["svc.timeout"] == ("1m", 6, 12, False)  # explicit key wins
    assert table(facts)["svc.retries"] == ("3", 3, 12, True)  # points at the anchor


def test_yaml_multi_document_and_unicode_columns():
    text = "a: 1\n---\nnamé: {tïmeout: 5s}\n"
    facts = extract_yaml("c.yaml", text)
    assert table(facts) == {"a": ("1", 1, 4, True), "namé.tïmeout": ("5s", 3, 17, False)}


def test_yaml_no_object_construction():
    facts = extract_yaml("c.yaml", "cmd: !!python/object/apply:os.system ['echo pwned']\nt: 1\n")
    # composing only: the tag is kept on a node, nothing is called
    assert table(facts)["t"] == ("1", 2, 4, True)
    assert "cmd.0" in table(facts)


@pytest.mark.parametrize(
    "text, line, column, fragment",
    [
        ("a: b: c\n", 1, 5, "mapping values are not allowed here"),
        ("a: [1, 2\nb: 3\n", 2, 2, "expected ',' or ']'"),
        ("ok: 1\nkey: 'unterminated\n", 3, 1, "found unexpected end of stream"),
        ("a:\n\tb: 1\n", 2, 1, "found character '\\t' that cannot start any token"),
    ],
)
def test_yaml_malformed(text, line, column, fragment):
    facts = extract_yaml("bad.yaml", text)
    assert facts.config_values == []
    [problem] = facts.problems
    assert (problem.line, problem.column) == (line, column)
    assert fragment in problem.message


def test_yaml_alias_bomb_is_bounded():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = name
    start = time.perf_counter()
    facts = extract_yaml("bomb.yaml", "\n".join(lines) + "\n")
    assert time.perf_counter() - start < 5  # 9**9 leaves if expanded
    [problem] = facts.problems
    assert problem.message.startswith("too many nodes (alias bomb?)")
    assert facts.config_values == []


def test_yaml_recursive_alias_is_bounded():
    facts = extract_yaml("loop.yaml", "a: &x [1, *x]\n")
    assert facts.problems and "too many nodes" in facts.problems[0].message


def test_yaml_under_the_limit_is_fine():
    text = "items:\n" + "".join(f"  - {i}\n" for i in range(MAX_YAML_NODES // 2))
    facts = extract_yaml("big.yaml", text)
    assert facts.problems == [] and len(facts.config_values) == MAX_YAML_NODES // 2


def test_yaml_empty_and_scalar_documents():
    assert extract_yaml("e.yaml", "").config_values == []
    assert extract_yaml("e.yaml", "# only a comment\n").config_values == []
    assert extract_yaml("e.yaml", "just a string\n").config_values == []


# --- TOML -------------------------------------------------------------------------------

SERVICE_TOML = """\
title = "svc"
big = 1_000
"quoted.key" = "s\\u00e9"
model.timeout = "30m"

[server]
write_timeout = "5m"   # comment
limits = { read = 30, nested = [1, { deep = 2 }] }

[server.lease]
ttl = 90.5
started = 1979-05-27T07:32:00Z

[[jobs]]
name = "backup"
timeout = 3600

[[jobs.steps]]
timeout = 10

[[jobs]]
name = "restore"

[[jobs.steps]]
timeout = 20
multi = \"\"\"
line\"\"\"
"""


def test_toml_keys_values_and_positions():
    facts = extract_toml("pyproject.toml", SERVICE_TOML)
    assert facts.kind == "toml" and facts.problems == []
    assert table(facts) == {
        "title": ("svc", 1, 9, False),
        "big": ("1000", 2, 7, True),
        "quoted.key": ("sé", 3, 16, False),
        "model.timeout": ("30m", 4, 17, False),
        "server.write_timeout": ("5m", 7, 17, False),
        "server.limits.read": ("30", 8, 19, True),
        "server.limits.nested.0": ("1", 8, 33, True),
        "server.limits.nested.1.deep": ("2", 8, 45, True),
        "server.lease.ttl": ("90.5", 11, 7, True),
        "server.lease.started": ("1979-05-27T07:32:00Z", 12, 11, False),
        "jobs.0.name": ("backup", 15, 8, False),
        "jobs.0.timeout": ("3600", 16, 11, True),
        "jobs.0.steps.0.timeout": ("10", 19, 11, True),
        "jobs.1.name": ("restore", 22, 8, False),
        "jobs.1.steps.0.timeout": ("20", 25, 11, True),
        "jobs.1.steps.0.multi": ("line", 26, 9, False),
    }
    multi = next(v for v in facts.config_values if v.key == "jobs.1.steps.0.multi")
    assert multi.span == Span(26, 9, 27, 8)


def test_toml_columns_are_code_points():
    facts = extract_toml("c.toml", 'name = "ééé"\nt = "1s"\n"ключ" = 5\n')
    assert table(facts)["ключ"] == ("5", 3, 10, True)
    assert facts.config_values[0].span == Span(1, 8, 1, 13)


@pytest.mark.parametrize(
    "text, line, column, fragment",
    [
        ("a = \n[x\nb = 1\n", 1, 5, "Invalid value"),
        ("[a]\nx = 1\n[a]\n", 3, 3, "Cannot declare"),
        ("timeout = [1,", 1, 14, "Invalid value"),
        ("é = 1\n", 1, 1, "Invalid statement"),
    ],
)
def test_toml_malformed(text, line, column, fragment):
    facts = extract_toml("bad.toml", text)
    assert facts.config_values == []
    [problem] = facts.problems
    assert (problem.line, problem.column) == (line, column)
    assert problem.message.startswith("invalid TOML: ") and fragment in problem.message


# --- JSON -------------------------------------------------------------------------------

SERVICE_JSON = """\
{
  "server": {"write_timeout": "5m", "read_timeout": 30},
  "jobs": [
    {"name": "backup", "timeout_s": 5400.0},
    {"name": "caf\\u00e9", "enabled": true, "ttl": null}
  ],
  "ключ": "1h"
}
"""


def test_json_keys_values_and_positions():
    facts = extract_json("config.json", SERVICE_JSON)
    assert facts.kind == "json" and facts.lines == 8 and facts.problems == []
    assert table(facts) == {
        "server.write_timeout": ("5m", 2, 31, False),
        "server.read_timeout": ("30", 2, 53, True),
        "jobs.0.name": ("backup", 4, 14, False),
        "jobs.0.timeout_s": ("5400.0", 4, 37, True),
        "jobs.1.name": ("café", 5, 14, False),
        "jobs.1.enabled": ("true", 5, 38, False),
        "jobs.1.ttl": ("null", 5, 51, False),
        "ключ": ("1h", 7, 11, False),
    }


def test_json_top_level_array():
    facts = extract_json("list.json", '[{"timeout": 1}, 2]')
    assert table(facts) == {"0.timeout": ("1", 1, 14, True), "1": ("2", 1, 18, True)}


@pytest.mark.parametrize(
    "text, line, column, fragment",
    [
        ('{"a": 1,, "b" 2}', 1, 9, "Expecting property name"),
        ('{\n  "a": 1\n  "b": 2\n}', 3, 3, "Expecting ',' delimiter"),
        ("", 1, 1, "Expecting value"),
        ('{"a": "x', 1, 7, "Unterminated string"),
    ],
)
def test_json_malformed(text, line, column, fragment):
    facts = extract_json("bad.json", text)
    assert facts.config_values == []
    [problem] = facts.problems
    assert (problem.line, problem.column) == (line, column)
    assert problem.message.startswith("invalid JSON: ") and fragment in problem.message


def test_json_deep_nesting_is_a_problem_not_a_crash():
    facts = extract_json("deep.json", "[" * 100_000 + "]" * 100_000)
    assert facts.problems and "nesting too deep" in facts.problems[0].message


def test_config_facts_round_trip_json():
    for facts in (
        extract_yaml("a.yaml", SERVICE_YAML),
        extract_toml("a.toml", SERVICE_TOML),
        extract_json("a.json", SERVICE_JSON),
    ):
        assert from_json(to_json(facts)) == facts


def test_json_with_comments_is_read_as_jsonc():
    text = '{\n  // launch settings\n  "version": "0.2.0",\n  /* block */ "timeout": 30\n}\n'
    facts = extract_json(".vscode/launch.json", text)
    assert facts.problems == []
    assert [(v.key, v.raw, v.span.line) for v in facts.config_values] == [("version", "0.2.0", 3), ("timeout", "30", 4)]


def test_json_without_comments_still_reports_errors():
    facts = extract_json("bad.json", '{\n  "version": \n}\n')
    assert [(p.line, p.column) for p in facts.problems] == [(3, 1)]


def test_helm_template_is_not_reported_as_invalid_yaml():
    text = "kind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n{{- if .Values.x }}\ndata:\n  a: b\n{{- end }}\n"
    facts = extract_yaml("chart/templates/cm.yaml", text)
    assert facts.problems == [] and facts.config_values == []
