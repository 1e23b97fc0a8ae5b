"""Child sessions an agent starts from code (``Agent.fork`` / ``Agent.spawn``), stored first.

The seed is the one rule of :mod:`dsh.events.fork` (a fork holds the completed-turn prefix and
the tagged marker, its cut persisted; a spawn starts empty); the child shares its parent's
store, model, config and feed, with ``origin: "subagent"`` and one more delegation level.
"""

from __future__ import annotations

from typing import TypeVar

from dsh.events.fork import ForkOptions, fork_seed
from dsh.events.header import child_depth
from dsh.loop.session_ids import recorded_session_id
from dsh.loop.state import ParentState
from dsh.model import Delegation
from dsh.store import LoadedSession
from dsh.store.whole import whole_prefix
from dsh.tools.registry import ToolRegistry

A = TypeVar("A", bound="ParentState")


async def start_child(
    parent: A, *, inherit: bool, session_id: str | None, call_id: str | None, tools: ToolRegistry | None
) -> A:
    """Store a child of ``parent`` (``inherit``: a fork) and attach an agent of the parent's class
    to it; ``call_id`` names the delegating tool call, ``tools`` replaces the parent's."""
    header = parent.session.header
    if session_id is None:
        session_id = await recorded_session_id(parent.model, parent.store, parent.id, call_id)
    options = ForkOptions(
        child_id=session_id,
        origin="subagent",
        delegation_depth=child_depth(header.delegation_depth),
        agent_preset=header.agent_preset,
    )
    prefix = await whole_prefix(parent.store, parent.id, parent.session.events) if inherit else ()
    child = fork_seed(header, prefix, options)
    await parent.store.create(child.header, child.seed, inherited_event_count=child.cut)
    return type(parent).attach(
        LoadedSession(child.header, child.cut, child.seed),
        store=parent.store,
        model=parent.model,
        tools=tools or parent.tools,
        config=parent.config,
        feed=parent.feed,
        delegation=None if call_id is None else Delegation(parent.id, call_id),
        extras=parent.extras,
    )
