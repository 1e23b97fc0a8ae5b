"""Closing agents that have background children: wait for them up to a bound, then stop them.

What every composition root does before it closes the store (``dsh run``, ``dsh chat``,
``dsh acp``, the scenario runner): :func:`settle_background` lets the live children — and
the parent turns their notices wake — finish for up to ``within`` seconds;
:func:`stop_background` then stops whatever still runs (children before parents; a turn
stopped so ends ``aborted {reason: disposed}`` in its own log) and closes the agents. No
child is left with an open turn or a held lease, so none shows as ``running`` afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from dsh.loop import Agent
from dsh.subagents.children import Children
from dsh.subagents.tools import SubagentTool


def children_of(agents: Iterable[Agent]) -> list[Children]:
    """The background-children sets of the agents' delegation tools, each once."""
    found: dict[int, Children] = {}
    for agent in agents:
        for name in agent.tools.names():
            tool = agent.tools.get(name)
            if isinstance(tool, SubagentTool):
                found.setdefault(id(tool.children), tool.children)
    return list(found.values())


def running_children(agents: Iterable[Agent]) -> int:
    """How many live background children of ``agents`` have work now."""
    return sum(len(c.running()) for c in children_of(agents))


async def settle_background(agents: Iterable[Agent], within: float) -> bool:
    """Wait up to ``within`` s until no background child of ``agents`` and no turn a child's
    notice woke is running; ``False`` if some still are."""
    sets = children_of(agents)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(within, 0.0)
    for children in sets:
        if not await children.settle(max(deadline - loop.time(), 0.0)):
            return False
    return True


async def stop_background(agents: Iterable[Agent]) -> None:
    """Stop every live background child (their running turns end ``aborted {disposed}``),
    then close ``agents`` themselves; the store stays open."""
    agents = list(agents)
    for children in children_of(agents):
        await children.aclose()
    for agent in agents:
        await agent.aclose()
