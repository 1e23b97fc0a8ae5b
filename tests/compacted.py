"""Compacted sessions made by the real loop (a ScriptedModel, a SQLite store, real tools).

``compacted(path)``: three turns — the first calls ``bash`` then answers, the second answers,
a manual ``Agent.compact()`` replaces both (five messages), the third answers from the
checkpoint. ``failed(path)``: a context overflow whose summary comes back empty — a
``compaction/end`` with ``error``, the history unchanged, the turn ended ``error``.
"""

from __future__ import annotations

from pathlib import Path

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, error_reply, text_reply, tool_call_reply
from dsh.store.sqlite import SqliteEventStore
from dsh.tools.registry import builtin_registry

PROMPT = "Note these facts for later: " + "the sky is blue, water is wet. " * 30
SECOND = "and again " * 40
SUMMARY = "## Current Work\n- the two answers <b>bold</b> \x1b[31mred"
"""The summary the model writes: untrusted (markup and a terminal escape) on purpose."""
FAILURE = "the summary was empty"


async def _agent(db: Path, model: ScriptedModel) -> Agent:
    work = db.parent / "w"
    work.mkdir(parents=True, exist_ok=True)
    config = AgentConfig(model="test-model", retry=NO_DELAY)
    return await Agent.create(
        SqliteEventStore(db), model=model, tools=builtin_registry(), config=config, cwd=work
    )


async def compacted(db: Path) -> str:
    """A session with one manual compaction of turns 1–2 (five messages); its id."""
    model = ScriptedModel(
        [
            tool_call_reply("call_1", "bash", '{"command": "echo alpha"}'),
            text_reply("first answer"),
            text_reply("second answer"),
            text_reply(SUMMARY),
            text_reply("third answer"),
        ]
    )
    agent = await _agent(db, model)
    try:
        await agent.run_turn(PROMPT)
        await agent.run_turn(SECOND)
        done = await agent.compact()
        assert done.ok and done.replaced == 5, done
        await agent.run_turn("third")
        return agent.id
    finally:
        await agent.aclose()


async def failed(db: Path) -> str:
    """A session whose only compaction failed (an empty summary); its id."""
    model = ScriptedModel(
        [
            tool_call_reply("call_1", "bash", '{"command": "echo alpha"}'),
            error_reply("CONTEXT_OVERFLOW", "too long"),
            text_reply("   "),
        ]
    )
    agent = await _agent(db, model)
    try:
        result = await agent.run_turn(PROMPT)
        assert not result.ok
        return agent.id
    finally:
        await agent.aclose()
