"""The fork rule: a child's header, its inherited cut and its seed, computed in one place.

A fork child holds its parent's completed-turn prefix (every event up to and including the
last ``turn/end``) plus the tagged ``session/end-seed {"inherited": true}`` marker at the
cut; an empty prefix gives an empty, unseeded child. Every store's ``fork``, the
``subagent`` / ``subagent_fork`` tools and ``Agent.fork`` / ``Agent.spawn`` build their
children here, so the rule cannot drift between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from dsh.events.envelope import Event
from dsh.events.header import SessionHeader
from dsh.events.vocabulary import SESSION_END_SEED, TURN_END
from dsh.ids import new_session_id, now_ms

CUT_MARKER_DATA: Final = {"inherited": True}
"""``data`` of the tagged ``session/end-seed`` marker at the inherited cut."""


def fork_cut(events: Sequence[Event]) -> int:
    """Length of the completed-turn prefix: up to and including the last ``turn/end`` (0 if none)."""
    for i in range(len(events) - 1, -1, -1):
        if events[i].type == TURN_END:
            return i + 1
    return 0


def cut_after(last_turn_end_seq: int | None) -> int:
    """:func:`fork_cut` for a store that knows only the seq of the last ``turn/end`` (``None``: none)."""
    return 0 if last_turn_end_seq is None else last_turn_end_seq + 1


def cut_marker(seq: int, time: int) -> Event:
    """The tagged ``session/end-seed {"inherited": true}`` marker at ``seq``."""
    return Event(SESSION_END_SEED, seq, time, dict(CUT_MARKER_DATA))


@dataclass(frozen=True, slots=True)
class ForkPlan:
    """A fork child before it is stored: its header, its cut and the marker (``None``: unseeded).

    For stores that copy the parent's prefix themselves (an ``INSERT ... SELECT``, a byte
    range): the child's log is the parent's first ``cut`` events, then ``marker``.
    """

    header: SessionHeader
    cut: int
    marker: Event | None


@dataclass(frozen=True, slots=True)
class ForkSeed:
    """A fork child as ``EventStore.create`` takes it: ``create(header, seed, inherited_event_count=cut)``."""

    header: SessionHeader
    seed: list[Event]
    cut: int


@dataclass(frozen=True, slots=True)
class ForkOptions:
    """The caller's choices for a fork child (``None``: the default of :func:`fork_plan`)."""

    child_id: str | None = None
    origin: str | None = None
    delegation_depth: int | None = None
    created_at: int | None = None
    agent_preset: str | None = None


DEFAULT_OPTIONS: Final = ForkOptions()


def fork_plan(parent: SessionHeader, cut: int, options: ForkOptions = DEFAULT_OPTIONS) -> ForkPlan:
    """The child of ``parent`` whose inherited prefix is ``cut`` events long (see :func:`fork_cut`).

    The child gets a new id, the parent's cwd, ``parentSession`` = the parent, the parent's
    delegation depth, no ``agentPreset`` and ``isSeeded`` exactly when ``cut > 0``, except
    where ``options`` says otherwise; the marker's time is the child's ``createdAt``.
    """
    o = options
    header = SessionHeader(
        id=o.child_id if o.child_id is not None else new_session_id(),
        created_at=o.created_at if o.created_at is not None else now_ms(),
        cwd=parent.cwd,
        parent_session=parent.id,
        origin=o.origin,
        delegation_depth=parent.delegation_depth if o.delegation_depth is None else o.delegation_depth,
        agent_preset=o.agent_preset,
        is_seeded=cut > 0,
    )
    return ForkPlan(header, cut, cut_marker(cut, header.created_at) if cut else None)


def fork_seed(
    parent: SessionHeader, events: Sequence[Event], options: ForkOptions = DEFAULT_OPTIONS
) -> ForkSeed:
    """The fork child of ``parent`` whose log so far is ``events``: header, seed and cut."""
    plan = fork_plan(parent, fork_cut(events), options)
    seed = [*events[: plan.cut], plan.marker] if plan.marker is not None else []
    return ForkSeed(plan.header, seed, plan.cut)
