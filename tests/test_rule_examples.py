"""The executable examples of rules/DAxxx.md (SPEC §4).

For every rule and every example tree in its documentation, the files are written into an
empty directory and the real analysis runs on it: a tree from "Example" must be flagged
with that rule, a tree from "Use instead" must not.

Bad examples of rules that have no registered check yet are expected failures (strict, so
a check that starts flagging them turns the mark into an error to remove). Good examples
run for every rule: with no check they trivially produce no finding of that rule.
"""

from __future__ import annotations

import inspect

import pytest

from deadline_audit.checks import implemented_rules
from deadline_audit.rules_doc import load_rules

pipeline = pytest.importorskip(
    "deadline_audit.pipeline", reason="deadline_audit.pipeline is not importable yet"
)
config_module = pytest.importorskip(
    "deadline_audit.config", reason="deadline_audit.config is not importable yet"
)
if not hasattr(pipeline, "analyse") or not hasattr(config_module, "load_config"):
    pytest.skip(
        "pipeline.analyse / config.load_config do not exist yet", allow_module_level=True
    )

KIND = {"Example": "bad", "Use instead": "good"}
# An input error carrying this text means a module of the analyser itself is missing
# (being written); the example cannot be judged yet.
_PENDING_COMPONENT = "ModuleNotFoundError: No module named 'deadline_audit."


def _cases():
    implemented = implemented_rules()
    for doc in load_rules():
        for section, kind in KIND.items():
            examples = doc.examples(section)
            counts: dict[str, int] = {}
            for example in examples:
                counts[example.language] = counts.get(example.language, 0) + 1
            seen: dict[str, int] = {}
            for example in examples:
                case_id = f"{doc.id}-{kind}-{example.language}"
                if counts[example.language] > 1:
                    seen[example.language] = seen.get(example.language, 0) + 1
                    case_id += f"-{seen[example.language]}"
                marks = []
                if kind == "bad" and doc.id not in implemented:
                    marks.append(pytest.mark.xfail(strict=True, reason="not implemented yet"))
                yield pytest.param(doc.id, kind, example, id=case_id, marks=marks)


def _analyse(root):
    config = config_module.load_config([root])
    kwargs = {}
    if "use_cache" in inspect.signature(pipeline.analyse).parameters:
        kwargs["use_cache"] = False  # never write a cache into the example tree
    return pipeline.analyse([root], config, **kwargs)


def _describe(findings) -> str:
    lines = []
    for finding in findings:
        location = getattr(finding, "location", None)
        where = f"{location.path}:{location.line}" if location is not None else "?"
        lines.append(f"  {finding.rule_id} {where} {getattr(finding, 'message', '')}")
    return "\n".join(lines) or "  (none)"


@pytest.mark.parametrize(("rule_id", "kind", "example"), list(_cases()))
def test_rule_example(rule_id, kind, example, tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    example.write_to(root)
    result = _analyse(root)
    errors = list(getattr(result, "errors", []))
    pending = [e for e in errors if _PENDING_COMPONENT in str(getattr(e, "message", e))]
    if pending:
        pytest.skip(f"an extractor is not written yet: {pending[0].message}")
    assert not errors, f"the example tree has input errors: {errors}"
    hits = [finding for finding in result.findings if finding.rule_id == rule_id]
    if kind == "bad":
        assert hits, (
            f"{rule_id}: the bad {example.language} example is not flagged; "
            f"all findings:\n{_describe(result.findings)}"
        )
    else:
        assert not hits, f"{rule_id}: the good {example.language} example is flagged:\n{_describe(hits)}"
