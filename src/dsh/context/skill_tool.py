"""The ``skill`` tool: load one available skill's full instructions (the original's schema and text)."""

from __future__ import annotations

import asyncio
from typing import Final

from pydantic import Field

from dsh.context.catalog import skill_content
from dsh.context.config import WorkspaceConfig
from dsh.context.skills import NAME, discover
from dsh.tools.base import Tool, ToolContext, ToolOutput
from dsh.tools.codes import tool_error
from dsh.tools.schema import ToolArgs

WORKSPACE_EXTRA: Final = "dsh.context.workspace"
"""``ToolContext.extras`` key of the session's :class:`WorkspaceConfig` (set by the agent)."""


def workspace_of(ctx: ToolContext) -> WorkspaceConfig:
    """The calling session's workspace config (none composed: the environment's homes)."""
    found = ctx.extras.get(WORKSPACE_EXTRA)
    return found if isinstance(found, WorkspaceConfig) else WorkspaceConfig.from_env()


class SkillArgs(ToolArgs):
    name: str = Field(description="The exact skill name from the available skills list.")


class SkillTool(Tool[SkillArgs]):
    """Load the full instructions for an available skill."""

    name = "skill"
    description = (
        "Load the full instructions for an available skill. Call this with the exact skill name from the "
        "session skill catalog before acting on a task that names or clearly matches that skill."
    )
    args_model = SkillArgs
    concurrency_safe = True

    async def call(self, args: SkillArgs, ctx: ToolContext) -> ToolOutput:
        name = args.name
        if not NAME.match(name):
            raise tool_error(f'invalid skill name "{name}"')
        skills = await asyncio.to_thread(discover, ctx.cwd, workspace_of(ctx))
        skill = skills.get(name)
        if skill is None:
            raise tool_error(f'skill "{name}" is unknown or no longer available')
        if not skill.model_invocable:
            raise tool_error(f'skill "{name}" is not available for model invocation')
        return ToolOutput.text(skill_content(skill))
