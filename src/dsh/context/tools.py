"""The workspace-context tools a composition registers: ``skill`` and ``session_event_read``."""

from __future__ import annotations

from dsh.context.event_read import SessionEventReadTool
from dsh.context.questions import AskUserQuestionTool
from dsh.context.skill_tool import SkillTool
from dsh.tools.base import ToolLike
from dsh.tools.builtin.terminal_tools import terminal_tools
from dsh.tools.registry import ToolRegistry


def context_tools() -> list[ToolLike]:
    """Fresh instances of the context tools (the original's names, schemas and texts)."""
    return [SkillTool(), SessionEventReadTool(), AskUserQuestionTool(), *terminal_tools()]


def with_context_tools(registry: ToolRegistry) -> ToolRegistry:
    """``registry`` with the context tools it lacks registered (a live composition's set)."""
    for tool in context_tools():
        if tool.name not in registry:
            registry.register(tool)
    return registry
