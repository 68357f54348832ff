"""Discovery: which files under the given paths are inputs, and of which kind.

Rules (SPEC §3, §9):
- kinds by name: python (*.py), go (*.go), gomod (go.mod), env (`.env`, `.env.*`, `*.env`),
  yaml (*.yaml, *.yml), toml (*.toml, pyproject.toml included), json (*.json),
  markdown (*.md, *.markdown); anything else is not an input;
- `.gitignore` files are honoured (gitwildmatch, each relative to its own directory,
  including those of parent directories up to the repository root) — except for env
  files, see `_is_gitignored`;
- directories never entered: vendor/, node_modules/, .git/, testdata/, the cache,
  virtualenvs, tool caches and editor settings (.vscode/, .idea/); lockfiles
  (package-lock.json, pnpm-lock.yaml) are not inputs; config `include`/`exclude` globs (relative to the config
  root) filter what is left;
- a file larger than `max-file-size`, a binary file (NUL byte in its first 8 KiB), text
  that is not UTF-8 and an unreadable file are reported as `InputError`s and skipped;
- symbolic links are followed only when they resolve inside the given roots, and every
  directory is entered at most once (by resolved path), so link loops end;
- paths named explicitly on the command line are analysed even when ignored or
  excluded (as ruff does), provided their kind is known.
The result is sorted by display path, so runs are deterministic.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pathspec

from deadline_audit.config import Config
from deadline_audit.findings import InputError

SKIP_DIRS = frozenset(
    {
        "vendor",
        "node_modules",
        ".git",
        ".hg",
        ".svn",
        "testdata",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".vscode",  # editor settings (JSON with comments), never the project's configuration
        ".idea",
    }
)
# Machine-written dependency pins: YAML/JSON by name, never configuration, and large
# (a pnpm lockfile trips the YAML alias-bomb guard).
LOCKFILES = frozenset({"package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml"})
BINARY_SNIFF_BYTES = 8192

_SUFFIX_KINDS = {
    ".py": "python",
    ".go": "go",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".json": "json",
    ".md": "markdown",
    ".markdown": "markdown",
}


@dataclass(frozen=True)
class SourceFile:
    path: Path  # absolute (not resolved through symlinks: the name the user sees)
    display: str  # POSIX, relative to the cwd, or absolute when outside it
    kind: str  # python | go | gomod | env | yaml | toml | json | markdown
    size: int
    lines: int = 0  # newline count (+1 when the last line has no newline)


def file_kind(name: str) -> str | None:
    """The input kind of a file name, or None when it is not an input."""
    if name == "go.mod":
        return "gomod"
    if name in LOCKFILES:
        return None
    if name == ".env" or name.startswith(".env.") or (name.endswith(".env") and len(name) > 4):
        return "env"
    return _SUFFIX_KINDS.get(os.path.splitext(name)[1].lower())


def display_path(path: Path, cwd: Path | None = None) -> str:
    """POSIX path relative to the cwd, or absolute when the file is outside it."""
    cwd = cwd or Path.cwd()
    path = Path(os.path.abspath(path))
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return path.as_posix()


def _spec(patterns: list[str]) -> pathspec.PathSpec | None:
    return pathspec.GitIgnoreSpec.from_lines(patterns) if patterns else None


class _GitIgnores:
    """The .gitignore files that apply to a directory, deepest last."""

    def __init__(self) -> None:
        self._cache: dict[Path, pathspec.PathSpec | None] = {}

    def spec_for(self, directory: Path) -> pathspec.PathSpec | None:
        if directory not in self._cache:
            spec = None
            gi = directory / ".gitignore"
            try:
                if gi.is_file():
                    spec = pathspec.GitIgnoreSpec.from_lines(
                        gi.read_text(encoding="utf-8", errors="replace").splitlines()
                    )
            except OSError:
                spec = None
            self._cache[directory] = spec
        return self._cache[directory]

    def ignored(self, path: Path, is_dir: bool, chain: list[Path]) -> bool:
        """Is `path` ignored by the .gitignore files of the directories in `chain`
        (outermost first)? The deepest file with a matching pattern decides."""
        for directory in reversed(chain):
            spec = self.spec_for(directory)
            if spec is None:
                continue
            try:
                rel = path.relative_to(directory).as_posix()
            except ValueError:
                continue
            result = spec.check_file(rel + "/" if is_dir else rel)
            if result.include is not None:
                return bool(result.include)
        return False


def _repo_ancestors(start: Path) -> list[Path]:
    """Directories from the repository root (the nearest ancestor holding .git) down to
    `start`'s parent; empty when `start` is not inside a repository."""
    chain = []
    for d in start.parents:
        chain.append(d)
        if (d / ".git").exists():
            return list(reversed(chain))
    return []


class _Walker:
    def __init__(self, roots: list[Path], config: Config, cwd: Path) -> None:
        self.config = config
        self.cwd = cwd
        self.resolved_roots = [r.resolve() for r in roots]
        self.gitignores = _GitIgnores()
        self.include = _spec(config.include)
        self.exclude = _spec(config.exclude)
        self.config_root = config.root.resolve()
        self.cache_dir = config.cache_path().resolve()
        self.cache_name = Path(config.cache_dir).name
        self.seen_dirs: set[Path] = set()
        self.seen_files: set[Path] = set()
        self.files: list[SourceFile] = []
        self.errors: list[InputError] = []

    # -- helpers ----------------------------------------------------------------------

    def _inside_roots(self, resolved: Path) -> bool:
        return any(resolved == r or resolved.is_relative_to(r) for r in self.resolved_roots)

    def _rel_for_globs(self, path: Path, walk_root: Path) -> str:
        for base in (self.config_root, walk_root):
            try:
                return Path(os.path.abspath(path)).relative_to(base).as_posix()
            except ValueError:
                continue
        return path.as_posix()

    def _excluded(self, path: Path, is_dir: bool, walk_root: Path) -> bool:
        if self.exclude is None:
            return False
        rel = self._rel_for_globs(path, walk_root)
        return self.exclude.match_file(rel + "/" if is_dir else rel)

    def _not_included(self, path: Path, walk_root: Path) -> bool:
        return self.include is not None and not self.include.match_file(self._rel_for_globs(path, walk_root))

    def _error(self, path: Path, message: str, line: int | None = None, column: int | None = None) -> None:
        self.errors.append(InputError(display_path(path, self.cwd), message, line, column))

    # -- walking ----------------------------------------------------------------------

    def add_root(self, root: Path) -> None:
        root = Path(os.path.abspath(root))
        if root.is_symlink() and not root.exists():
            self._error(root, "broken symbolic link")
            return
        if not root.exists():
            self._error(root, "no such file or directory")
            return
        if root.is_dir():
            chain = _repo_ancestors(root)
            self._walk_dir(root, root, chain)
            return
        kind = file_kind(root.name)
        if kind is None:
            self._error(root, "not a supported input (.py, .go, go.mod, .env, YAML, TOML, JSON, Markdown), skipped")
            return
        self._add_file(root, kind)

    def _walk_dir(self, directory: Path, walk_root: Path, chain: list[Path], resolved: Path | None = None) -> None:
        """`resolved`: the real path of `directory` when the caller knows it (a plain entry of
        a resolved directory): `resolve()` costs a system call per path component."""
        if resolved is None:
            try:
                resolved = directory.resolve()
            except (OSError, RuntimeError):
                self._error(directory, "cannot resolve directory (symbolic link loop?), skipped")
                return
        if resolved in self.seen_dirs:
            return  # already walked (a symlink loop or two links to one directory)
        self.seen_dirs.add(resolved)
        chain = [*chain, directory]
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            self._error(directory, f"cannot list directory: {e.strerror or e}")
            return
        for entry in entries:
            path = Path(entry.path)
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=True)
                is_file = entry.is_file(follow_symlinks=True)
            except OSError as e:
                self._error(path, f"cannot stat: {e.strerror or e}")
                continue
            if is_link:
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    if file_kind(entry.name) is not None:
                        self._error(path, "broken symbolic link (or link loop), skipped")
                    continue
                if not self._inside_roots(target):
                    continue  # never follow a link out of the analysed tree
            else:
                target = resolved / entry.name  # no link here: its parent's real path and its name
            if is_dir:
                if self._skip_dir(path, entry.name, walk_root, chain, target):
                    continue
                self._walk_dir(path, walk_root, chain, target)
            elif is_file:
                kind = file_kind(entry.name)
                if kind is None:
                    continue
                # .env files are deliberately NOT subject to .gitignore: `.env` is almost
                # always gitignored (it holds secrets), yet it is exactly the deployed
                # configuration whose values the rules compare (SPEC §2 env layers).
                if kind != "env" and self.gitignores.ignored(path, False, chain):
                    continue
                if self._excluded(path, False, walk_root) or self._not_included(path, walk_root):
                    continue
                self._add_file(path, kind, target)

    def _skip_dir(self, path: Path, name: str, walk_root: Path, chain: list[Path], resolved: Path) -> bool:
        if name in SKIP_DIRS or name == self.cache_name or resolved == self.cache_dir:
            return True
        if (path / "pyvenv.cfg").is_file():
            return True  # a virtualenv, whatever its name
        # Ignored directories are pruned as a whole (build output, caches); the env-file
        # exemption below applies to env files themselves, not to ignored directories.
        if self.gitignores.ignored(path, True, chain):
            return True
        return self._excluded(path, True, walk_root)

    def _add_file(self, path: Path, kind: str, resolved: Path | None = None) -> None:
        if resolved is None:
            try:
                resolved = path.resolve()
            except (OSError, RuntimeError):
                self._error(path, "cannot resolve path, skipped")
                return
        if resolved in self.seen_files:
            return
        self.seen_files.add(resolved)
        try:
            st = path.stat()
        except OSError as e:
            self._error(path, f"cannot read: {e.strerror or e}")
            return
        if not stat.S_ISREG(st.st_mode):
            self._error(path, "not a regular file, skipped")
            return
        limit = self.config.max_file_size
        if st.st_size > limit:
            self._error(path, f"file larger than {limit} bytes ({st.st_size} bytes), skipped")
            return
        try:
            with open(path, "rb") as fh:
                data = fh.read(limit + 1)
        except OSError as e:
            self._error(path, f"cannot read: {e.strerror or e}")
            return
        if len(data) > limit:
            self._error(path, f"file larger than {limit} bytes, skipped")
            return
        if b"\x00" in data[:BINARY_SNIFF_BYTES]:
            self._error(path, "binary file (NUL byte), skipped")
            return
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
            self._error(path, f"not valid UTF-8 (byte 0x{data[e.start]:02x}), skipped", line, column)
            return
        lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        self.files.append(SourceFile(path, display_path(path, self.cwd), kind, len(data), lines))


def discover(paths: list[Path], config: Config) -> tuple[list[SourceFile], list[InputError]]:
    """Input files under `paths` (files or directories) and the inputs that could not
    be read, both sorted by display path."""
    cwd = Path.cwd()
    walker = _Walker(list(paths) or [Path(".")], config, cwd)
    for root in paths or [Path(".")]:
        walker.add_root(Path(root))
    files = sorted(walker.files, key=lambda f: f.display)
    errors = sorted(walker.errors, key=lambda e: (e.path, e.line or 0))
    return files, errors
