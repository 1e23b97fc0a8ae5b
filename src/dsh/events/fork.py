"""The fork rule: a child's header, its inherited cut and its seed, computed in one place.

A fork child holds its parent's completed-turn prefix (every event up to and including the
last ``turn/end``, or, when the caller names a point (:class:`ForkAt`), up to and including
the ``turn/end`` of the turn asked for) plus the tagged ``session/end-seed {"inherited": true}``
marker at the cut; an empty prefix gives an empty, unseeded child. Where a cut at turn N or
at seq N falls, and the typed errors when it cannot (``ForkOpenTurnError``,
``ForkBoundaryError``), is :func:`resolve_cut` over the parent's :class:`TurnMarks`.
Every store's ``fork``, the ``subagent`` / ``subagent_fork`` tools and ``Agent.fork`` /
``Agent.spawn`` build their children here, so the rule cannot drift between them.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dsh.errors import ForkBoundaryError, ForkOpenTurnError, UsageError
from dsh.events.envelope import Event
from dsh.events.header import SessionHeader
from dsh.events.vocabulary import SESSION_END_SEED, TURN_END, TURN_START
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


@dataclass(frozen=True, slots=True)
class ForkAt:
    """Where a caller asked to cut: after turn ``turn``'s ``turn/end``, or at the first
    ``turn/end`` at or after seq ``seq`` (never an earlier one: the original's rule).
    Exactly one is set (:meth:`of`); no :class:`ForkAt` at all means the last completed turn."""

    turn: int | None = None
    seq: int | None = None

    @classmethod
    def of(cls, turn: int | None, seq: int | None) -> ForkAt | None:
        """The point a caller's ``at=`` / ``at_seq=`` name (``None``: neither, the tail)."""
        if turn is not None and seq is not None:
            raise UsageError("fork: give a turn (--at) or a seq (--at-seq), not both")
        return None if turn is None and seq is None else cls(turn, seq)

    def describe(self) -> str:
        """``turn N`` or ``seq N``, as messages name the point."""
        return f"turn {self.turn}" if self.turn is not None else f"seq {self.seq}"


@dataclass(frozen=True, slots=True)
class TurnMarks:
    """What the cut rule reads of a parent's log, however the store finds it.

    ``ends``: every ``turn/end`` as (seq, turn number or ``None``), in log order;
    ``open_turn``: the number and seq of the last ``turn/start`` when no ``turn/end``
    follows it (``None``: no turn is open); ``length``: the number of events.
    """

    ends: Sequence[tuple[int, int | None]]
    open_turn: tuple[int | None, int] | None
    length: int


def turn_number(data: Any) -> int | None:
    """The ``turn`` of a ``turn/start`` / ``turn/end`` payload (``None``: not an int)."""
    value = data.get("turn") if isinstance(data, dict) else None
    return value if type(value) is int else None


def turn_marks(events: Sequence[Event]) -> TurnMarks:
    """:class:`TurnMarks` of a log held in memory."""
    ends: list[tuple[int, int | None]] = []
    open_turn: tuple[int | None, int] | None = None
    for e in events:
        if e.type == TURN_END:
            ends.append((e.seq, turn_number(e.data)))
            open_turn = None
        elif e.type == TURN_START:
            open_turn = (turn_number(e.data), e.seq)
    return TurnMarks(ends, open_turn, len(events))


def resolve_cut(session_id: str, marks: TurnMarks, at: ForkAt | None) -> int:
    """The inherited cut of a fork of ``session_id`` at ``at`` (``None``: the last completed turn).

    At a turn: just after that turn's ``turn/end``. At a seq: just after the first
    ``turn/end`` at or after it. Refused with ``ForkOpenTurnError`` when that turn has not
    ended, and with ``ForkBoundaryError`` for a point past the end or with no completed turn.
    """
    if at is None:
        return cut_after(marks.ends[-1][0] if marks.ends else None)
    if not marks.ends:
        where = f"session {session_id} has no completed turn yet"
        if marks.open_turn is not None:
            raise ForkOpenTurnError(f"cannot fork at {at.describe()}: {where} (its first turn is still open)")
        raise ForkBoundaryError(f"cannot fork at {at.describe()}: {where}")
    if at.turn is not None:
        return _cut_at_turn(session_id, marks, at.turn)
    assert at.seq is not None
    return _cut_at_seq(session_id, marks, at.seq)


EndProbe = Generator[int, "tuple[int, int | None] | None", "int | None"]
""":func:`probe_cut`: yields seqs S, is sent the first ``turn/end`` at or after S as
(seq, turn) (``None``: none), returns the cut."""


def probe_cut(at: ForkAt, length: int) -> EndProbe:
    """The cut :func:`resolve_cut` gives when it succeeds, found by asking a store's index for
    "the first ``turn/end`` at or after seq S" (one probe for a seq, a binary search for a turn:
    ``turn/end`` numbers rise along a log); ``None``: ask :func:`resolve_cut` (with every
    mark), which refuses or answers for a log whose turn numbers do not rise."""
    if at.seq is not None:
        if not 0 <= at.seq < length:
            return None
        hit = yield at.seq
        return None if hit is None else hit[0] + 1
    turn = at.turn
    if turn is None or turn < 1:
        return None
    lo, hi = 0, length
    while lo < hi:
        mid = (lo + hi) // 2
        hit = yield mid
        if hit is None or hit[1] is None or hit[1] > turn:
            if hit is not None and hit[1] is None:
                return None
            hi = mid
        elif hit[1] < turn:
            lo = hit[0] + 1
        else:
            return hit[0] + 1
    return None


def _cut_at_turn(session_id: str, marks: TurnMarks, turn: int) -> int:
    for seq, number in marks.ends:
        if number == turn:
            return seq + 1
    head = f"cannot fork session {session_id} at turn {turn}"
    if marks.open_turn is not None and marks.open_turn[0] == turn:
        raise ForkOpenTurnError(f"{head}: the turn has not ended (it is still open); fork at an earlier turn")
    known = [n for _, n in marks.ends if n is not None]
    last = max(known) if known else None
    if last is not None and turn > last:
        raise ForkBoundaryError(f"{head}: past the end (its last completed turn is {last})")
    raise ForkBoundaryError(f"{head}: no completed turn {turn} in its log (turns are numbered from 1)")


def _cut_at_seq(session_id: str, marks: TurnMarks, seq: int) -> int:
    head = f"cannot fork session {session_id} at seq {seq}"
    if seq < 0 or seq >= marks.length:
        raise ForkBoundaryError(f"{head}: past the end (its events are seqs 0..{marks.length - 1})")
    for end, _ in marks.ends:
        if end >= seq:
            return end + 1
    if marks.open_turn is not None:
        raise ForkOpenTurnError(f"{head}: the turn holding it has not ended (it is still open)")
    raise ForkBoundaryError(f"{head}: no turn ends at or after it (never an earlier one)")


def ended_turn(event: Event) -> int | None:
    """The number of the turn ``event`` ends (``None``: not a ``turn/end``, or it does not say)."""
    return turn_number(event.data) if event.type == TURN_END else None


def branch_turn(events: Sequence[Event], cut: int) -> int | None:
    """The turn a child cut at ``cut`` branched after: the number of the ``turn/end`` at
    ``cut - 1`` (``None``: no cut, or the log does not say)."""
    return ended_turn(events[cut - 1]) if 0 < cut <= len(events) else None


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
    at: ForkAt | None = None
    """Where to cut (``None``: after the last completed turn)."""
    cwd: str | None = None
    """The child's workspace (``None``: the parent's)."""


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
        cwd=parent.cwd if o.cwd is None else o.cwd,
        parent_session=parent.id,
        origin=o.origin,
        delegation_depth=parent.delegation_depth if o.delegation_depth is None else o.delegation_depth,
        agent_preset=o.agent_preset,
        is_seeded=cut > 0,
    )
    return ForkPlan(header, cut, cut_marker(cut, header.created_at) if cut else None)


def fork_seed(
    parent: SessionHeader,
    events: Sequence[Event],
    options: ForkOptions = DEFAULT_OPTIONS,
) -> ForkSeed:
    """The fork child of ``parent`` whose log so far is ``events``, cut at ``options.at``
    (:func:`resolve_cut`; ``None``: the last completed turn): header, seed and cut."""
    at = options.at
    cut = fork_cut(events) if at is None else resolve_cut(parent.id, turn_marks(events), at)
    plan = fork_plan(parent, cut, options)
    seed = [*events[: plan.cut], plan.marker] if plan.marker is not None else []
    return ForkSeed(plan.header, seed, plan.cut)
