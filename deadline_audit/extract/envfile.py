"""Env files (`.env`, `.env.production`, `.env.example`, …) -> EnvValue facts.

Read with python-dotenv's parser only: values are what the parser decodes (quotes
removed, escapes in double quotes applied) and are never interpolated — `${HOME}` stays
`${HOME}` — and nothing is read from the analyser's own environment.
"""

from __future__ import annotations

import io
import posixpath

from dotenv.parser import parse_stream

from deadline_audit.facts import EnvValue, FileFacts, InputProblem, KnobMention, Span

# `.env.example` and friends document knobs; they never hold deployed values.
DOC_NAMES = ("example", "sample", "template", "dist")


def env_file_role(path: str) -> tuple[str, str | None]:
    """("layer", None) for `.env`, ("profile", name) for `.env.<name>` / `<name>.env`,
    ("doc", None) for `.env.example|sample|template|dist` and `example.env` etc.

    A name matching no pattern (an explicit `--env-file deploy/vars`) is a layer: only
    configuration names such files, and configuration makes them layers.
    """
    name = posixpath.basename(path.replace("\\", "/"))
    if name == ".env":
        return ("layer", None)
    if name.startswith(".env."):
        profile = name[len(".env."):]
    elif name.endswith(".env") and len(name) > len(".env"):
        profile = name[: -len(".env")]
    else:
        return ("layer", None)
    if not profile:
        return ("layer", None)
    if profile.lower() in DOC_NAMES:
        return ("doc", None)
    return ("profile", profile)


def count_lines(text: str) -> int:
    """Lines as editors count them: a last line without a newline still counts."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _position(original: str, start_line: int, offset: int) -> tuple[int, int]:
    """1-based (line, column) of `offset` in a binding's original text.

    The parser attaches preceding blank lines to a binding's text, so count them.
    """
    before = original[:offset]
    line = start_line + before.count("\n")
    column = offset - (before.rfind("\n") + 1) + 1
    return line, column


def _key_offset(original: str, key: str) -> int:
    i = len(original) - len(original.lstrip())
    if original.startswith("export", i) and original[i + 6 : i + 7].isspace():
        i += 6
        while i < len(original) and original[i].isspace():
            i += 1
    found = original.find(key, i)  # skips an opening quote of a quoted key
    return found if found >= 0 else i


def extract_env(path: str, text: str) -> FileFacts:
    facts = FileFacts(path=path, kind="env", lines=count_lines(text))
    text = text.removeprefix("\ufeff")
    try:
        bindings = list(parse_stream(io.StringIO(text)))
    except Exception as exc:  # the parser is regex-based; be safe on pathological input
        facts.problems.append(InputProblem(f"cannot parse env file: {exc}"))
        return facts
    for b in bindings:
        original, first_line = b.original.string, b.original.line
        if b.error:
            stripped = original.strip()
            offset = original.find(stripped[:1]) if stripped else 0
            line, column = _position(original, first_line, offset)
            shown = stripped.splitlines()[0] if stripped else ""
            if len(shown) > 80:
                shown = shown[:77] + "..."
            facts.problems.append(InputProblem(f"malformed line: {shown}", line, column))
            continue
        if b.key is None:  # comment or blank line
            continue
        line, column = _position(original, first_line, _key_offset(original, b.key))
        span = Span(line, column, line, column + len(b.key))
        if b.value is None:
            # `KEY` alone sets nothing (dotenv leaves it unset) but names the knob.
            facts.knob_mentions.append(KnobMention(b.key, span))
        else:
            facts.env_values.append(EnvValue(b.key, b.value, span))
    return facts
