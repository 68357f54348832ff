"""What the wire analysis (wire.py) takes from the configuration (SPEC §6): named
`components` (globs relative to the configuration file's directory, the first match wins,
overriding the automatic go.mod / Python project roots) and explicit `links`.

Built once by the pipeline and handed to the graph build, like DA101's `lease-functions`:
the wire analysis is shared by DA401-DA403 and the exported graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from deadline_audit.config import Config, _is_glob
from deadline_audit.fingerprints import fingerprint_path


@dataclass
class WireConfig:
    root: Path | None = None
    components: list[tuple[str, pathspec.PathSpec]] = field(default_factory=list)
    links: list[dict] = field(default_factory=list)
    source: str = "configuration"  # the file, for messages
    _memo: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: Config) -> WireConfig:
        components = [(name, pathspec.GitIgnoreSpec.from_lines(globs)) for name, globs in config.components.items()]
        source = config.config_file.name if config.config_file else "configuration"
        return cls(config.root, components, list(config.links), source)

    def component(self, path: str) -> str | None:
        """The first configured component whose globs match `path` (a display path)."""
        if not self.components:
            return None
        if path not in self._memo:
            rel = fingerprint_path(path, self.root)
            self._memo[path] = next((name for name, spec in self.components if spec.match_file(rel)), None)
        return self._memo[path]

    def sender_files(self, link: dict) -> pathspec.PathSpec | None:
        if not _is_glob(link["sender"]):
            return None
        return pathspec.GitIgnoreSpec.from_lines([link["sender"]])

    def matches_files(self, spec: pathspec.PathSpec, path: str) -> bool:
        return spec.match_file(fingerprint_path(path, self.root))
