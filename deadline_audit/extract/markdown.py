"""Markdown -> KnobMention facts (DA501: knobs the documentation names).

Names are read from inline code spans, body cells of pipe tables, and fenced blocks of
env/shell (`NAME=` assignments), YAML and TOML (keys). Fences in any other language are
code, not documentation of knobs, and are skipped; so is a fence with no info string
unless every line is a `NAME=value` assignment.

Two name shapes count: env names (UPPER_SNAKE with an underscore, or one upper word of
4+ characters) and config keys (lowercase dotted or snake: `server.write_timeout`,
`lease_ttl`). Prose code spans also hold code (`asyncio.timeout`, `config.yaml`): names
with a well-known module as first part or a file/domain suffix are not keys.
"""

from __future__ import annotations

import re
from functools import cache

from deadline_audit.extract.envfile import count_lines
from deadline_audit.facts import FileFacts, KnobMention, Span

ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:__?[A-Z0-9]+)+|[A-Z][A-Z0-9]{3,}")
CONFIG_KEY = re.compile(r"[a-z][a-z0-9_-]*(?:\.[a-z0-9_-]+)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+")

ENV_LANGS = {"env", "dotenv", "sh", "bash", "shell", "zsh", "console", "shell-session", "shellsession"}
YAML_LANGS = {"yaml", "yml"}
TOML_LANGS = {"toml", "ini", "properties", "cfg"}
PLAIN_LANGS = {"", "text", "txt", "plain", "plaintext"}

# First parts that make a dotted name code, not a config key.
_CODE_PREFIXES = {
    "os", "sys", "time", "context", "http", "net", "asyncio", "anyio", "trio", "httpx",
    "requests", "aiohttp", "socket", "openai", "option", "json", "yaml", "toml", "tomllib",
    "math", "datetime", "signal", "subprocess", "threading", "concurrent", "urllib", "grpc",
    "temporalio", "workflow", "activity", "self", "cls", "ctx", "r", "w", "req", "resp",
}
# Last parts that make a dotted name a file or a host.
_FILE_SUFFIXES = {
    "yaml", "yml", "toml", "json", "md", "py", "go", "env", "txt", "sh", "ini", "cfg", "conf",
    "lock", "mod", "sum", "html", "js", "ts", "example", "sample", "template", "dist",
    "com", "org", "net", "io", "dev",
}

_CODE_SPAN_ENV = re.compile(r"(?:export\s+)?\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?(?:=.*)?")
_CODE_SPAN_KEY = re.compile(r"([a-z][\w.-]*)(?:\s*[:=]\s*\S.*)?")
_ASSIGN = re.compile(r"(?:^|(?<=[\s;&|(`'\"]))(?:export\s+)?([A-Z][A-Z0-9_]*)=")
_DOCKER_ENV = re.compile(r"(?:^|\s)(?:-e|--env)\s+([A-Z][A-Z0-9_]*)(?=\s|$)")
_YAML_KEY = re.compile(r"^(\s*(?:-\s+)*)([\"']?)([^\s:\"'#{}\[\],&*!|>][^:\"'#]*?)\2\s*:(?:\s+(.*))?$")
_YAML_LIST_ENV = re.compile(r"^\s*-\s+[\"']?([A-Z][A-Z0-9_]*)=")
_TOML_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_TOML_KEY = re.compile(r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=")


def is_env_name(name: str) -> bool:
    return ENV_NAME.fullmatch(name) is not None


def is_config_key(name: str) -> bool:
    if CONFIG_KEY.fullmatch(name) is None:
        return False
    parts = name.split(".")
    if len(parts) > 1:
        if parts[0] in _CODE_PREFIXES or parts[-1] in _FILE_SUFFIXES:
            return False
        if all(p.isdigit() for p in parts[1:]):  # v1.2.3
            return False
    return True


class _Collector:
    def __init__(self, lines: list[str]):
        self.lines = lines
        self.mentions: list[KnobMention] = []
        self.seen: set[tuple[str, int, int]] = set()

    def add(self, name: str, row: int, column: int, width: int | None = None) -> None:
        """Record `name` at 0-based `row` and `column`; the span is `width` wide (the
        leaf key of a dotted YAML/TOML path), else the name's length."""
        key = (name, row + 1, column + 1)
        if key not in self.seen:
            self.seen.add(key)
            end = column + 1 + (len(name) if width is None else width)
            self.mentions.append(KnobMention(name, Span(row + 1, column + 1, row + 1, end)))

    def find(self, row: int, needle: str, start: int = 0) -> int:
        """0-based column of `needle` as a whole word on `row`, from `start`."""
        word = re.compile(r"(?<![\w.])" + re.escape(needle) + r"(?![\w])")
        m = word.search(self.lines[row], start) or word.search(self.lines[row])
        return m.start() if m else 0


def _code_span_name(content: str) -> str | None:
    content = content.strip()
    m = _CODE_SPAN_ENV.fullmatch(content)
    if m and is_env_name(m.group(1)):
        return m.group(1)
    m = _CODE_SPAN_KEY.fullmatch(content)
    if m and is_config_key(m.group(1)):
        return m.group(1)
    return None


def _inline(token, col: _Collector, in_body_cell: bool) -> None:
    if token.map is None:
        return
    first, last = token.map
    row, pos = first, 0
    if in_body_cell:
        cell = token.content.strip().strip("*_").strip()
        if is_env_name(cell) or is_config_key(cell):
            col.add(cell, first, col.find(first, cell))
    for child in token.children or []:
        if child.type != "code_inline":
            continue
        # Search forward through the block's lines so repeated spans land in order; a
        # span broken across lines is not found and skipped.
        pattern = re.compile(re.escape(child.markup) + " ?" + re.escape(child.content))
        r, p, found = row, pos, None
        while r < min(last, len(col.lines)):
            found = pattern.search(col.lines[r], p)
            if found:
                break
            r, p = r + 1, 0
        if found is None:
            continue
        row, pos = r, found.end()
        name = _code_span_name(child.content)
        if name is not None:
            col.add(name, row, col.find(row, name, found.start()))


def _env_block(rows: range, col: _Collector) -> None:
    for row in rows:
        line = col.lines[row]
        for m in _ASSIGN.finditer(line):
            if is_env_name(m.group(1)):
                col.add(m.group(1), row, m.start(1))
        for m in _DOCKER_ENV.finditer(line):
            if is_env_name(m.group(1)):
                col.add(m.group(1), row, m.start(1))


def _yaml_block(rows: range, col: _Collector) -> None:
    stack: list[tuple[int, str]] = []
    for row in rows:
        line = col.lines[row]
        text = re.sub(r"(^|\s)#.*$", "", line).rstrip()
        if not text.strip() or text.strip() in ("---", "..."):
            continue
        env = _YAML_LIST_ENV.match(text)
        if env and is_env_name(env.group(1)):
            col.add(env.group(1), row, env.start(1))
            continue
        m = _YAML_KEY.match(text)
        if not m:
            continue
        indent, key, value = len(m.group(1)), m.group(3).strip(), (m.group(4) or "").strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if value and not value.startswith("&"):
            name = key if is_env_name(key) else ".".join([k for _, k in stack] + [key])
            col.add(name, row, col.find(row, key, indent), len(key))
        else:
            stack.append((indent, key))


def _toml_block(rows: range, col: _Collector) -> None:
    prefix: list[str] = []
    for row in rows:
        line = col.lines[row]
        header = _TOML_HEADER.match(line)
        if header:
            prefix = [p.strip().strip("\"'") for p in header.group(1).split(".")]
            continue
        m = _TOML_KEY.match(line)
        if m:
            parts = [p.strip().strip("\"'") for p in m.group(1).split(".")]
            first = m.group(1).split(".")[0].strip()
            col.add(".".join(prefix + parts), row, line.find(first), len(first))


def _looks_like_env(rows: range, lines: list[str]) -> bool:
    body = [lines[r].strip() for r in rows if lines[r].strip() and not lines[r].strip().startswith("#")]
    return bool(body) and all(re.match(r"(?:export\s+)?[A-Z][A-Z0-9_]*=", s) for s in body)


def _fence(token, col: _Collector) -> None:
    if token.map is None:
        return
    lang = (token.info.strip().split(maxsplit=1) or [""])[0].strip("{}.").lower()
    first, last = token.map
    # content rows: between the opening and (when present) the closing fence
    end = last - 1 if last - 1 > first and col.lines[last - 1].strip().startswith(token.markup) else last
    rows = range(first + 1, min(end, len(col.lines)))
    if lang in ENV_LANGS or (lang in PLAIN_LANGS and _looks_like_env(rows, col.lines)):
        _env_block(rows, col)
    elif lang in YAML_LANGS:
        _yaml_block(rows, col)
    elif lang in TOML_LANGS:
        _toml_block(rows, col)


@cache
def _parser():
    """One CommonMark parser with tables per process. Imported here: DA501 imports this
    module for `is_env_name` on every run, and markdown-it (~30 ms to import) is needed
    only when a Markdown file is extracted. Emphasis, links, images and entities are off:
    code spans bind tighter than all four, so the spans and cells read here are the same
    (checked on 711 Markdown files), and a changelog parses a sixth faster."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").disable(["emphasis", "link", "image", "entity"])


def extract_markdown(path: str, text: str) -> FileFacts:
    facts = FileFacts(path=path, kind="markdown", lines=count_lines(text))
    text = text.removeprefix("\ufeff")
    tokens = _parser().parse(text)
    col = _Collector(text.split("\n"))
    col.lines = [line.rstrip("\r") for line in col.lines]
    in_tbody = False
    for token in tokens:
        if token.type == "tbody_open":
            in_tbody = True
        elif token.type == "tbody_close":
            in_tbody = False
        elif token.type == "inline":
            _inline(token, col, in_tbody)
        elif token.type == "fence":
            _fence(token, col)
    facts.knob_mentions = col.mentions
    return facts
