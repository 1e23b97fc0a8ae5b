"""The user's slash commands between turns (today ``/compact``): parsed, logged, answered.

A command consumes no model turn: ``command/run`` is logged when it is asked for, then what
it does (a compaction's four events, their ``sourceCommandId`` the command's id), then
``command/done`` with its one-line outcome (reference §1.5.3). ``dsh chat`` and the ACP
server both go through :func:`run_command`; the outcome texts live here.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Final

from dsh.events.commands import CommandKind, command_done, command_run
from dsh.events.compaction import summary_of
from dsh.events.vocabulary import COMMAND_DONE, COMMAND_RUN
from dsh.loop.agent import Agent
from dsh.loop.compaction import Compacted

COMMANDS: Final = {
    "compact": "Compact the conversation now: everything but the newest exchange becomes a summary",
}
"""Each command's name and what it does (ACP advertises them)."""


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """How a command settled: ``ok`` unless it was refused or failed; ``text`` one line."""

    ok: bool
    text: str


def parse_command(text: str) -> tuple[str, str] | None:
    """``(name, args)`` when ``text`` is ``/<name> [args]`` for a known command, else ``None``
    (the text is then a prompt)."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    name, _, args = stripped[1:].partition(" ")
    return (name, args.strip()) if name in COMMANDS else None


def compacted_text(done: Compacted) -> str:
    """What a compaction did, in one line: what it replaced, or why nothing was."""
    if done.ok:
        return f"compacted {done.replaced} messages, {done.tokens_before} → {done.tokens_after} tokens"
    if done.compaction_id is None:  # no call was made: nothing could shrink
        return done.error or "nothing to compact yet"
    return f"compaction failed: {done.error}; the history is unchanged"


def _summary_seq(agent: Agent, compaction_id: str | None) -> int | None:
    for event in reversed(agent.session.events):
        data = summary_of(event)
        if data is not None and data.get("compactionId") == compaction_id:
            return event.seq
    return None


async def run_command(agent: Agent, name: str, args: str = "", *, source: str = "user") -> CommandOutcome:
    """Run command ``name`` between turns (after any woken turn): ``command/run``, its work,
    ``command/done``, checkpointed. A cancelled command is logged ``error: cancelled``."""
    await agent.until_idle()
    command_id = str(uuid.uuid4())
    agent.append(COMMAND_RUN, command_run(command_id, name, args, source))
    kind: CommandKind = "error"
    text, seq = "cancelled", None
    try:
        if name not in COMMANDS:
            text = f"unknown command /{name}"
        elif args:
            text = f"/{name} takes no arguments"
        else:
            done = await agent.compact(command_id=command_id)
            text = compacted_text(done)
            kind = "success" if done.ok or done.compaction_id is None else "error"
            seq = _summary_seq(agent, done.compaction_id) if done.ok else None
    finally:
        agent.append(COMMAND_DONE, command_done(command_id, kind, text, seq))
        await agent.checkpoint()
    return CommandOutcome(kind == "success", text)
