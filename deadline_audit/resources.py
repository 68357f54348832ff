"""Where the shipped `rules/` folder lives: inside the wheel, or beside the package in a checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path


@cache
def rules_dir() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here / "rules", here.parent / "rules"):
        if (candidate / "catalog").is_dir():
            return candidate
    raise FileNotFoundError("deadline-audit's rules/ folder is missing from this installation")
