"""``AgentConfig.mcp_servers`` in the library: nothing starts before the first turn, one server
process serves every turn of the session and its children, and it stops with the agent."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from dsh import ScriptedModel
from dsh.events.messages import joined_text
from dsh.events.payloads import tool_result_of
from dsh.loop import Agent, AgentConfig
from dsh.mcp import StdioServer
from dsh.model.scripted import Call, text_reply, tool_calls_reply
from dsh.store.memory import MemoryEventStore

from .conftest import CALC


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")


async def test_one_server_serves_the_sessions_turns_and_children_and_stops_with_it(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    spec = StdioServer("calc", sys.executable, (str(CALC),), env={"CALC_CALLS": str(calls)})
    replies = [
        tool_calls_reply([Call("c1", "mcp__calc__pid", {})]),
        text_reply("first"),
        tool_calls_reply([Call("c2", "mcp__calc__pid", {})]),
        text_reply("second"),
    ]
    model = ScriptedModel(replies, model="m")
    agent = await Agent.create(
        MemoryEventStore(), model=model, config=AgentConfig(model="m", mcp_servers=(spec,)), cwd=tmp_path
    )
    try:
        assert "mcp__calc__pid" not in agent.tools, "no server starts before the first turn"
        await agent.run_turn("one")
        await agent.run_turn("two")
        results = [r for e in agent.session.events if (r := tool_result_of(e)) is not None]
        pids = [joined_text(r["content"]) for r in results]
        assert len(pids) == 2 and pids[0] == pids[1], "one process for both turns"
        child = await agent.spawn()
        assert "mcp__calc__pid" in child.tools, "a child inherits its parent's servers"
        await child.aclose()
        assert _alive(int(pids[0])), "a child's close does not stop the parent's server"
    finally:
        await agent.aclose()
    assert not _alive(int(pids[0])), "the server stops with the session"
