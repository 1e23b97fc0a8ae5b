"""Where a session's workspace context comes from: the homes, the instruction files, the skills."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from dsh import jsonx

DEFAULT_MAX_BYTES: Final = 65536
MAX_SOURCE_BYTES: Final = 1_048_576
CANDIDATES: Final = ("AGENTS.md", "CLAUDE.md")
LOCAL_CANDIDATES: Final = ("AGENTS.local.md", "CLAUDE.local.md")


def _names(names: tuple[str, ...]) -> tuple[str, ...]:
    """Candidate file names as the original keeps them (no empty, ``.``, ``..`` or separators)."""
    return tuple(n for n in names if n not in ("", ".", "..") and "/" not in n and "\\" not in n)


@dataclass(frozen=True, slots=True)
class InstructionsConfig:
    """The original's ``workspaceContext`` (AGENTS.md / CLAUDE.md) settings."""

    max_bytes: int = DEFAULT_MAX_BYTES
    """Byte budget of each rendered batch; non-positive disables loading."""
    project_root_markers: tuple[str, ...] = (".git",)
    candidates: tuple[str, ...] = CANDIDATES
    local_candidates: tuple[str, ...] = LOCAL_CANDIDATES
    max_source_bytes: int = MAX_SOURCE_BYTES
    """A larger file is ignored entirely."""

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    def files(self) -> tuple[str, ...]:
        """The names probed in each directory, in order (base, then local)."""
        return _names(self.candidates) + _names(self.local_candidates)

    def identity(self, project_root: str) -> str:
        """The ``baselineIdentity`` (compact JSON, the original's key order)."""
        return jsonx.dumps(
            {
                "projectRoot": project_root,
                "projectRootMarkers": list(self.project_root_markers),
                "maxBytes": self.max_bytes,
                "maxSourceBytes": self.max_source_bytes,
                "instructionFileCandidates": list(_names(self.candidates)),
                "localInstructionFileCandidates": list(_names(self.local_candidates)),
            }
        ).decode()


@dataclass(frozen=True, slots=True)
class WorkspaceConfig:
    """A session's workspace context: instructions (``None``: off), skills, the two homes.

    ``dsh_home`` holds the user-global ``AGENTS.md`` and ``skills/``; ``agents_home`` the
    shared ``skills/`` (``~/.agents``). ``default_home``: ``dsh_home`` is ``~/.dsh`` (the
    global file then displays as ``~/.dsh/AGENTS.md``, else ``$DSH_HOME/AGENTS.md``).
    """

    dsh_home: Path | None = None
    """``None``: ``<cwd>/.dsh`` of the session (a replay never reads the user's own files)."""
    agents_home: Path | None = None
    """``None``: ``<cwd>/.agents`` of the session."""
    default_home: bool = False
    instructions: InstructionsConfig | None = field(default_factory=InstructionsConfig)
    skills: bool = True
    claude_dirs: bool = True
    """Also read Claude Code's places: ``.claude/skills/`` of the project and of ``~/.claude``."""
    claude_home: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> WorkspaceConfig:
        """``$DSH_HOME`` (default ``~/.dsh``), ``$DSH_AGENTS_HOME`` (default ``~/.agents``)."""
        env = os.environ if env is None else env
        home = Path(env.get("HOME") or os.path.expanduser("~"))
        dsh_home = env.get("DSH_HOME", "").strip()
        agents = env.get("DSH_AGENTS_HOME", "").strip()
        return cls(
            dsh_home=Path(dsh_home) if dsh_home else home / ".dsh",
            agents_home=Path(agents) if agents else home / ".agents",
            default_home=not dsh_home,
            claude_home=home / ".claude",
        )

    @classmethod
    def inside(cls, instructions: InstructionsConfig | None = None) -> WorkspaceConfig:
        """Homes inside each session's workspace (``<cwd>/.dsh``, ``<cwd>/.agents``), as the
        original's snapshot runs have them: a replay never reads the user's own files."""
        return cls(instructions=instructions or InstructionsConfig(), claude_dirs=False)

    def homes(self, cwd: Path) -> tuple[Path, Path]:
        """The dsh home and the agents home of a session in ``cwd``."""
        return (self.dsh_home or cwd / ".dsh", self.agents_home or cwd / ".agents")

    def global_display(self) -> str:
        return "~/.dsh/AGENTS.md" if self.default_home else "$DSH_HOME/AGENTS.md"
