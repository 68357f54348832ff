import os
from pathlib import Path

import pytest

from deadline_audit.config import Config
from deadline_audit.discovery import discover, file_kind


def write(root: Path, rel: str, data: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


@pytest.fixture
def tree(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    write(root, "svc/ok.py", "TIMEOUT = 30\n")
    write(root, "svc/broken.py", "def f(:\n")  # invalid Python: still an input
    write(root, "agent/main.go", "package main\n")
    write(root, "agent/broken.go", "package main\nfunc {\n")  # invalid Go: still an input
    write(root, "agent/go.mod", "module example.com/agent\n\ngo 1.22\n")
    write(root, "agent/vendor/dep/dep.go", "package dep\n")
    write(root, "web/node_modules/x/config.json", "{}\n")
    write(root, "agent/testdata/t.go", "package t\n")
    write(root, "latin1.yaml", b"name: caf\xe9\n")
    write(root, "blob.json", b'{"a": 1}\x00\x00binary')
    write(root, "big.toml", "x = 1\n" * 100)
    write(root, ".gitignore", "generated/\n*.log.md\n.env\n")
    write(root, "generated/gen.py", "X = 1\n")
    write(root, "notes.log.md", "ignored\n")
    write(root, "README.md", "# readme\n")
    write(root, ".env", "MODEL_TIMEOUT=30m\n")  # gitignored, yet analysed
    write(root, "config/.env.prod", "MODEL_TIMEOUT=30m\n")
    write(root, "config/prod.env", "A=1\n")
    write(root, "config/.env.example", "MODEL_TIMEOUT=2m\n")
    write(root, "docs/picture.png", b"\x89PNG")
    write(root, ".deadline-audit-cache/x.json", "{}\n")
    write(root, ".venv/lib/site.py", "X = 1\n")
    write(root, ".vscode/settings.json", '{\n  // editor settings\n  "a": 1,\n}\n')  # JSON with comments
    write(root, "web/pnpm-lock.yaml", "lockfileVersion: '9.0'\n")
    write(root, "web/package-lock.json", "{}\n")
    os.symlink(root / "svc", root / "svc" / "loop")  # a symlink loop
    outside = tmp_path / "outside"
    write(outside, "secret.py", "X = 1\n")
    os.symlink(outside, root / "escape")  # resolves outside the root: never followed
    monkeypatch.chdir(root)
    return root


def run(root: Path, **config):
    return discover([Path(".")], Config(root=root, **config))


def test_kinds_and_skips(tree):
    files, errors = run(tree, max_file_size=500)
    shown = {f.display: f.kind for f in files}
    assert shown == {
        ".env": "env",
        "README.md": "markdown",
        "agent/broken.go": "go",
        "agent/go.mod": "gomod",
        "agent/main.go": "go",
        "config/.env.example": "env",
        "config/.env.prod": "env",
        "config/prod.env": "env",
        "svc/broken.py": "python",
        "svc/ok.py": "python",
    }
    assert [f.display for f in files] == sorted(shown)
    assert all(f.path.is_absolute() for f in files)
    assert next(f for f in files if f.display == "svc/ok.py").lines == 1


def test_bad_inputs_are_reported_not_fatal(tree):
    _, errors = run(tree, max_file_size=500)
    by_path = {e.path: e for e in errors}
    assert set(by_path) == {"latin1.yaml", "blob.json", "big.toml"}
    assert "UTF-8" in by_path["latin1.yaml"].message and by_path["latin1.yaml"].line == 1
    assert by_path["latin1.yaml"].column == 10
    assert "binary" in by_path["blob.json"].message
    assert "larger than 500 bytes" in by_path["big.toml"].message


def test_include_and_exclude(tree):
    files, _ = run(tree, exclude=["agent/**"], include=["**/*.go", "**/*.py"])
    assert [f.display for f in files] == ["svc/broken.py", "svc/ok.py"]


def test_explicit_file_is_analysed_even_if_ignored(tree):
    files, errors = discover([Path("generated/gen.py"), Path("docs/picture.png")], Config(root=tree))
    assert [f.display for f in files] == ["generated/gen.py"]
    assert errors[0].path == "docs/picture.png" and "not a supported input" in errors[0].message


def test_nested_gitignore_is_relative_to_its_directory(tree):
    write(tree, "svc/.gitignore", "ok.py\n")
    files, _ = run(tree)
    assert "svc/ok.py" not in {f.display for f in files}
    assert "svc/broken.py" in {f.display for f in files}


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_unreadable_file_is_reported(tree):
    p = write(tree, "svc/locked.py", "X = 1\n")
    p.chmod(0)
    try:
        _, errors = run(tree)
    finally:
        p.chmod(0o644)
    assert any(e.path == "svc/locked.py" and "cannot read" in e.message for e in errors)


def test_paths_outside_cwd_are_absolute(tmp_path, monkeypatch):
    write(tmp_path / "a", "x.py", "X = 1\n")
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "b")
    files, _ = discover([tmp_path / "a"], Config(root=tmp_path / "a"))
    assert files[0].display == (tmp_path / "a" / "x.py").as_posix()


@pytest.mark.parametrize(
    "name, kind",
    [(".env", "env"), (".env.local", "env"), ("prod.env", "env"), ("go.mod", "gomod"),
     ("go.sum", None), ("pyproject.toml", "toml"), ("a.yml", "yaml"), ("x.txt", None), ("env", None),
     ("pnpm-lock.yaml", None), ("package-lock.json", None), ("package.json", "json")],
)
def test_file_kind(name, kind):
    assert file_kind(name) == kind
