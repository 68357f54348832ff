import os

import pytest

from deadline_audit.extract.envfile import count_lines, env_file_role, extract_env
from deadline_audit.facts import Span, from_json, to_json


def values(facts):
    return {v.name: v.raw for v in facts.env_values}


def test_simple_layer_with_positions():
    text = "# model settings\nMODEL_TIMEOUT=30m\n\nexport LEASE_TTL=120\n  PORT = 8080\n"
    facts = extract_env("config/.env", text)
    assert facts.kind == "env" and facts.path == "config/.env"
    assert facts.lines == 5
    assert values(facts) == {"MODEL_TIMEOUT": "30m", "LEASE_TTL": "120", "PORT": "8080"}
    by_name = {v.name: v.span for v in facts.env_values}
    assert by_name["MODEL_TIMEOUT"] == Span(2, 1, 2, 14)
    assert by_name["LEASE_TTL"] == Span(4, 8, 4, 17)  # after `export `, blank line before
    assert by_name["PORT"] == Span(5, 3, 5, 7)
    assert facts.problems == []


def test_interpolation_is_off(monkeypatch):
    monkeypatch.setenv("HOME", "/home/analyser")
    monkeypatch.setenv("MODEL_TIMEOUT", "1s")
    facts = extract_env(".env", 'DATA_DIR="${HOME}/data"\nPLAIN=$HOME\nSINGLE=\'${X:-5m}\'\n')
    assert values(facts) == {"DATA_DIR": "${HOME}/data", "PLAIN": "$HOME", "SINGLE": "${X:-5m}"}
    assert "/home/analyser" not in to_json(facts)
    assert os.environ["MODEL_TIMEOUT"] == "1s"  # untouched, and never read
    assert "MODEL_TIMEOUT" not in values(facts)


def test_quotes_comments_and_multiline():
    text = (
        'A="30m"  # inline comment\n'
        "B='1h30m'\n"
        "C=5m # trailing\n"
        'D="line one\nline two"\n'
        "E=\n"
        "'QUOTED_KEY'=1\n"
    )
    facts = extract_env(".env.production", text)
    assert values(facts) == {
        "A": "30m",
        "B": "1h30m",
        "C": "5m",
        "D": "line one\nline two",
        "E": "",
        "QUOTED_KEY": "1",
    }
    spans = {v.name: v.span for v in facts.env_values}
    assert spans["E"].line == 6  # the multi-line value took lines 4-5
    assert spans["QUOTED_KEY"] == Span(7, 2, 7, 12)


def test_malformed_lines_are_problems_with_positions():
    text = "GOOD=1\nthis is not a binding\n\n   also bad here\nLATER_TIMEOUT=5s\n"
    facts = extract_env(".env", text)
    assert values(facts) == {"GOOD": "1", "LATER_TIMEOUT": "5s"}
    assert [(p.line, p.column, p.message) for p in facts.problems] == [
        (2, 1, "malformed line: this is not a binding"),
        (4, 4, "malformed line: also bad here"),
    ]


def test_bare_key_is_a_mention_not_a_value():
    facts = extract_env(".env.example", "# documented knobs\nMODEL_TIMEOUT\nLEASE_TTL=\n")
    assert [(m.name, m.span) for m in facts.knob_mentions] == [("MODEL_TIMEOUT", Span(2, 1, 2, 14))]
    assert values(facts) == {"LEASE_TTL": ""}


def test_empty_bom_crlf_and_no_trailing_newline():
    assert extract_env(".env", "").env_values == []
    assert extract_env(".env", "").lines == 0
    facts = extract_env(".env", "\ufeffA_TIMEOUT=1s\r\nB=2")
    assert values(facts) == {"A_TIMEOUT": "1s", "B": "2"}
    assert facts.env_values[0].span.column == 1
    assert facts.env_values[1].span.line == 2
    assert facts.lines == 2


def test_facts_round_trip_json():
    facts = extract_env(".env", "X_TIMEOUT=30m\nbroken line\n")
    assert from_json(to_json(facts)) == facts


def test_count_lines():
    assert count_lines("") == 0
    assert count_lines("a") == 1
    assert count_lines("a\n") == 1
    assert count_lines("a\nb") == 2


@pytest.mark.parametrize(
    "path, role",
    [
        (".env", ("layer", None)),
        ("config/.env", ("layer", None)),
        (".env.production", ("profile", "production")),
        ("deploy/.env.staging", ("profile", "staging")),
        ("prod.env", ("profile", "prod")),
        (".env.local", ("profile", "local")),
        (".env.example", ("doc", None)),
        (".env.sample", ("doc", None)),
        (".env.template", ("doc", None)),
        (".env.dist", ("doc", None)),
        ("example.env", ("doc", None)),
        ("sample.env", ("doc", None)),
        ("deploy/vars", ("layer", None)),
        ("win\\dir\\.env.prod", ("profile", "prod")),
    ],
)
def test_env_file_role(path, role):
    assert env_file_role(path) == role
