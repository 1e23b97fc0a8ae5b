"""The workspace-context tools a composition registers: ``skill`` and ``session_event_read``."""

from __future__ import annotations

from dsh.context.event_read import SessionEventReadTool
from dsh.context.skill_tool import SkillTool
from dsh.tools.base import ToolLike


def context_tools() -> list[ToolLike]:
    """Fresh instances of the context tools (the original's names, schemas and texts)."""
    return [SkillTool(), SessionEventReadTool()]
