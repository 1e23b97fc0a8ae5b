"""``views.call_pairs``: the one pairing of tool calls and results (crash repair and the stepwise
driver's "did this call run" both read it), and crash repair closing only unanswered calls."""

from __future__ import annotations

from dsh.events import SessionHeader
from dsh.events.messages import text_block, tool_result_message
from dsh.events.payloads import tool_call, tool_result_data
from dsh.events.vocabulary import STEP_START, TOOL_CALL, TOOL_RESULT, TURN_START
from dsh.session import Session, interrupted_turn_closers
from dsh.session.views import OUTCOME_UNKNOWN, call_pairs


def _session() -> Session:
    session = Session(SessionHeader(id="s", created_at=1))
    session.append(TURN_START, {"turn": 1})
    session.append(STEP_START, {"turn": 1, "step": 1})
    for call_id in ("a", "b", "c"):
        session.append(TOOL_CALL, tool_call(1, 1, call_id, "bash", "{}"))
    answer = tool_result_message("b", [text_block("ok")], is_error=False)
    session.append(TOOL_RESULT, tool_result_data(1, 1, answer))
    return session


def test_calls_pair_with_their_results_in_log_order() -> None:
    pairs = call_pairs(_session().events)
    assert list(pairs.started) == ["a", "b", "c"]
    assert pairs.settled == frozenset({"b"})
    assert list(pairs.open()) == ["a", "c"]


def test_crash_repair_settles_only_the_unanswered_calls_as_outcome_unknown() -> None:
    closers = interrupted_turn_closers(_session())
    results = [data for etype, data, _ in closers if etype == TOOL_RESULT]
    answered = [r["message"]["content"][0]["toolCallId"] for r in results]
    assert answered == ["a", "c"]
    assert all(r["error"] == {"code": OUTCOME_UNKNOWN} for r in results)
