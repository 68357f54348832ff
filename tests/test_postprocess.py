from pathlib import Path

from deadline_audit.config import Config
from deadline_audit.findings import Finding, FlowStep, Location
from deadline_audit.postprocess import finalize
from deadline_audit.suppressions import parse_line


def finding(path, line, rule="DA101", source=None, severity="error", column=1):
    flow = [FlowStep(node=source, label=source)] if source else []
    return Finding(rule, "shadowed-lease", severity, "msg", Location(path, line, column), flow=flow)


def reader(files):
    return lambda path: files.get(path, [])


def test_inline_suppressions_per_language():
    files = {
        "a.py": ["x = 1  # deadline-audit: ignore[DA101] lease is advisory", "y = 2"],
        "b.go": ["// deadline-audit:ignore DA101,DA102 reason", "c := &http.Client{Timeout: t}"],
        "c.md": ["<!-- deadline-audit: ignore[DA501] -->", "`MODEL_TTL`"],
        "d.env": ["# deadline-audit: ignore", "A_TIMEOUT=3"],
        "e.yaml": ["timeout: 3  # deadline-audit: ignore[DA2] wrong rule"],
    }
    raw = [
        finding("a.py", 1), finding("a.py", 2),  # trailing comment does not reach line 2
        finding("b.go", 2), finding("c.md", 2, "DA501"), finding("d.env", 2, "DA501"),
        finding("e.yaml", 1),
    ]
    kept, suppressed = finalize(raw, Config(root=Path.cwd()), reader(files))
    assert [(f.location.path, f.location.line) for f in kept] == [("a.py", 2), ("e.yaml", 1)]
    assert suppressed == 4


def test_parse_line_forms():
    assert parse_line("# deadline-audit: ignore[DA101, DA102] why").rules == ("DA101", "DA102")
    assert parse_line("// deadline-audit:ignore DA101 because").rules == ("DA101",)
    assert parse_line("// deadline-audit:ignore because reasons").rules is None
    assert parse_line("x = 1").__class__ is type(None)
    assert parse_line("x = 1 # deadline-audit: ignore[DA1]").standalone is False


def test_select_ignore_severity_and_per_file_ignores(tmp_path):
    config = Config(root=tmp_path, ignore=["DA2"], severity={"DA1": "warning", "DA101": "info"},
                    per_file_ignores={"tests/**": ["DA3"]})
    raw = [finding("a.go", 1, "DA101"), finding("a.go", 2, "DA102"), finding("a.go", 3, "DA201"),
           finding("tests/x.py", 1, "DA301"), finding("src/x.py", 1, "DA301")]
    kept, suppressed = finalize(raw, config, reader({}))
    assert [(f.rule_id, f.severity) for f in kept] == [("DA101", "info"), ("DA102", "warning"), ("DA301", "error")]
    assert suppressed == 1


def test_fingerprints_survive_moves_and_tell_duplicates_apart(tmp_path):
    line = "    c := &http.Client{Timeout: cfg.Timeout}"
    before = {"a.go": ["package a", line, "x", line]}
    after = {"a.go": ["package a", "// new comment", "", line.replace("    ", "\t"), "x", line]}
    config = Config(root=tmp_path)
    k1, _ = finalize([finding("a.go", 2, source="env:T"), finding("a.go", 4, source="env:T")], config, reader(before))
    k2, _ = finalize([finding("a.go", 4, source="env:T"), finding("a.go", 6, source="env:T")], config, reader(after))
    assert [f.fingerprint for f in k1] == [f.fingerprint for f in k2]
    assert k1[0].fingerprint != k1[1].fingerprint
    k3, _ = finalize([finding("a.go", 2, source="env:OTHER")], config, reader(before))
    assert k3[0].fingerprint != k1[0].fingerprint
    assert len(k1[0].fingerprint) == 64


def test_sorted_and_deduplicated(tmp_path):
    raw = [finding("b.py", 1), finding("a.py", 5, column=3), finding("a.py", 5, column=1), finding("b.py", 1)]
    kept, _ = finalize(raw, Config(root=tmp_path), reader({}))
    assert [(f.location.path, f.location.line, f.location.column) for f in kept] == [
        ("a.py", 5, 1), ("a.py", 5, 3), ("b.py", 1, 1)]
