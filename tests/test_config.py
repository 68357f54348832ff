from pathlib import Path

import pytest

from da_cli_support import run_cli
from deadline_audit.config import (
    Config,
    ConfigError,
    find_config_file,
    load_config,
    rule_enabled,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_a_config_file(tmp_path):
    config = load_config([tmp_path])
    assert config.root == tmp_path.resolve()
    assert config.fail_on == "info"
    assert config.max_file_size == 2 * 1024 * 1024
    assert config.cache_dir == ".deadline-audit-cache"
    assert config.enabled_rules()[0] == "DA101" and len(config.enabled_rules()) == 12


def test_pyproject_section_found_walking_up(tmp_path):
    write(tmp_path / "pyproject.toml", """
[tool.deadline-audit]
exclude = ["generated/**"]
env-files = ["deploy/.env", "deploy/prod.env"]
select = ["DA1", "DA501"]
ignore = ["DA103"]
fail-on = "warning"
max-file-size = 1000
per-file-ignores = { "tests/**" = ["DA2"] }
severity = { DA502 = "warning" }
components = { agent = ["agent/**"], platform = ["platform/**"] }
links = [{ sender = "platform.jobs.enqueue", receiver = "task.Task", field-map = { timeout = "timeout_seconds" } }]

[tool.deadline-audit.rules.DA101]
min-ratio = 1.0

[tool.deadline-audit.catalog]
leases = ["mylib.run_with_lease"]
""")
    sub = tmp_path / "agent" / "run"
    sub.mkdir(parents=True)
    assert find_config_file(sub) == tmp_path / "pyproject.toml"
    config = load_config([sub])
    assert config.root == tmp_path.resolve()
    assert config.exclude == ["generated/**"]
    assert config.env_file_paths()[0] == tmp_path.resolve() / "deploy/.env"
    assert config.fail_on == "warning" and config.max_file_size == 1000
    assert config.per_file_ignores == {"tests/**": ["DA2"]}
    assert config.severity == {"DA502": "warning"}
    assert config.rule_options == {"DA101": {"min-ratio": 1.0}}
    assert config.catalog == {"leases": ["mylib.run_with_lease"]}
    assert config.components["agent"] == ["agent/**"]
    assert config.links[0]["field-map"] == {"timeout": "timeout_seconds"}
    assert config.rule_enabled("DA101") and config.rule_enabled("DA501")
    assert not config.rule_enabled("DA103") and not config.rule_enabled("DA201")


def test_pyproject_without_section_is_skipped(tmp_path):
    write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n")
    write(tmp_path / "sub" / "deadline-audit.toml", "fail-on = 'error'\n")
    assert load_config([tmp_path / "sub"]).fail_on == "error"
    assert find_config_file(tmp_path) is None or find_config_file(tmp_path).parent != tmp_path


@pytest.mark.parametrize("name", ["deadline-audit.toml", ".deadline-audit.toml"])
def test_standalone_files_have_no_prefix(tmp_path, name):
    write(tmp_path / name, 'select = ["ALL"]\nignore = ["DA5"]\n')
    config = load_config([tmp_path])
    assert config.config_file == (tmp_path / name).resolve()
    assert not config.rule_enabled("DA501") and config.rule_enabled("DA401")


@pytest.mark.parametrize(
    "text, key",
    [
        ("unknown-key = 1\n", "unknown-key"),
        ("fail_on = 'error'\n", "fail_on"),
        ("fail-on = 'sometimes'\n", "fail-on"),
        ("select = 'DA101'\n", "select"),
        ("select = ['XX9']\n", "select"),
        ("max-file-size = -1\n", "max-file-size"),
        ("severity = { DA101 = 'fatal' }\n", "severity.DA101"),
        ("[rules.DA999]\nx = 1\n", "rules.DA999"),
        ("per-file-ignores = { 'a/**' = ['NOPE'] }\n", "per-file-ignores"),
    ],
)
def test_bad_keys_name_the_key_and_the_file(tmp_path, text, key):
    cfg = write(tmp_path / "deadline-audit.toml", text)
    with pytest.raises(ConfigError) as info:
        load_config([tmp_path])
    assert key in str(info.value) and str(cfg) in str(info.value)


def test_unknown_key_in_pyproject_names_the_full_key(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.deadline-audit]\ncolour = true\n")
    with pytest.raises(ConfigError, match=r"tool\.deadline-audit\.colour"):
        load_config([tmp_path])


def test_invalid_toml_is_a_config_error(tmp_path):
    write(tmp_path / "deadline-audit.toml", "select = [\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config([tmp_path])


def test_cli_exits_2_naming_the_key(tmp_path, monkeypatch):
    write(tmp_path / "deadline-audit.toml", "frobnicate = 1\n")
    monkeypatch.chdir(tmp_path)
    result = run_cli("check", ".")
    assert result.exit_code == 2
    assert "frobnicate" in result.output and "deadline-audit.toml" in result.output


def test_cli_rejects_unknown_selector(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_cli("check", ".", "--select", "DA101,BOGUS")
    assert result.exit_code == 2 and "BOGUS" in result.output


def test_selection_most_specific_wins():
    assert rule_enabled("DA101", ["ALL"], [])
    assert not rule_enabled("DA101", ["ALL"], ["DA1"])
    assert rule_enabled("DA101", ["DA101"], ["DA1"])
    assert not rule_enabled("DA101", ["DA1"], ["DA101"])
    assert not rule_enabled("DA201", ["DA1"], [])


def test_overrides_replace_file_values(tmp_path):
    config = Config(root=tmp_path, fail_on="error").with_overrides(fail_on="never", select=None)
    assert config.fail_on == "never" and config.select == ["ALL"]
