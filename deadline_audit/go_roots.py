"""Import paths of Go code that no go.mod covers (trees written before modules: dep,
glide, a GOPATH checkout).

Such a tree still names its own packages by their full import path
(`github.com/acme/worker/backend`), and the folder that holds a package is that path's
tail (`backend/`). Each import whose tail is a folder of the tree votes for the folder
that the rest of the path names (`github.com/acme/worker` → the tree's root); an import
comment (`package worker // import "github.com/acme/worker"`) is a vote of its own. The
path with the most votes wins. Without any vote, a package is named by its folder, as
before (calls across packages then stay external).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

# import specs: `import "x"`, `import alias "x"`, and the lines of an `import ( … )` block
_IMPORT_BLOCK = re.compile(rb"^import\s*\((.*?)^\)", re.S | re.M)
_IMPORT_LINE = re.compile(rb'^import\s+(?:[\w.]+\s+)?"([^"]+)"', re.M)
_SPEC = re.compile(rb'^\s*(?:[\w.]+\s+)?"([^"]+)"', re.M)
_IMPORT_COMMENT = re.compile(rb'^package\s+\w+\s*//\s*import\s+"([^"]+)"', re.M)
_HEAD = 16384  # imports sit at the top of a file


def infer_roots(files: list[Path]) -> dict[Path, tuple[str, str]]:
    """Folder → (import path of that folder, import path of its root), for the folders
    that hold `files` (Go files outside any go.mod) and whose path the imports reveal."""
    dirs = {f.parent for f in files}
    if not dirs:
        return {}
    # every way to split a package folder into (root, tail): the tail is what an import ends with
    roots_by_tail: dict[str, set[Path]] = {}
    for d in dirs:
        for depth, root in enumerate(d.parents):
            if depth >= 8:
                break
            roots_by_tail.setdefault(d.relative_to(root).as_posix(), set()).add(root)
    votes: Counter[tuple[Path, str]] = Counter()
    for f in files:
        try:
            with f.open("rb") as fh:
                head = fh.read(_HEAD)
        except OSError:
            continue
        named = _IMPORT_COMMENT.search(head)
        if named:
            votes[(f.parent, named.group(1).decode("utf-8", "replace"))] += 10
        for path in _imports(head):
            parts = path.split("/")
            for k in range(1, len(parts)):
                for root in roots_by_tail.get("/".join(parts[k:]), ()):
                    votes[(root, "/".join(parts[:k]))] += 1
    best: dict[Path, tuple[int, str]] = {}
    for (root, prefix), n in votes.items():
        if n > best.get(root, (0, ""))[0]:
            best[root] = (n, prefix)
    found: dict[Path, tuple[str, str]] = {}
    for d in dirs:
        # the folder or ancestor with the most votes (a stray tail match names another)
        named = [(best[root][0], -depth, root) for depth, root in enumerate((d, *d.parents)) if root in best]
        if named:
            root = max(named)[2]
            rel = d.relative_to(root).as_posix()
            prefix = best[root][1]
            found[d] = (prefix if rel == "." else f"{prefix}/{rel}", prefix)
    return found


def _imports(head: bytes) -> list[str]:
    specs = [m.group(1) for m in _IMPORT_LINE.finditer(head)]
    for block in _IMPORT_BLOCK.finditer(head):
        specs.extend(m.group(1) for m in _SPEC.finditer(block.group(1)))
    return [s.decode("utf-8", "replace") for s in specs if b"/" in s]
