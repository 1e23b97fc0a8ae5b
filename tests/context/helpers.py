"""An agent over real files with the workspace context on (homes inside the workspace)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsh.context import InstructionsConfig, WorkspaceConfig
from dsh.context.tools import with_context_tools
from dsh.events import Event
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel
from dsh.replay.upstream import composed_tools
from dsh.store.memory import MemoryEventStore
from dsh.tools import ToolLike
from dsh.tools.registry import builtin_registry


async def context_agent(
    cwd: Path,
    replies: list[Any],
    *,
    instructions: InstructionsConfig | None = None,
    extra_tools: Sequence[ToolLike] = (),
    **config: Any,
) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(replies)
    workspace = WorkspaceConfig.inside(instructions)
    agent = await Agent.create(
        MemoryEventStore(),
        model=model,
        tools=composed_tools(with_context_tools(builtin_registry()), extra_tools),
        config=AgentConfig(model="m", retry=NO_DELAY, workspace=workspace, titles=True, **config),
        cwd=cwd,
    )
    return agent, model


def injected(events: list[Event] | Any, kind: str) -> list[dict[str, Any]]:
    """The logged user messages whose source kind is ``kind``."""
    return [
        e.data
        for e in events
        if e.type == "user/message"
        and isinstance(e.data.get("source"), dict)
        and e.data["source"]["kind"] == kind
    ]


def text(message: dict[str, Any]) -> list[str]:
    return [b["text"] for b in message["content"]]
