"""Test support for the review report: a tiny DOM from the stdlib html.parser, and
Markdown table/section readers. Tests assert on rows and values, never on snapshots."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "br", "input", "img", "hr", "link", "col", "source", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list = field(default_factory=list)  # Element | str
    parent: "Element | None" = None

    @property
    def text(self) -> str:
        parts = []
        for child in self.children:
            parts.append(child if isinstance(child, str) else (" " if child.tag == "br" else "") + child.text)
        return "".join(parts)

    def norm(self) -> str:
        return " ".join(self.text.split())

    def iter(self):
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter()

    def find_all(self, tag: str | None = None, **attrs) -> list["Element"]:
        out = []
        for el in self.iter():
            if tag is not None and el.tag != tag:
                continue
            if all(_attr_matches(el, k.rstrip("_"), v) for k, v in attrs.items()):
                out.append(el)
        return out

    def find(self, tag: str | None = None, **attrs) -> "Element | None":
        found = self.find_all(tag, **attrs)
        return found[0] if found else None


def _attr_matches(el: Element, key: str, value: str) -> bool:
    if key == "class":
        return value in el.attrs.get("class", "").split()
    return el.attrs.get(key) == value


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        el = Element(tag, {k: v or "" for k, v in attrs}, parent=self.current)
        self.current.children.append(el)
        if tag not in VOID:
            self.current = el

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse_html(text: str) -> Element:
    builder = _Builder()
    builder.feed(text)
    builder.close()
    return builder.root


def table_rows(table: Element) -> list[dict[str, Element]]:
    """Body rows as {header text: cell}."""
    head = [th.norm() for th in table.find("thead").find_all("th")]
    rows = []
    for tr in table.find("tbody").find_all("tr"):
        cells = tr.find_all("td")
        if len(cells) == len(head):
            rows.append(dict(zip(head, cells)))
    return rows


# -- Markdown ------------------------------------------------------------------------

def md_section(text: str, title: str) -> str:
    """The body of the `## title` section."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"no section {title!r}"
    return match.group(1)


def md_tables(section: str) -> list[list[dict[str, str]]]:
    """Every pipe table of a section, as lists of {header: cell}."""
    tables, block = [], []
    for line in section.splitlines() + [""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if len(block) >= 2:
            head = _cells(block[0])
            tables.append([dict(zip(head, _cells(row))) for row in block[2:]])
        block = []
    return tables


def _cells(line: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [c.strip().replace("\\|", "|") for c in cells]
