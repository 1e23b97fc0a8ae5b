"""What every activity builds its agent from: one store, model, tool set and config, as ``Agent.create``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final

from dsh.errors import SessionTruncatedError
from dsh.loop import AgentConfig
from dsh.loop.setup import ToolsArg, agent_config, agent_tools
from dsh.model import Delegation, Model
from dsh.store import EventStore
from dsh.subagents import Agent
from dsh.temporal.approvals import SignalApprover
from dsh.tools.approval import Approver
from dsh.tools.registry import ToolRegistry

LEASE_WAIT: Final = 15.0
"""Seconds an activity waits for the session's store lease: the previous activity's runner
(on another worker, or just killed) lets go of it within this."""


@dataclass(frozen=True, slots=True)
class AgentRecipe:
    """A worker's agent ingredients; :meth:`agent` attaches a fresh agent to a stored session."""

    store: EventStore
    model: Model
    tools: ToolRegistry
    config: AgentConfig
    continuable_tools: ToolRegistry | None = None
    """What a background (continuable) child is given: the tools plus ``report``
    (``dsh.temporal.steering``); ``None``: the tools."""

    @classmethod
    def of(
        cls,
        store: EventStore,
        *,
        model: Model,
        tools: ToolsArg = (),
        standard_tools: bool | None = None,
        config: AgentConfig | None = None,
    ) -> AgentRecipe:
        """The rules of ``Agent.create`` for ``tools``, ``standard_tools`` and ``config``
        (``dsh.Agent``'s standard tools: the built-ins and the delegation tools)."""
        registry = agent_tools(tools, standard_tools, Agent.standard_registry)
        return cls(store, model, registry, agent_config(config, model))

    @asynccontextmanager
    async def agent(
        self,
        session_id: str,
        *,
        delegation: Delegation | None = None,
        approver: Callable[[str], Approver] | None = None,
        continuable: bool = False,
    ) -> AsyncIterator[Agent]:
        """An agent over the stored session, under its store lease (waited for up to
        :data:`LEASE_WAIT`), closed and released afterwards; ``approver(session_id)`` answers
        its approval requests; ``continuable``: a background child, given
        :attr:`continuable_tools`."""
        lease = await self.store.lease(session_id, wait=LEASE_WAIT)
        try:
            loaded = await self.store.load(session_id)
            if loaded.loss is not None:
                raise SessionTruncatedError(f"refusing to run session {session_id}: {loaded.loss}")
            config = self.config
            if approver is not None and delegation is None:
                config = config.evolve(approver=approver(session_id))
            agent = Agent.attach(
                loaded,
                store=self.store,
                model=self.model,
                tools=(self.continuable_tools or self.tools) if continuable else self.tools,
                config=config,
                delegation=delegation,
            )
            if isinstance(agent.config.approver, SignalApprover):
                agent.config.approver.checkpoint = agent.checkpoint
            try:
                yield agent
            finally:
                await agent.aclose()
        finally:
            await lease.release()
