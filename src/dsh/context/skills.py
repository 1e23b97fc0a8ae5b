"""Skills: ``SKILL.md`` files found where the original looks (and Claude Code's ``.claude/skills``).

Roots, a lower rank winning a duplicate name: ``<project>/.dsh/skills`` (100),
``<project>/.agents/skills`` (200), ``<project>/.claude/skills`` (210, Claude Code's),
``<dsh home>/skills`` (400, ``.system`` skipped), ``<agents home>/skills`` (500),
``~/.claude/skills`` (550). The project root is the nearest ancestor holding ``.git``, else
the cwd. In a root: ``<dir>/SKILL.md`` (base directory ``<dir>``) or a flat ``<name>.md``.
A file that cannot be read as a skill is skipped with one warning line.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from dsh.context.config import WorkspaceConfig
from dsh.context.files import project_root
from dsh.context.frontmatter import flag, split
from dsh.errors import SkillFileError

log = logging.getLogger("dsh.skills")
_warned: set[tuple[str, str]] = set()
"""(file, reason) already warned about: each bad file is one warning line per process."""

NAME: Final = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
LEGACY_KEYS: Final = ("disableModelInvocation", "modelInvocable", "userInvocable")


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    body: str
    base_dir: Path
    model_invocable: bool = True
    user_invocable: bool = True


def skill_roots(cwd: Path, workspace: WorkspaceConfig) -> list[Path]:
    """The roots in rank order (duplicates by real path dropped)."""
    root = project_root(cwd, (".git",))
    dsh_home, agents_home = workspace.homes(cwd)
    roots = [root / ".dsh" / "skills", root / ".agents" / "skills"]
    if workspace.claude_dirs:
        roots.append(root / ".claude" / "skills")
    roots += [dsh_home / "skills", agents_home / "skills"]
    if workspace.claude_dirs and workspace.claude_home is not None:
        roots.append(workspace.claude_home / "skills")
    return roots


def parse_skill(path: Path, base_dir: Path) -> Skill | None:
    """The skill in ``path``; ``None`` for a legacy file; raises :class:`SkillFileError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillFileError(f"cannot read it ({exc.__class__.__name__})") from exc
    fields, body = split(text)
    if any(key in fields for key in LEGACY_KEYS):
        return None
    name, description = fields.get("name"), fields.get("description")
    if not isinstance(name, str) or not name.strip():
        raise SkillFileError("the front matter needs a non-empty name")
    if not isinstance(description, str) or not description.strip():
        raise SkillFileError("the front matter needs a non-empty description")
    if not NAME.match(name):
        raise SkillFileError(f"name {name!r} is not lower-case words joined by '-'")
    disabled = flag(fields.get("disable-model-invocation"), "disable-model-invocation")
    user = flag(fields.get("user-invocable"), "user-invocable")
    return Skill(name, description, body, base_dir, disabled is not True, user is not False)


def _entries(root: Path) -> list[tuple[Path, Path]]:
    """(file, base directory) of each skill candidate in ``root``, sorted by entry name."""
    try:
        names = sorted(os.listdir(root), key=lambda n: (n.casefold(), n))
    except OSError:
        return []
    out = []
    for name in names:
        entry = root / name
        if entry.is_dir():
            if (entry / "SKILL.md").is_file():
                out.append((entry / "SKILL.md", entry))
        elif name.endswith(".md") and entry.is_file():
            out.append((entry, root))
    return out


def discover(cwd: Path, workspace: WorkspaceConfig) -> dict[str, Skill]:
    """Every skill by name (the lowest-ranked root wins a duplicate)."""
    found: dict[str, Skill] = {}
    seen_roots: set[str] = set()
    dsh_skills = workspace.homes(cwd)[0] / "skills"
    for root in skill_roots(cwd, workspace):
        real = os.path.realpath(root)
        if real in seen_roots or not root.is_dir():
            continue
        seen_roots.add(real)
        for file, base in _entries(root):
            if root == dsh_skills and base.name == ".system":
                continue
            try:
                skill = parse_skill(file, base)
            except SkillFileError as exc:
                _warn(str(file), str(exc))
                continue
            if skill is None:
                continue
            if skill.name in found:
                _warn(str(file), f"{skill.name!r} is already defined in a higher-ranked root")
                continue
            found[skill.name] = skill
    return found


def _warn(file: str, reason: str) -> None:
    if (file, reason) not in _warned:
        _warned.add((file, reason))
        log.warning("skipping skill %s: %s", file, reason)
