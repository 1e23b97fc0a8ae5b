"""ACP slash commands: ``available_commands_update`` advertising ``dsh.loop.commands.COMMANDS``,
and a ``session/prompt`` that is one of them (``/compact``), run instead of a turn and
answered with one agent message chunk of its outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from acp.exceptions import RequestError
from acp.schema import (
    AgentMessageChunk,
    AvailableCommand,
    AvailableCommandsUpdate,
    PromptResponse,
    TextContentBlock,
)

from dsh.acp.updates import Update
from dsh.loop.commands import COMMANDS, CommandOutcome, parse_command


def commands_update() -> AvailableCommandsUpdate:
    """The session's slash commands, as a client lists them after ``/``."""
    return AvailableCommandsUpdate(
        session_update="available_commands_update",
        available_commands=[AvailableCommand(name=name, description=what) for name, what in COMMANDS.items()],
    )


def prompt_command(blocks: Sequence[Any]) -> tuple[str, str] | None:
    """``(name, args)`` when the prompt is text alone and names a known command."""
    if not blocks or not all(isinstance(b, TextContentBlock) for b in blocks):
        return None
    return parse_command("".join(b.text for b in blocks))


async def settle_command(
    task: asyncio.Task[CommandOutcome],
    put: Callable[[Sequence[Update]], None],
    flush: Callable[[], Awaitable[None]],
) -> PromptResponse:
    """The finished command's answer: its outcome as one message chunk, ``end_turn``
    (``cancelled`` when it was cancelled; an unexpected failure is ``-32603``)."""
    if task.cancelled():
        return PromptResponse(stop_reason="cancelled")
    exc = task.exception()
    if exc is not None:
        lines = str(exc).strip().splitlines() or [type(exc).__name__]
        raise RequestError(-32603, f"Internal error: command failed: {lines[0]}")
    text = TextContentBlock(type="text", text=task.result().text)
    put([AgentMessageChunk(session_update="agent_message_chunk", content=text)])
    await flush()
    return PromptResponse(stop_reason="end_turn")
