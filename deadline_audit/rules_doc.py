"""Rule documentation read from `rules/DAxxx.md`.

Each file is a TOML front matter block between `+++` lines (id, name, severity, summary,
languages, options) followed by Markdown with exactly six H2 sections, in order:
What it does, Why is this bad?, Example, Use instead, Known problems, References.

The examples are executable: in "Example" (bad) and "Use instead" (good) every fenced
block headed by a file name (```` ```go title="agent/run.go" ````) is a file of an example
tree. An `### H3` inside the section starts a new tree (conventionally one per language:
`### Go`, `### Python`); without H3 the whole section is one tree. Fenced blocks without a
`title` are illustrations, not files.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from deadline_audit.resources import rules_dir

SECTIONS = (
    "What it does",
    "Why is this bad?",
    "Example",
    "Use instead",
    "Known problems",
    "References",
)
EXAMPLE_SECTIONS = ("Example", "Use instead")
SEVERITIES = ("error", "warning", "info")
LANGUAGES = ("go", "python", "env", "yaml", "toml", "json", "markdown")

_RULE_FILE = re.compile(r"^DA\d{3}\.md$")
_FENCE_OPEN = re.compile(r"^(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[^\s`]*)(?P<attrs>[^`]*)$")
_TITLE = re.compile(r"""\btitle\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)')""")
_H2 = re.compile(r"^##[ \t]+(?P<title>.+?)[ \t]*#*[ \t]*$")
_H3 = re.compile(r"^###[ \t]+(?P<title>.+?)[ \t]*#*[ \t]*$")

# Languages that a product language name covers when an example tree has no H3 heading.
_PRIMARY = ("go", "python")


class RuleDocError(ValueError):
    """A rule documentation file that does not follow the format (the message names the file)."""


@dataclass(frozen=True)
class Example:
    """One example tree: the files to write into an empty directory.

    `language` is the H3 heading that introduced the tree, lowercased (`go`, `python`), or,
    without one, the language of its first Go/Python block, else of its first block.
    `file_languages` maps each path to its fence language (`go`, `text`, `env`, …).
    """

    language: str
    files: dict[str, str]
    file_languages: dict[str, str] = field(default_factory=dict)
    heading: str | None = None

    def write_to(self, root: Path) -> list[Path]:
        """Create the tree under `root` and return the paths written."""
        written = []
        for rel, content in self.files.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
            written.append(target)
        return written


@dataclass(frozen=True)
class RuleDoc:
    id: str
    name: str
    severity: str
    summary: str
    languages: tuple[str, ...]
    options: dict[str, dict]
    sections: dict[str, str]
    text: str
    path: Path | None = None

    def examples(self, section: str) -> list[Example]:
        """The example trees of "Example" (bad) or "Use instead" (good)."""
        if section not in self.sections:
            raise KeyError(f"{self.id}: no section {section!r}")
        return _examples_of(self.sections[section], self.path or Path(self.id))

    def option_defaults(self) -> dict[str, object]:
        return {key: spec.get("default") for key, spec in self.options.items()}


@cache
def load_rules() -> list[RuleDoc]:
    """Every rule documentation file in the rules folder, sorted by id (cached)."""
    folder = rules_dir()
    docs = [parse_rule_file(path) for path in folder.iterdir() if _RULE_FILE.match(path.name)]
    return sorted(docs, key=lambda doc: doc.id)


def get_rule(rule_id: str) -> RuleDoc:
    wanted = rule_id.strip().upper()
    for doc in load_rules():
        if doc.id == wanted:
            return doc
    raise KeyError(f"unknown rule {rule_id!r}")


def parse_rule_file(path: Path) -> RuleDoc:
    return parse_rule_text(path.read_text(encoding="utf-8"), path)


def parse_rule_text(source: str, path: Path) -> RuleDoc:
    meta, body = _split_front_matter(source, path)
    for key in ("id", "name", "severity", "summary", "languages"):
        if key not in meta:
            raise RuleDocError(f"{path}: front matter lacks `{key}`")
    if path.suffix == ".md" and _RULE_FILE.match(path.name) and meta["id"] != path.stem:
        raise RuleDocError(f"{path}: front matter id {meta['id']!r} does not match the file name")
    if meta["severity"] not in SEVERITIES:
        raise RuleDocError(f"{path}: severity {meta['severity']!r} is not one of {SEVERITIES}")
    unknown = [lang for lang in meta["languages"] if lang not in LANGUAGES]
    if unknown:
        raise RuleDocError(f"{path}: unknown languages {unknown}")
    options = meta.get("options", {})
    for key, spec in options.items():
        if not isinstance(spec, dict) or not {"type", "default", "description"} <= spec.keys():
            raise RuleDocError(f"{path}: option `{key}` needs type, default and description")
    return RuleDoc(
        id=meta["id"],
        name=meta["name"],
        severity=meta["severity"],
        summary=meta["summary"],
        languages=tuple(meta["languages"]),
        options=options,
        sections=_split_sections(body, path),
        text=body,
        path=path,
    )


def _split_front_matter(source: str, path: Path) -> tuple[dict, str]:
    lines = source.splitlines(keepends=True)
    if not lines or lines[0].strip() != "+++":
        raise RuleDocError(f"{path}: missing `+++` TOML front matter at the top")
    for index in range(1, len(lines)):
        if lines[index].strip() == "+++":
            try:
                meta = tomllib.loads("".join(lines[1:index]))
            except tomllib.TOMLDecodeError as exc:
                raise RuleDocError(f"{path}: invalid front matter: {exc}") from exc
            return meta, "".join(lines[index + 1 :]).lstrip("\n")
    raise RuleDocError(f"{path}: front matter is not closed by `+++`")


def _markdown_lines(text: str):
    """Yield (line, inside_fence) so headings inside code blocks are not headings."""
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\n")
        if fence is None:
            opened = _FENCE_OPEN.match(stripped)
            if opened:
                fence = opened["fence"]
                yield line, True
                continue
            yield line, False
        else:
            if stripped.strip().startswith(fence[0] * len(fence)) and not stripped.strip().strip(fence[0]):
                fence = None
            yield line, True


def _split_sections(body: str, path: Path) -> dict[str, str]:
    titles: list[str] = []
    chunks: list[list[str]] = []
    for line, in_fence in _markdown_lines(body):
        heading = None if in_fence else _H2.match(line.rstrip("\n"))
        if heading and not line.startswith("###"):
            titles.append(heading["title"])
            chunks.append([])
        elif chunks:
            chunks[-1].append(line)
    if tuple(titles) != SECTIONS:
        raise RuleDocError(
            f"{path}: sections must be exactly {list(SECTIONS)} in this order; found {titles}"
        )
    return {title: "".join(chunk).strip("\n") + "\n" for title, chunk in zip(titles, chunks)}


def _examples_of(section_text: str, path: Path) -> list[Example]:
    trees: list[tuple[str | None, list[tuple[str, str, str]]]] = [(None, [])]
    fence: str | None = None
    current: tuple[str, str] | None = None  # (title, lang) of an open titled block
    buffer: list[str] = []
    for raw in section_text.splitlines(keepends=True):
        line = raw.rstrip("\n")
        if fence is None:
            heading = _H3.match(line)
            if heading:
                trees.append((heading["title"], []))
                continue
            opened = _FENCE_OPEN.match(line)
            if opened:
                fence = opened["fence"]
                title = _TITLE.search(opened["attrs"] or "")
                current = None
                if title:
                    current = (title["dq"] if title["dq"] is not None else title["sq"], opened["lang"])
                buffer = []
            continue
        closing = line.strip()
        if closing.startswith(fence[0] * len(fence)) and not closing.strip(fence[0]):
            if current is not None:
                trees[-1][1].append((current[0], current[1], "".join(buffer)))
            fence, current = None, None
            continue
        buffer.append(raw)
    if fence is not None:
        raise RuleDocError(f"{path}: unclosed code fence in an example section")

    examples = []
    for heading, blocks in trees:
        if not blocks:
            continue
        files: dict[str, str] = {}
        langs: dict[str, str] = {}
        for rel, lang, content in blocks:
            if rel in files:
                raise RuleDocError(f"{path}: example file {rel!r} appears twice in one tree")
            if rel.startswith("/") or ".." in Path(rel).parts:
                raise RuleDocError(f"{path}: example file {rel!r} must be a relative path")
            files[rel] = content
            langs[rel] = lang.lower()
        if heading is not None:
            language = heading.strip().lower()
        else:
            block_langs = list(langs.values())
            language = next((lang for lang in block_langs if lang in _PRIMARY), block_langs[0])
        examples.append(Example(language=language, files=files, file_languages=langs, heading=heading))
    return examples
