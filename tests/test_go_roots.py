"""Import paths of Go code outside any go.mod, read from the tree's own imports."""

from __future__ import annotations

from pathlib import Path

from deadline_audit.extraction import plan_jobs
from deadline_audit.discovery import SourceFile
from deadline_audit.go_roots import infer_roots


def _write(root: Path, files: dict[str, str]) -> list[Path]:
    out = []
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out.append(path)
    return out


def test_imports_of_the_trees_own_packages_name_its_root(tmp_path):
    files = _write(tmp_path / "checkout", {
        "main.go": 'package main\n\nimport (\n\t"fmt"\n\t"github.com/acme/hub/queue"\n\tlog "github.com/acme/hub/internal/logging"\n)\n',
        "queue/queue.go": 'package queue\n\nimport "github.com/acme/hub/internal/logging"\n',
        "internal/logging/log.go": 'package logging\n\nimport "github.com/sirupsen/logrus"\n',
        # a stray tail: an outside package whose last folder has a namesake here
        "errors/errors.go": 'package errors\n\nimport "github.com/pkg/errors"\n',
    })
    found = infer_roots(files)
    root = tmp_path / "checkout"
    assert found[root] == ("github.com/acme/hub", "github.com/acme/hub")
    assert found[root / "queue"] == ("github.com/acme/hub/queue", "github.com/acme/hub")
    assert found[root / "internal/logging"] == ("github.com/acme/hub/internal/logging", "github.com/acme/hub")
    assert found[root / "errors"] == ("github.com/acme/hub/errors", "github.com/acme/hub")


def test_an_import_comment_names_its_package(tmp_path):
    files = _write(tmp_path, {"lib/lib.go": 'package lib // import "example.org/tools/lib"\n\nimport "os"\n'})
    assert infer_roots(files) == {tmp_path / "lib": ("example.org/tools/lib", "example.org/tools/lib")}


def test_without_any_vote_a_package_keeps_its_folder_name(tmp_path):
    files = _write(tmp_path, {"tool/main.go": 'package main\n\nimport "fmt"\n'})
    assert infer_roots(files) == {}
    jobs = plan_jobs([SourceFile(files[0], "tool/main.go", "go", 10)])
    assert (jobs[0].module, jobs[0].go_module) == ("tool", None)


def test_a_go_mod_still_decides_for_the_files_it_covers(tmp_path):
    files = _write(tmp_path, {
        "go.mod": "module example.com/svc\n\ngo 1.22\n",
        "api/api.go": 'package api\n\nimport "github.com/other/thing/api"\n',
    })
    jobs = plan_jobs([SourceFile(files[0], "go.mod", "gomod", 10), SourceFile(files[1], "api/api.go", "go", 10)])
    go = [j for j in jobs if j.kind == "go"][0]
    assert (go.module, go.go_module) == ("example.com/svc/api", "example.com/svc")
