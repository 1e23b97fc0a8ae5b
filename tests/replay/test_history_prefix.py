"""The history check compares only what is new since the previous call, and still sees a change
anywhere before it (issue 40, item 3).

The part of the live history found equal at the previous call is recognized without copying
the request's list (a copy touched every message of a long session at every call); a message
before it that is another object, and not an equal one, is a divergence as before."""

from __future__ import annotations

from dsh.events.messages import Message, user_message
from dsh.model import ModelRequest
from dsh.replay.derive import Derived, RecordedCall
from dsh.replay.entries import Entry
from dsh.replay.fidelity import SessionCheck, Tolerances


def _assistant(text: str) -> Message:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "source": {"kind": "model"}}


def _check(recorded: list[Message]) -> SessionCheck:
    calls = [RecordedCall(1, 1, 1, None), RecordedCall(2, 1, 3, None), RecordedCall(3, 1, 5, None)]
    derived = Derived([Entry("chunks")] * 3, calls, list(recorded))
    return SessionCheck("s", "id", derived, version=2, tolerances=Tolerances(), cwd=None)


def _request(messages: list[Message]) -> ModelRequest:
    return ModelRequest("live", "m", list(messages))


RECORDED = [user_message("one"), _assistant("a"), user_message("two"), _assistant("b"), user_message("three")]


def test_a_changed_message_before_the_new_ones_diverges() -> None:
    check = _check(RECORDED)
    live = [user_message("one"), _assistant("a"), user_message("two")]
    assert check.check(0, _request(live[:1])) is None
    assert check.check(1, _request(live)) is None
    changed = [live[0], user_message("not two"), live[2]]  # the middle replaced, not equal
    found = check.check(2, _request([*changed, _assistant("b"), user_message("three")]))
    assert found is not None and found.call == 3


def test_the_first_message_replaced_diverges_too() -> None:
    check = _check(RECORDED)
    live = [user_message("one"), _assistant("a"), user_message("two")]
    assert check.check(0, _request(live[:1])) is None
    assert check.check(1, _request([user_message("other"), *live[1:]])) is not None


def test_equal_copies_of_the_earlier_messages_still_match() -> None:
    check = _check(RECORDED)
    live = [user_message("one"), _assistant("a"), user_message("two")]
    assert check.check(0, _request(live[:1])) is None
    assert check.check(1, _request(live)) is None
    copies = [dict(m) for m in live]  # other objects, equal ones (e.g. read back over a wire)
    assert check.check(2, _request([*copies, _assistant("b"), user_message("three")])) is None  # type: ignore[list-item]


def test_a_shorter_history_than_the_previous_call_diverges() -> None:
    check = _check(RECORDED)
    live = [user_message("one"), _assistant("a"), user_message("two")]
    assert check.check(0, _request(live[:1])) is None
    assert check.check(1, _request(live)) is None
    assert check.check(2, _request(live[:2])) is not None
