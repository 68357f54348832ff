"""Config files (YAML, TOML, JSON) -> ConfigValue facts: one per scalar leaf.

Keys are dotted paths ("server.write_timeout"; list items "workers.0.timeout"). `raw` is
the scalar as the program would see it as text: strings decoded (quotes and escapes
resolved), numbers as written (TOML numbers normalised by tomllib: `1_000` -> "1000").
Spans cover the value. A file its own standard loader rejects yields one InputProblem
and no values: the program could not load it either.
"""

from __future__ import annotations

import json
import re
import tomllib

import tree_sitter_json
import tree_sitter_toml
import yaml
from tree_sitter import Language, Node, Parser

from deadline_audit.extract.envfile import count_lines
from deadline_audit.facts import ConfigValue, FileFacts, InputProblem, Span

MAX_YAML_NODES = 10_000  # per document, counting alias expansions
_MAX_MERGE_DEPTH = 32

_TOML = Language(tree_sitter_toml.language())
_JSON = Language(tree_sitter_json.language())

_YAML_NUMBER_TAGS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}
_YAML_MERGE_TAG = "tag:yaml.org,2002:merge"


# --- YAML -------------------------------------------------------------------------------


class _TooManyNodes(Exception):
    pass


def _mark_span(node: yaml.Node) -> Span:
    s, e = node.start_mark, node.end_mark
    return Span(s.line + 1, s.column + 1, e.line + 1, e.column + 1)


def _yaml_pairs(node: yaml.MappingNode, budget: list[int], depth: int = 0) -> list[tuple[str, yaml.Node]]:
    """Key/value pairs of a mapping with `<<` merges applied (explicit keys win)."""
    explicit: list[tuple[str, yaml.Node]] = []
    merged: list[tuple[str, yaml.Node]] = []
    for key, value in node.value:
        budget[0] += 1
        if budget[0] > MAX_YAML_NODES:
            raise _TooManyNodes
        if key.tag == _YAML_MERGE_TAG and depth < _MAX_MERGE_DEPTH:
            sources = value.value if isinstance(value, yaml.SequenceNode) else [value]
            for src in sources:
                if isinstance(src, yaml.MappingNode):
                    merged.extend(_yaml_pairs(src, budget, depth + 1))
        elif isinstance(key, yaml.ScalarNode):
            explicit.append((key.value, value))
    seen = {k for k, _ in explicit}
    for k, v in merged:
        if k not in seen:
            seen.add(k)
            explicit.append((k, v))
    return explicit


def _walk_yaml(root: yaml.Node, out: list[ConfigValue]) -> None:
    budget = [0]
    stack: list[tuple[yaml.Node, tuple[str, ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        budget[0] += 1
        if budget[0] > MAX_YAML_NODES:
            raise _TooManyNodes
        if isinstance(node, yaml.ScalarNode):
            if path:
                out.append(ConfigValue(".".join(path), node.value, _mark_span(node), node.tag in _YAML_NUMBER_TAGS))
        elif isinstance(node, yaml.MappingNode):
            pairs = _yaml_pairs(node, budget)
            stack.extend((v, path + (k,)) for k, v in reversed(pairs))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((v, path + (str(i),)) for i, v in reversed(list(enumerate(node.value))))


_TEMPLATE = re.compile(r"\{\{-?\s|\{%-?\s")


def extract_yaml(path: str, text: str) -> FileFacts:
    facts = FileFacts(path=path, kind="yaml", lines=count_lines(text))
    text = text.removeprefix("\ufeff")
    try:
        # SafeLoader's composer builds nodes only: no tags are constructed into objects.
        for doc in yaml.compose_all(text, Loader=yaml.SafeLoader):
            if doc is None:
                continue
            values: list[ConfigValue] = []
            try:
                _walk_yaml(doc, values)
            except _TooManyNodes:
                s = doc.start_mark
                facts.problems.append(
                    InputProblem(f"too many nodes (alias bomb?): more than {MAX_YAML_NODES}", s.line + 1, s.column + 1)
                )
                return facts
            facts.config_values.extend(values)
    except yaml.MarkedYAMLError as exc:
        if _TEMPLATE.search(text):
            # a Helm/Jinja template is YAML only once rendered: not a config this
            # program loads, and not an error in the user's tree
            facts.config_values.clear()
            return facts
        mark = exc.problem_mark or exc.context_mark
        message = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        facts.problems.append(InputProblem(f"invalid YAML: {message}", line, column))
    except yaml.YAMLError as exc:  # ReaderError: a control character, no mark
        facts.problems.append(InputProblem(f"invalid YAML: {str(exc).splitlines()[0]}"))
    except RecursionError:
        facts.problems.append(InputProblem("invalid YAML: nesting too deep"))
    return facts


# --- tree-sitter helpers ----------------------------------------------------------------


class _Positions:
    """Byte columns (tree-sitter) -> 1-based code-point columns."""

    def __init__(self, src: bytes):
        self.lines = src.split(b"\n")

    def col(self, row: int, byte_col: int) -> int:
        line = self.lines[row] if row < len(self.lines) else b""
        return len(line[:byte_col].decode("utf-8", "replace")) + 1

    def span(self, node: Node) -> Span:
        (r1, c1), (r2, c2) = node.start_point, node.end_point
        return Span(r1 + 1, self.col(r1, c1), r2 + 1, self.col(r2, c2))


def _first_error(node: Node) -> Node | None:
    if node.type == "ERROR" or node.is_missing:
        return node
    if not node.has_error:
        return None
    for child in node.children:
        found = _first_error(child)
        if found is not None:
            return found
    return node


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace")


def _problem(kind: str, message: str, line: int | None, column: int | None, tree, pos: _Positions) -> InputProblem:
    if line is None:
        err = _first_error(tree.root_node)
        if err is not None:
            span = pos.span(err)
            line, column = span.line, span.column
    return InputProblem(f"invalid {kind}: {message}", line, column)


# --- TOML -------------------------------------------------------------------------------

_TOML_AT = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)$")
_TOML_KEYS = {"bare_key", "quoted_key", "dotted_key"}
_TOML_SCALARS = {"string", "integer", "float", "boolean", "offset_date_time", "local_date_time", "local_date", "local_time"}


def _toml_key(node: Node) -> list[str]:
    if node.type == "dotted_key":
        return [part for child in node.named_children for part in _toml_key(child)]
    if node.type == "quoted_key":
        try:
            return [next(iter(tomllib.loads(_text(node) + " = 0")))]
        except (tomllib.TOMLDecodeError, StopIteration):
            return [_text(node)[1:-1]]
    return [_text(node)]


def _toml_raw(node: Node) -> str:
    text = _text(node)
    if node.type in ("string", "integer", "float"):
        try:
            value = tomllib.loads("v = " + text)["v"]
            return value if isinstance(value, str) else str(value)
        except tomllib.TOMLDecodeError:
            pass
    return text


class _TomlWalker:
    def __init__(self, pos: _Positions):
        self.pos = pos
        self.out: list[ConfigValue] = []
        self.arrays: dict[tuple[str, ...], int] = {}  # resolved path of [[x]] -> elements seen

    def header(self, parts: list[str], is_array: bool) -> tuple[str, ...]:
        resolved: tuple[str, ...] = ()
        for i, part in enumerate(parts):
            key = resolved + (part,)
            if is_array and i == len(parts) - 1:
                n = self.arrays.get(key, 0)
                self.arrays[key] = n + 1
                resolved = key + (str(n),)
            elif key in self.arrays:  # inside the latest element of an array of tables
                resolved = key + (str(self.arrays[key] - 1),)
            else:
                resolved = key
        return resolved

    def value(self, node: Node, path: tuple[str, ...]) -> None:
        if node.type in _TOML_SCALARS:
            is_number = node.type in ("integer", "float")
            self.out.append(ConfigValue(".".join(path), _toml_raw(node), self.pos.span(node), is_number))
        elif node.type == "array":
            items = [c for c in node.named_children if c.type != "comment"]
            for i, item in enumerate(items):
                self.value(item, path + (str(i),))
        elif node.type == "inline_table":
            self.pairs(node, path)

    def pairs(self, node: Node, prefix: tuple[str, ...]) -> None:
        for child in node.named_children:
            if child.type != "pair":
                continue
            named = [c for c in child.named_children if c.type != "comment"]
            if len(named) >= 2 and named[0].type in _TOML_KEYS:
                self.value(named[-1], prefix + tuple(_toml_key(named[0])))

    def document(self, root: Node) -> None:
        self.pairs(root, ())
        for child in root.named_children:
            if child.type in ("table", "table_array_element"):
                key = next((c for c in child.named_children if c.type in _TOML_KEYS), None)
                if key is None:
                    continue
                prefix = self.header(_toml_key(key), child.type == "table_array_element")
                self.pairs(child, prefix)


def extract_toml(path: str, text: str) -> FileFacts:
    facts = FileFacts(path=path, kind="toml", lines=count_lines(text))
    text = text.removeprefix("\ufeff")
    src = text.encode("utf-8", "surrogatepass")
    tree = Parser(_TOML).parse(src)
    pos = _Positions(src)
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message, line, column = str(exc), None, None
        m = _TOML_AT.search(message)
        if m:
            message = message[: m.start()]
            if m.group(1):
                line, column = int(m.group(1)), int(m.group(2))
            else:  # "at end of document": the message names that place
                line, column = text.count("\n") + 1, len(text.rsplit("\n", 1)[-1]) + 1
        facts.problems.append(_problem("TOML", message, line, column, tree, pos))
        return facts
    walker = _TomlWalker(pos)
    walker.document(tree.root_node)
    facts.config_values = walker.out
    return facts


# --- JSON -------------------------------------------------------------------------------


def _json_walk(node: Node, path: tuple[str, ...], pos: _Positions, out: list[ConfigValue]) -> None:
    kind = node.type
    if kind == "object":
        for pair in node.named_children:
            if pair.type != "pair":
                continue
            key, value = pair.child_by_field_name("key"), pair.child_by_field_name("value")
            if key is None or value is None:
                continue
            try:
                name = json.loads(_text(key))
            except ValueError:
                name = _text(key).strip('"')
            _json_walk(value, path + (str(name),), pos, out)
    elif kind == "array":
        items = [c for c in node.named_children if c.type != "comment"]
        for i, item in enumerate(items):
            _json_walk(item, path + (str(i),), pos, out)
    elif path and kind in ("string", "number", "true", "false", "null"):
        raw = _text(node)
        if kind == "string":
            try:
                raw = json.loads(raw)
            except ValueError:
                raw = raw[1:-1]
        out.append(ConfigValue(".".join(path), raw, pos.span(node), kind == "number"))


def _has_comment(root) -> bool:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            return True
        stack.extend(node.children)
    return False


def extract_json(path: str, text: str) -> FileFacts:
    facts = FileFacts(path=path, kind="json", lines=count_lines(text))
    text = text.removeprefix("\ufeff")
    src = text.encode("utf-8", "surrogatepass")
    tree = Parser(_JSON).parse(src)
    pos = _Positions(src)
    try:
        json.loads(text)
    except RecursionError:
        facts.problems.append(_problem("JSON", "nesting too deep", None, None, tree, pos))
        return facts
    except json.JSONDecodeError as exc:
        # JSON with comments (VS Code, devcontainer, tsconfig) is a dialect, not an error:
        # tree-sitter-json reads comments, so a clean tree is taken as it is
        if tree.root_node.has_error or not _has_comment(tree.root_node):
            facts.problems.append(_problem("JSON", exc.msg, exc.lineno, exc.colno, tree, pos))
            return facts
    try:
        for child in tree.root_node.named_children:
            _json_walk(child, (), pos, facts.config_values)
    except RecursionError:
        facts.config_values.clear()
        facts.problems.append(InputProblem("invalid JSON: nesting too deep"))
    return facts
