"""The rule documentation in rules/ follows the contract of SPEC §4 and its examples parse."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from deadline_audit import rules_doc
from deadline_audit.rules_doc import SECTIONS, RuleDocError, get_rule, load_rules, parse_rule_text

# SPEC §4: the IDs, names and severities are fixed.
EXPECTED = {
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

# Options that the brief and SPEC make part of the contract: rule -> {option: default}.
EXPECTED_OPTIONS = {
    "DA101": {"lease-functions": []},
    "DA103": {"warn-ratio": 0.5},
    "DA201": {"asyncio-level-cancellation": False},
    "DA501": {"patterns": None, "exempt": None},  # None: present, catalog-sized default
    "DA502": {"ratio": 10},
}

CODE_LANGUAGES = ("go", "python")
# fence languages accepted for a data language
FENCE_NAMES = {
    "env": {"env", "dotenv", "sh", "shell", "bash"},
    "yaml": {"yaml", "yml"},
    "toml": {"toml"},
    "json": {"json"},
    "markdown": {"markdown", "md"},
}

RULE_IDS = sorted(EXPECTED)


def _go_parser():
    tsgo = pytest.importorskip("tree_sitter_go")
    from tree_sitter import Language, Parser

    return Parser(Language(tsgo.language()))


def _all_examples():
    for doc in load_rules():
        for section in ("Example", "Use instead"):
            for index, example in enumerate(doc.examples(section)):
                kind = "bad" if section == "Example" else "good"
                yield pytest.param(doc.id, example, id=f"{doc.id}-{kind}-{example.language}-{index}")


def test_every_rule_is_documented_with_fixed_id_name_severity():
    docs = {doc.id: doc for doc in load_rules()}
    assert sorted(docs) == RULE_IDS
    for rule_id, (name, severity) in EXPECTED.items():
        assert (docs[rule_id].name, docs[rule_id].severity) == (name, severity), rule_id


def test_load_rules_is_sorted_and_cached():
    docs = load_rules()
    assert [doc.id for doc in docs] == RULE_IDS
    assert load_rules() is docs


def test_get_rule():
    assert get_rule("DA101").name == "shadowed-lease"
    assert get_rule("da502").id == "DA502"
    with pytest.raises(KeyError):
        get_rule("DA999")


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_front_matter(rule_id):
    doc = get_rule(rule_id)
    assert doc.summary and "\n" not in doc.summary
    assert doc.languages, "a rule applies to at least one language"
    assert set(doc.languages) <= set(rules_doc.LANGUAGES)
    for key, spec in doc.options.items():
        assert {"type", "default", "description"} <= spec.keys(), key
        assert spec["description"].strip(), key
    for key, default in EXPECTED_OPTIONS.get(rule_id, {}).items():
        assert key in doc.options, f"{rule_id} documents option {key}"
        if default is not None:
            assert doc.options[key]["default"] == default


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_sections_in_order(rule_id):
    doc = get_rule(rule_id)
    assert tuple(doc.sections) == SECTIONS
    for title, text in doc.sections.items():
        assert text.strip(), f"{rule_id}: section {title!r} is empty"
    assert doc.text.lstrip().startswith("## What it does")
    assert "+++" not in doc.text.splitlines()[0]


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_bad_and_good_example_per_language(rule_id):
    doc = get_rule(rule_id)
    for section in ("Example", "Use instead"):
        examples = doc.examples(section)
        assert examples, f"{rule_id}: {section} has no example tree"
        tree_languages = {example.language for example in examples}
        fence_languages = {lang for example in examples for lang in example.file_languages.values()}
        for language in doc.languages:
            if language in CODE_LANGUAGES:
                assert language in tree_languages, f"{rule_id}: {section} lacks a {language} tree"
            else:
                assert fence_languages & FENCE_NAMES[language], (
                    f"{rule_id}: {section} has no {language} file"
                )
        for example in examples:
            assert example.language in doc.languages or example.language in CODE_LANGUAGES


@pytest.mark.parametrize(("rule_id", "example"), list(_all_examples()))
def test_example_files_parse(rule_id, example):
    parser = _go_parser()
    has_go = False
    for path, content in example.files.items():
        suffix = Path(path).suffix
        if suffix == ".go":
            has_go = True
            tree = parser.parse(content.encode("utf-8"))
            assert not tree.root_node.has_error, f"{rule_id} {path}: Go syntax error"
        elif suffix == ".py":
            ast.parse(content, filename=path)
        elif suffix in (".yaml", ".yml"):
            yaml.safe_load(content)
        elif suffix == ".json":
            import json

            json.loads(content)
        elif suffix == ".toml":
            import tomllib

            tomllib.loads(content)
    if has_go:
        assert "go.mod" in example.files, f"{rule_id}: a Go tree needs a go.mod"
        gomod = example.files["go.mod"]
        assert "module example.com/app" in gomod and "go 1.22" in gomod


def test_example_trees_group_blocks_by_h3():
    source = """+++
id = "DA999"
name = "test-rule"
severity = "info"
summary = "x"
languages = ["go", "python"]
+++

## What it does

x

## Why is this bad?

x

## Example

### Go

```text title="go.mod"
module example.com/app
```

```go title="main.go"
package main
```

Some prose, and an illustration that is not a file:

```go
x := 1
```

### Python

````python title="app.py"
# ```not a fence end
x = 1
````

## Use instead

```env title=".env"
A=1
```

```python title="svc/app.py"
import os
```

## Known problems

x

## References

x
"""
    doc = parse_rule_text(source, Path("DA999.md"))
    bad = doc.examples("Example")
    assert [example.language for example in bad] == ["go", "python"]
    assert bad[0].files == {"go.mod": "module example.com/app\n", "main.go": "package main\n"}
    assert bad[0].file_languages == {"go.mod": "text", "main.go": "go"}
    assert bad[1].files == {"app.py": "# ```not a fence end\nx = 1\n"}
    good = doc.examples("Use instead")
    assert len(good) == 1 and good[0].language == "python"
    assert set(good[0].files) == {".env", "svc/app.py"}


def test_missing_or_misordered_section_names_the_file():
    source = """+++
id = "DA999"
name = "test-rule"
severity = "info"
summary = "x"
languages = ["go"]
+++

## What it does

## Example

## Why is this bad?

## Use instead

## Known problems

## References
"""
    with pytest.raises(RuleDocError, match="DA999.md"):
        parse_rule_text(source, Path("rules/DA999.md"))
    with pytest.raises(RuleDocError, match="front matter"):
        parse_rule_text("## What it does\n", Path("rules/DA998.md"))
