"""Events, the cut rules and the in-memory session."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from dsh.errors import InvalidEventError
from dsh.events import Event, SessionHeader, check_cut, encode_event, fork_cut, fork_seed
from dsh.session import Session


def _header(**kw: object) -> SessionHeader:
    return SessionHeader(id="s1", created_at=1, **kw)  # type: ignore[arg-type]


def test_encode_is_compact_with_type_first() -> None:
    e = Event("tool/result", 3, 7, {"x": "é"}, "append", (1, 2))
    assert encode_event(e) == (
        b'{"type":"tool/result","seq":3,"time":7,"data":{"x":"\xc3\xa9"},'
        b'"sourceEventSeqs":[1,2],"surfaceOp":"append"}'
    )


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, {1: "x"}, object(), 2**64])
def test_append_refuses_non_json(bad: object) -> None:
    s = Session(_header())
    with pytest.raises(InvalidEventError):
        s.append("turn/start", {"turn": 1, "bad": bad})
    assert s.next_seq == 0


def test_session_enforces_contiguous_seqs() -> None:
    s = Session(_header())
    s.append("turn/start", {"turn": 1})
    with pytest.raises(InvalidEventError):
        s.append_event(Event("turn/end", 5, 0, {}))
    with pytest.raises(InvalidEventError):
        Session(_header(), [Event("turn/start", 1, 0, {"turn": 1})])


def test_fork_cut_is_the_completed_turn_prefix() -> None:
    evs = [
        Event("turn/start", 0, 0, {"turn": 1}),
        Event("turn/end", 1, 0, {"turn": 1, "reason": {"kind": "completed"}}),
        Event("turn/start", 2, 0, {"turn": 2}),
    ]
    assert fork_cut(evs) == 2
    assert fork_cut(evs[:1]) == 0


def test_fork_seed_is_the_prefix_plus_the_tagged_marker() -> None:
    parent = SessionHeader(id="p", created_at=1, cwd="/w", delegation_depth=1)
    evs = [
        Event("turn/start", 0, 0, {"turn": 1}),
        Event("turn/end", 1, 0, {"turn": 1, "reason": {"kind": "completed"}}),
        Event("turn/start", 2, 0, {"turn": 2}),
    ]
    child = fork_seed(parent, evs)
    assert child.cut == 2 and child.header.is_seeded
    assert child.header.parent_session == "p" and child.header.cwd == "/w"
    assert child.header.delegation_depth == 1
    assert child.seed[:2] == evs[:2]
    marker = child.seed[2]
    assert (marker.type, marker.seq, marker.data) == ("session/end-seed", 2, {"inherited": True})
    assert marker.time == child.header.created_at
    check_cut(child.header, child.cut, child.seed)
    empty = fork_seed(parent, evs[:1])
    assert (empty.cut, empty.seed, empty.header.is_seeded) == (0, [], False)


def test_cut_rules() -> None:
    prefix = [Event("turn/start", 0, 0, {"turn": 1}), Event("turn/end", 1, 0, {"turn": 1})]
    marker = Event("session/end-seed", 2, 0, {"inherited": True})
    check_cut(_header(is_seeded=True), 2, [*prefix, marker])
    check_cut(_header(), 0, prefix)
    with pytest.raises(InvalidEventError):
        check_cut(_header(is_seeded=True), 0, prefix)  # seeded without marker
    with pytest.raises(InvalidEventError):
        check_cut(_header(), 0, [*prefix, marker])  # marker without isSeeded
    with pytest.raises(InvalidEventError):
        check_cut(_header(is_seeded=True), 1, [*prefix, marker])  # cut disagrees


def test_session_keeps_explicit_cut_and_numbering() -> None:
    prefix = [Event("turn/start", 0, 0, {"turn": 1}), Event("turn/end", 1, 0, {"turn": 1})]
    marker = Event("session/end-seed", 2, 0, {"inherited": True})
    s = Session(_header(is_seeded=True), [*prefix, marker], inherited_event_count=2)
    assert s.inherited_event_count == 2
    assert s.last_turn() == 1
    s.append("turn/start", {"turn": 2})
    assert [e.seq for e in s.own_events] == [2, 3]


def test_the_envelope_and_header_load_neither_the_assembler_nor_the_fork_rule() -> None:
    code = (
        "import sys\nfrom dsh.events import Event, SessionHeader\n"
        "print(sorted(m for m in ('dsh.events.assembler', 'dsh.events.fork') if m in sys.modules))\n"
        "from dsh.events import BlockAssembler, fork_cut\n"
        "print(BlockAssembler.__module__, fork_cut.__module__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[]", "dsh.events.assembler dsh.events.fork"]
