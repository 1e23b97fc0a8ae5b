"""The delegation tools run a waited-for child through ``dsh.tools.AgentHandle`` alone: a
handle that is not a ``dsh.loop.Agent`` (here a forwarding wrapper) delegates the same way."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsh.events import Event, SessionHeader
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply
from dsh.store.memory import MemoryEventStore
from dsh.subagents import ForkArgs, ForkTool, SpawnArgs, SpawnTool
from dsh.tools import ToolContext
from dsh.tools.approval import Approvals
from dsh.tools.base import AgentHandle, TurnOutcome
from dsh.tools.sandbox import SandboxPolicy


class Wrapped:
    """An ``AgentHandle`` that only forwards to an agent (not an ``Agent`` itself)."""

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    @property
    def id(self) -> str:
        return self._agent.id

    @property
    def header(self) -> SessionHeader:
        return self._agent.header

    @property
    def own_events(self) -> Sequence[Event]:
        return self._agent.own_events

    @property
    def events(self) -> Sequence[Event]:
        return self._agent.events

    @property
    def sandbox(self) -> SandboxPolicy | None:
        return self._agent.sandbox

    @property
    def approvals(self) -> Approvals:
        return self._agent.approvals

    def append(
        self, type: str, data: Any, *, source_event_seqs: Sequence[int] | None = None, time: int | None = None
    ) -> Event:
        return self._agent.append(type, data, source_event_seqs=source_event_seqs, time=time)

    async def spawn(self, *, call_id: str | None = None) -> AgentHandle:
        return Wrapped(await self._agent.spawn(call_id=call_id))

    async def fork(self, *, call_id: str | None = None) -> AgentHandle:
        return Wrapped(await self._agent.fork(call_id=call_id))

    async def run_turn(
        self, prompt: str, *, preamble: Sequence[tuple[str, dict[str, Any]]] = ()
    ) -> TurnOutcome:
        return await self._agent.run_turn(prompt, preamble=preamble)


async def _parent(tmp_path: Path, *replies: str) -> Agent:
    return await Agent.create(
        MemoryEventStore(),
        model=ScriptedModel([text_reply(r) for r in replies]),
        standard_tools=False,
        config=AgentConfig(model="m", retry=NO_DELAY),
        cwd=tmp_path,
    )


async def test_a_handle_that_is_not_an_agent_spawns_and_forks_a_waited_for_child(tmp_path: Path) -> None:
    parent = await _parent(tmp_path, "SPAWNED", "FORKED")
    ctx = ToolContext(session_id=parent.id, call_id="call_1", cwd=tmp_path, agent=Wrapped(parent))
    spawned = await SpawnTool().run(SpawnArgs(description="d", prompt="p"), ctx)
    forked = await ForkTool().run(ForkArgs(description="d", prompt="p"), ctx)
    assert (spawned.is_error, spawned.content[0].get("text")) == (False, "SPAWNED")
    assert (forked.is_error, forked.content[0].get("text")) == (False, "FORKED")
    children = [s for s in await parent.store.list_sessions() if s.header.parent_session == parent.id]
    assert len(children) == 2


async def test_a_background_child_needs_the_agent_itself(tmp_path: Path) -> None:
    parent = await _parent(tmp_path)
    ctx = ToolContext(session_id=parent.id, call_id="call_1", cwd=tmp_path, agent=Wrapped(parent))
    out = await SpawnTool().run(SpawnArgs(description="d", prompt="p", run_in_background=True), ctx)
    assert out.is_error and "background" in str(out.content[0].get("text"))
