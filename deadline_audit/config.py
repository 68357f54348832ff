"""Configuration (SPEC §6): `[tool.deadline-audit]` in pyproject.toml, or
`deadline-audit.toml` / `.deadline-audit.toml` (same keys, no prefix).

The file is found by walking up from the first analysed path (or named with --config).
Keys are kebab-case. An unknown key or a value of the wrong type is a `ConfigError`
naming the key and the file; the CLI turns it into exit code 2. Command-line options
override file values (`Config.with_overrides`).
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The fixed rule table (SPEC §4): id -> (name, default severity). Rule documentation
# (summary, rationale, examples) lives in rules/ and is read by rules_doc.py.
RULES: dict[str, tuple[str, str]] = {
    "DA101": ("shadowed-lease", "error"),
    "DA102": ("deadline-covers-stream", "warning"),
    "DA103": ("renewal-slower-than-lease", "error"),
    "DA201": ("cancellable-terminal-write", "error"),
    "DA202": ("request-bound-background-work", "warning"),
    "DA301": ("failed-by-default", "warning"),
    "DA302": ("timeout-recorded-as-failed", "warning"),
    "DA401": ("ceiling-mismatch", "error"),
    "DA402": ("silent-fallback-timeout", "warning"),
    "DA403": ("wire-unit-mismatch", "error"),
    "DA501": ("dead-timeout-knob", "warning"),
    "DA502": ("default-drift", "info"),
}
RULE_IDS: tuple[str, ...] = tuple(RULES)

FAIL_ON_LEVELS = ("error", "warning", "info", "never")
SEVERITY_LEVELS = ("error", "warning", "info")
DEFAULT_MAX_FILE_SIZE = 2 * 1024 * 1024
DEFAULT_CACHE_DIR = ".deadline-audit-cache"
CONFIG_FILE_NAMES = (".deadline-audit.toml", "deadline-audit.toml")


class ConfigError(Exception):
    """A configuration problem: the message names the key and the file."""


@dataclass(frozen=True)
class Config:
    root: Path
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    env_files: list[str] = field(default_factory=list)
    select: list[str] = field(default_factory=lambda: ["ALL"])
    ignore: list[str] = field(default_factory=list)
    fail_on: str = "info"
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    severity: dict[str, str] = field(default_factory=dict)
    rule_options: dict[str, dict] = field(default_factory=dict)
    catalog: dict = field(default_factory=dict)
    components: dict[str, list[str]] = field(default_factory=dict)
    links: list = field(default_factory=list)
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    cache_dir: str = DEFAULT_CACHE_DIR
    include_tests: bool = False  # analyse test files (catalog tests.toml) and report in them; else names only
    config_file: Path | None = None  # where the values came from (None: defaults)

    __hash__ = None  # type: ignore[assignment]  # holds lists and dicts

    def with_overrides(self, **changes: Any) -> Config:
        """A copy with command-line values applied (None means "not given")."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    def env_file_paths(self) -> list[Path]:
        """`env-files` resolved against the config root (absolute entries stay as they are)."""
        return [(self.root / p) if not Path(p).is_absolute() else Path(p) for p in self.env_files]

    def cache_path(self) -> Path:
        p = Path(self.cache_dir)
        return p if p.is_absolute() else self.root / p

    def rule_enabled(self, rule_id: str) -> bool:
        return rule_enabled(rule_id, self.select, self.ignore)

    def enabled_rules(self) -> list[str]:
        return [r for r in RULE_IDS if self.rule_enabled(r)]


# --- rule selectors -----------------------------------------------------------------


def is_valid_selector(selector: str) -> bool:
    """"ALL", a full rule ID or a prefix of one ("DA", "DA1", "DA10")."""
    s = selector.strip().upper()
    return s == "ALL" or (len(s) >= 2 and any(r.startswith(s) for r in RULE_IDS))


def _specificity(selector: str, rule_id: str) -> int:
    """-1 if the selector does not match the rule, else how specific it is."""
    s = selector.strip().upper()
    if s == "ALL":
        return 0
    return len(s) if rule_id.upper().startswith(s) else -1


def best_match(selectors: list[str] | tuple[str, ...], rule_id: str) -> int:
    return max((_specificity(s, rule_id) for s in selectors), default=-1)


def rule_enabled(rule_id: str, select: list[str], ignore: list[str]) -> bool:
    """ruff semantics: the most specific selector wins; on a tie, ignore wins."""
    sel = best_match(select, rule_id)
    if sel < 0:
        return False
    return best_match(ignore, rule_id) < sel


def split_selectors(values: list[str] | None) -> list[str] | None:
    """`--select DA1,DA2 --select DA5` -> ["DA1", "DA2", "DA5"]."""
    if values is None:
        return None
    out = [part.strip().upper() for v in values for part in v.split(",")]
    return [p for p in out if p]


def check_selectors(selectors: list[str], key: str, source: str) -> list[str]:
    bad = [s for s in selectors if not is_valid_selector(s)]
    if bad:
        raise ConfigError(
            f"{source}: `{key}`: unknown rule selector(s) {', '.join(map(repr, bad))} "
            f"(expected ALL, a rule ID such as DA101, or a prefix such as DA1)"
        )
    return [s.strip().upper() for s in selectors]


# --- loading ------------------------------------------------------------------------


def find_config_file(start: Path) -> Path | None:
    """Walk up from `start` (a file or a directory) to the first config file."""
    start = start.resolve()
    directory = start if start.is_dir() else start.parent
    for d in (directory, *directory.parents):
        for name in CONFIG_FILE_NAMES:
            if (d / name).is_file():
                return d / name
        pyproject = d / "pyproject.toml"
        if pyproject.is_file() and _pyproject_has_section(pyproject):
            return pyproject
    return None


def _pyproject_has_section(path: Path) -> bool:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        # A broken pyproject.toml that is not ours is not our business, unless it
        # visibly holds our section: then the user must hear about it.
        try:
            return "[tool.deadline-audit" in path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    return isinstance(data.get("tool"), dict) and "deadline-audit" in data["tool"]


def default_root(paths: list[Path]) -> Path:
    first = (paths[0] if paths else Path(".")).resolve()
    return first if first.is_dir() else first.parent


def load_config(paths: list[Path], config_file: Path | None = None) -> Config:
    """The configuration for analysing `paths`: from `config_file` when given, else
    the first config file found walking up from the first path, else defaults."""
    if config_file is None:
        config_file = find_config_file(paths[0] if paths else Path("."))
        if config_file is None:
            return Config(root=default_root(paths))
    config_file = config_file.resolve()
    if not config_file.is_file():
        raise ConfigError(f"{config_file}: configuration file not found")
    try:
        text = config_file.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except OSError as e:
        raise ConfigError(f"{config_file}: cannot read: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise ConfigError(f"{config_file}: not UTF-8 text") from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{config_file}: invalid TOML: {e}") from e
    if config_file.name == "pyproject.toml":
        table = data.get("tool", {}).get("deadline-audit", {})
        prefix = "tool.deadline-audit."
    else:
        table = data
        prefix = ""
    if not isinstance(table, dict):
        raise ConfigError(f"{config_file}: `{prefix.rstrip('.') or 'tool.deadline-audit'}` must be a table")
    return parse_config(table, source=config_file, root=config_file.parent, prefix=prefix)


def parse_config(table: dict[str, Any], *, source: Path | str, root: Path, prefix: str = "") -> Config:
    """Validate one `[tool.deadline-audit]` table (kebab-case keys) into a Config."""
    src = str(source)
    values: dict[str, Any] = {}
    for key, value in table.items():
        spec = _KEYS.get(key)
        where = f"{prefix}{key}"
        if spec is None:
            hint = ""
            if key.replace("_", "-") in _KEYS:
                hint = f" (did you mean `{key.replace('_', '-')}`? keys are kebab-case)"
            known = ", ".join(sorted(_KEYS))
            raise ConfigError(f"{src}: unknown key `{where}`{hint}; known keys: {known}")
        attr, validate = spec
        values[attr] = validate(value, where, src)
    return Config(root=Path(root).resolve(), config_file=Path(source) if source else None, **values)


# --- validators (value, key, source) -> value ---------------------------------------


def _type_error(key: str, src: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"{src}: `{key}` must be {expected}, got {type(value).__name__} {value!r}")


def _str_list(value: Any, key: str, src: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _type_error(key, src, "a list of strings", value)
    return list(value)


def _selectors(value: Any, key: str, src: str) -> list[str]:
    return check_selectors(_str_list(value, key, src), key, src)


def _fail_on(value: Any, key: str, src: str) -> str:
    if not isinstance(value, str) or value.lower() not in FAIL_ON_LEVELS:
        raise _type_error(key, src, f"one of {', '.join(FAIL_ON_LEVELS)}", value)
    return value.lower()


def _per_file_ignores(value: Any, key: str, src: str) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise _type_error(key, src, "a table of glob = [rule IDs]", value)
    out = {}
    for glob, ids in value.items():
        out[glob] = check_selectors(_str_list(ids, f"{key}.{glob!r}", src), f"{key}.{glob!r}", src)
    return out


def _severity(value: Any, key: str, src: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _type_error(key, src, "a table of rule ID = severity", value)
    out = {}
    for rule, level in value.items():
        check_selectors([rule], key, src)
        if not isinstance(level, str) or level.lower() not in SEVERITY_LEVELS:
            raise _type_error(f"{key}.{rule}", src, f"one of {', '.join(SEVERITY_LEVELS)}", level)
        out[rule.upper()] = level.lower()
    return out


def _rule_options(value: Any, key: str, src: str) -> dict[str, dict]:
    if not isinstance(value, dict):
        raise _type_error(key, src, "a table of rule ID tables", value)
    out = {}
    for rule, options in value.items():
        if rule.upper() not in RULES:
            raise ConfigError(f"{src}: `{key}.{rule}`: unknown rule ID (known: {', '.join(RULE_IDS)})")
        if not isinstance(options, dict):
            raise _type_error(f"{key}.{rule}", src, "a table of options", options)
        out[rule.upper()] = dict(options)
    return out


def _table(value: Any, key: str, src: str) -> dict:
    if not isinstance(value, dict):
        raise _type_error(key, src, "a table", value)
    return dict(value)


def _components(value: Any, key: str, src: str) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise _type_error(key, src, "a table of name = [globs]", value)
    return {name: _str_list(globs, f"{key}.{name}", src) for name, globs in value.items()}


def _bool(value: Any, key: str, src: str) -> bool:
    if not isinstance(value, bool):
        raise _type_error(key, src, "true or false", value)
    return value


_LINK_KEYS = ("sender", "receiver", "field-map", "keys")


def _links(value: Any, key: str, src: str) -> list[dict]:
    """`[[links]]`: explicit wire links (rules/DA401.md): `sender` (a type, a function, or a
    file glob with `keys`), `receiver` (a type, or a function reading a decoded body),
    optional `field-map` (sender key = receiver key)."""
    if not isinstance(value, list):
        raise _type_error(key, src, "an array of tables ([[links]])", value)
    out = []
    for i, entry in enumerate(value):
        where = f"{key}[{i}]"
        if not isinstance(entry, dict):
            raise _type_error(where, src, "a table with sender and receiver", entry)
        for name in entry:
            if name not in _LINK_KEYS:
                raise ConfigError(f"{src}: unknown key `{where}.{name}`; known keys: {', '.join(_LINK_KEYS)}")
        for name in ("sender", "receiver"):
            if name not in entry:
                raise ConfigError(f"{src}: `{where}` needs `{name}`")
            _string(entry[name], f"{where}.{name}", src)
        field_map = entry.get("field-map", {})
        if not isinstance(field_map, dict) or not all(isinstance(v, str) and v for v in field_map.values()):
            raise _type_error(f"{where}.field-map", src, "a table of sender key = receiver key", field_map)
        keys = _str_list(entry.get("keys", []), f"{where}.keys", src)
        if _is_glob(entry["sender"]) and not keys:
            raise ConfigError(f"{src}: `{where}`: a sender given as a file glob needs `keys` "
                              f"(the keys every payload of the link has)")
        out.append({"sender": entry["sender"], "receiver": entry["receiver"],
                    "field-map": dict(field_map), "keys": keys})
    return out


def _is_glob(text: str) -> bool:
    """A link's sender names files (a glob) rather than a type or a function."""
    return any(c in text for c in "*?[") or text.endswith((".py", ".go", "/"))


def _positive_int(value: Any, key: str, src: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _type_error(key, src, "a positive integer (bytes)", value)
    return value


def _string(value: Any, key: str, src: str) -> str:
    if not isinstance(value, str) or not value:
        raise _type_error(key, src, "a non-empty string", value)
    return value


_KEYS: dict[str, tuple[str, Any]] = {
    "include": ("include", _str_list),
    "exclude": ("exclude", _str_list),
    "env-files": ("env_files", _str_list),
    "select": ("select", _selectors),
    "ignore": ("ignore", _selectors),
    "fail-on": ("fail_on", _fail_on),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "severity": ("severity", _severity),
    "rules": ("rule_options", _rule_options),
    "catalog": ("catalog", _table),
    "components": ("components", _components),
    "links": ("links", _links),
    "max-file-size": ("max_file_size", _positive_int),
    "cache-dir": ("cache_dir", _string),
    "include-tests": ("include_tests", _bool),
}
