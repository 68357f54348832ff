"""Reading the lines of analysed files for display (a leaf: the reporters and the
post-processing step both use it, neither reaches into the other for it)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path


def make_line_reader(cwd: Path | None = None) -> Callable[[str], list[str]]:
    """A cached `display path -> lines` reader (undecodable bytes replaced)."""
    base = cwd or Path.cwd()

    @lru_cache(maxsize=512)
    def read_lines(path: str) -> list[str]:
        try:
            return (base / path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []

    return read_lines
