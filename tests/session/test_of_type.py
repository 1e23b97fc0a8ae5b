"""``Session.of_type``: the events of some types in log order, the inherited prefix left out
with ``own=True``, and every append seen, whether made before or after the first question."""

from __future__ import annotations

import pytest

from dsh.errors import InvalidEventError
from dsh.events import SessionHeader
from dsh.events.fork import ForkOptions, fork_seed
from dsh.events.vocabulary import SESSION_TITLE, STEP_END, STEP_START, TURN_END, TURN_START
from dsh.session import Session


def _session(turns: int) -> Session:
    session = Session(SessionHeader(id="s", created_at=1))
    for turn in range(1, turns + 1):
        session.append(TURN_START, {"turn": turn})
        session.append(STEP_START, {"turn": turn, "step": 1})
        session.append(STEP_END, {"turn": turn, "step": 1})
        session.append(TURN_END, {"turn": turn, "reason": {"kind": "completed"}})
    return session


def test_the_events_of_some_types_in_log_order() -> None:
    session = _session(3)
    assert [e.seq for e in session.of_type(TURN_END)] == [3, 7, 11]
    assert [e.seq for e in session.of_type(TURN_END, STEP_START)] == [1, 3, 5, 7, 9, 11]
    assert [e.seq for e in session.of_type(STEP_START, TURN_END, STEP_START)] == [1, 3, 5, 7, 9, 11]
    assert session.of_type(SESSION_TITLE) == []


def test_appends_after_the_first_question_are_seen() -> None:
    session = _session(1)
    assert session.of_type(SESSION_TITLE) == []
    title = session.append(SESSION_TITLE, {"title": "t", "messageSeqs": [], "source": {"kind": "fallback"}})
    session.append(TURN_START, {"turn": 2})
    assert session.of_type(SESSION_TITLE) == [title]
    assert [e.seq for e in session.of_type(TURN_START)] == [0, 5]


def test_own_leaves_the_inherited_prefix_out() -> None:
    parent = _session(2)
    assert [e.seq for e in parent.of_type(TURN_END, own=True)] == [3, 7]
    forked = fork_seed(parent.header, parent.events, ForkOptions(child_id="c"))
    child = Session(forked.header, forked.seed, inherited_event_count=forked.cut)
    child.append(TURN_START, {"turn": 3})
    child.append(TURN_END, {"turn": 3, "reason": {"kind": "completed"}})
    assert [e.seq for e in child.of_type(TURN_END, own=True)] == [10]
    assert [e.seq for e in child.of_type(TURN_END)] == [3, 7, 10]


def test_what_it_returns_is_the_callers() -> None:
    session = _session(2)
    session.of_type(TURN_END).clear()
    assert len(session.of_type(TURN_END)) == 2


def test_a_seed_is_checked_in_the_walk_that_indexes_it() -> None:
    """The seed's one walk refuses a gap (naming the seq) and a cut that is not its marker's,
    and what it indexed answers the first question."""
    parent = _session(2)
    events = list(parent.events)
    with pytest.raises(InvalidEventError, match="session s: expected seq 3, found 4"):
        Session(parent.header, events[:3] + events[4:])
    forked = fork_seed(parent.header, parent.events, ForkOptions(child_id="c"))
    with pytest.raises(InvalidEventError, match="explicit cut 3 does not match the marker at 8"):
        Session(forked.header, forked.seed, inherited_event_count=3)
    with pytest.raises(InvalidEventError, match="isSeeded but no session/end-seed marker"):
        Session(forked.header, forked.seed[:8], inherited_event_count=0)
    child = Session(forked.header, forked.seed, inherited_event_count=forked.cut)
    assert [e.seq for e in child.of_type(TURN_END)] == [3, 7]
