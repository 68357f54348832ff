"""Which files are test code (catalog `tests.patterns`, gitignore syntax, relative to the
configuration root).

Unless `include-tests` is set, test code is neither reported on (postprocess.py) nor
parsed: a `.go` / `.py` test file is read only for the names it spells (extraction.py,
extract/names.py). A shared leaf: the extraction, the post-processing and the review ask
the same question with the same answer. (Named so that it is not itself a test file.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pathspec

from deadline_audit.catalog import Catalog


class TestFiles:
    __test__ = False  # not a pytest class, whatever its name

    def __init__(self, catalog: Catalog, root: Path | None) -> None:
        patterns = catalog.file("tests").get("tests", {}).get("patterns", [])
        self.spec = pathspec.GitIgnoreSpec.from_lines(patterns)
        self.root = root
        self._root_prefix = os.path.join(str(root), "") if root is not None else None
        self._cwd = os.getcwd()
        self._memo: dict[str, bool] = {}

    def holds(self, path: str | Path) -> bool:
        """`path`: absolute, or relative to the working directory (a display path)."""
        key = os.fspath(path)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._holds(key)
        return found

    def _holds(self, path: str) -> bool:
        rel = os.path.normpath(os.path.join(self._cwd, os.fspath(path)))
        if self._root_prefix is not None:
            if rel.startswith(self._root_prefix):  # the usual case: no symlink to resolve
                rel = rel[len(self._root_prefix):]
            else:
                try:
                    rel = str(Path(rel).resolve().relative_to(self.root))
                except (ValueError, OSError):
                    pass
        return self.spec.match_file(Path(rel).as_posix())


def for_config(config) -> TestFiles:
    """The test-code patterns of a configuration's catalog (shipped plus its extensions)."""
    from deadline_audit.catalog import load_catalog

    return TestFiles(load_catalog(getattr(config, "catalog", {}) or {}), getattr(config, "root", None))
