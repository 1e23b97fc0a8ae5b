"""Finding the instruction files: the project root, the candidates per directory, their contents."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from dsh.context.config import InstructionsConfig, WorkspaceConfig

GLOBAL_DIR = "user-global"


@dataclass(frozen=True, slots=True)
class InstructionFile:
    """One loaded file: its scope key (``<dir>\\0<name>``), display path, raw text, sha1."""

    scope: str
    path: str
    text: str
    digest: str

    @property
    def directory(self) -> str:
        """The display path's directory (``.`` for the project root)."""
        head = self.path.rpartition("/")[0]
        return head or "."


def project_root(cwd: Path, markers: tuple[str, ...]) -> Path:
    """The nearest directory at or above ``cwd`` holding a marker entry, else ``cwd``."""
    for folder in [cwd, *cwd.parents]:
        if any(os.path.lexists(folder / marker) for marker in markers):
            return folder
    return cwd


def relative_root(cwd: Path, root: Path) -> str:
    """The project root relative to the cwd (``""`` when equal), as the baseline identity has it."""
    return "" if root == cwd else os.path.relpath(root, cwd)


def read_file(path: Path, limit: int) -> str | None:
    """The file's text when it is a regular file (a symlink's target) of at most ``limit``
    bytes, valid UTF-8; ``None`` otherwise (absent, too large, unreadable)."""
    try:
        if not path.is_file() or path.stat().st_size > limit:
            return None
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()  # the original's digest, not security


def directory_files(root: Path, folder: Path, config: InstructionsConfig) -> list[InstructionFile]:
    """The instruction files of ``folder`` (inside ``root``) in candidate order; a sibling whose
    trimmed text equals an earlier one's (a ``CLAUDE.md`` linked to ``AGENTS.md``) is dropped."""
    rel = os.path.relpath(folder, root)
    rel = "." if rel == "." else rel.replace(os.sep, "/")
    out: list[InstructionFile] = []
    kept: set[str] = set()
    for name in config.files():
        text = read_file(folder / name, config.max_source_bytes)
        if text is None:
            continue
        trimmed = _sha1(text.strip())
        if trimmed in kept:
            continue
        kept.add(trimmed)
        path = name if rel == "." else f"{rel}/{name}"
        out.append(InstructionFile(f"{rel}\0{name}", path, text, _sha1(text)))
    return out


def global_file(home: Path, workspace: WorkspaceConfig, config: InstructionsConfig) -> InstructionFile | None:
    text = read_file(home / "AGENTS.md", config.max_source_bytes)
    if text is None:
        return None
    return InstructionFile(f"{GLOBAL_DIR}\0AGENTS.md", workspace.global_display(), text, _sha1(text))


def baseline_files(
    cwd: Path, workspace: WorkspaceConfig, config: InstructionsConfig
) -> list[InstructionFile]:
    """The baseline, broadest first: the global file, then each directory from the project
    root down to the cwd (duplicate real paths skipped)."""
    root = project_root(cwd, config.project_root_markers)
    found: list[InstructionFile] = []
    home = workspace.homes(cwd)[0]
    first = global_file(home, workspace, config)
    if first is not None:
        found.append(first)
    folders = [root]
    if cwd != root:
        folders += [root / part for part in _prefixes(cwd.relative_to(root))]
    seen: set[str] = set()
    if first is not None:
        seen.add(os.path.realpath(home / "AGENTS.md"))
    for folder in folders:
        for item in directory_files(root, folder, config):
            real = os.path.realpath(root / item.path)
            if real not in seen:
                seen.add(real)
                found.append(item)
    return found


def _prefixes(rel: Path) -> list[Path]:
    parts = rel.parts
    return [Path(*parts[: i + 1]) for i in range(len(parts))]


def touched_dirs(cwd: Path, file_path: str) -> list[Path]:
    """The directories strictly below ``cwd`` down to the touched file's parent (lexically
    resolved; a file outside the cwd or directly in it gives none)."""
    target = Path(os.path.normpath(cwd / file_path))
    try:
        rel = target.parent.relative_to(cwd)
    except ValueError:
        return []
    if rel == Path("."):
        return []
    return [cwd / p for p in _prefixes(rel)]
