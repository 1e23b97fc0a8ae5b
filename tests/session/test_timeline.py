"""The ``Timeline`` fold: pairing, open turns, usage, status, fork cut, children, live = history."""

from __future__ import annotations

from dataclasses import replace

from dsh.events import Event
from dsh.session import open_turn
from dsh.session.timeline import (
    Answer,
    Approval,
    ChildEnded,
    ChildStarted,
    Delta,
    Prompt,
    Reasoning,
    Relayed,
    SessionTree,
    Step,
    Timeline,
    Title,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnStart,
)
from dsh.store import LoadedSession
from tests.session.logs import T0, child_log, header, parent_log


def _fold(events: list[Event], sid: str = "p", cut: int = 0) -> tuple[Timeline, list[object]]:
    timeline = Timeline()
    timeline.begin(sid, cut=cut)
    return timeline, [item for e in events for item in timeline.feed(sid, e)]


def test_items_keep_their_event_and_read_the_payload_once() -> None:
    events = parent_log()
    _, items = _fold(events)
    kinds = [type(i).__name__ for i in items]
    assert kinds[:5] == ["TurnStart", "Request", "Prompt", "Reasoning", "Answer"]
    prompt = next(i for i in items if isinstance(i, Prompt))
    assert prompt.text == "hello there" and prompt.event is events[2]
    reasoning = next(i for i in items if isinstance(i, Reasoning))
    answer = next(i for i in items if isinstance(i, Answer))
    assert reasoning.text == "think" and answer.calls[0].name == "subagent"
    assert [p.kind for p in answer.parts] == ["reasoning"] and answer.message_id == "m1"
    assert next(i for i in items if isinstance(i, Title)).title == "Greeting"


def test_a_result_is_paired_with_its_call() -> None:
    _, items = _fold(parent_log())
    call = next(i for i in items if isinstance(i, ToolCall))
    result = next(i for i in items if isinstance(i, ToolResult))
    assert call.parsed == {"task": "x"} and call.delegates
    assert result.call is call and result.name == "subagent" and result.text == "child said hi"
    decided = [i for i in items if isinstance(i, Approval)][-1]
    assert decided.outcome == "allowed-once" and decided.tool_name == "subagent" and decided.call_id == "c1"


def test_open_turn_usage_and_status() -> None:
    timeline, items = _fold(parent_log())
    state = timeline.state("p")
    assert state.open_turn == 2
    end = next(i for i in items if isinstance(i, TurnEnd))
    assert end.reason == "completed" and end.usage == {"inputTokens": 15, "outputTokens": 2}
    assert state.usage == {"inputTokens": 15, "outputTokens": 2}
    last = parent_log()[-1].time
    assert state.status(now_ms=last + 1000) == "running"
    assert state.status(now_ms=last + 10 * 60 * 1000) == "interrupted"
    closed, _ = _fold(parent_log()[:11])
    assert closed.state("p").open_turn is None and closed.state("p").status() == "completed"
    assert Timeline().state("x").status() == "empty"


def test_a_turn_start_after_an_unended_one_is_the_open_turn_and_one_end_closes_it() -> None:
    events = [
        Event("turn/start", 0, T0, {"turn": 1}),
        Event("turn/start", 1, T0, {"turn": 2}),
        Event("turn/end", 2, T0, {"turn": 2, "reason": {"kind": "error"}}),
    ]
    timeline, _ = _fold(events)
    assert timeline.state("p").open_turn is None and timeline.state("p").status() == "error"


def test_a_fork_childs_inherited_prefix_is_marked_and_its_usage_is_not_its_own() -> None:
    events = parent_log()[:11]
    timeline, items = _fold([*events, Event("session/end-seed", 11, T0, {})], sid="f", cut=12)
    assert all(getattr(i, "inherited", True) for i in items)
    assert timeline.state("f").usage == {} and timeline.state("f").first_prompt is None
    assert timeline.state("f").prompt == "hello there"


def test_children_are_learned_from_descriptors_live() -> None:
    timeline = Timeline()
    timeline.begin("k", header=header("k", parent="p", origin="subagent"))
    parent = parent_log()
    for e in parent[:5]:
        timeline.feed("p", e)
    items = [i for e in child_log("p") for i in timeline.feed("k", e)]
    started = next(i for i in items if isinstance(i, ChildStarted))
    assert (started.kind, started.label, started.parent, started.call_id) == ("spawn", "helper", "p", "c1")
    assert isinstance(items[-1], ChildEnded) and items[-1].reason == "completed"
    result = next(i for e in parent[5:] for i in timeline.feed("p", e) if isinstance(i, ToolResult))
    assert result.child == "k" and timeline.is_child("k") and not timeline.is_child("p")


def test_given_children_name_the_call_s_child() -> None:
    timeline = Timeline({("p", "c1"): "k"})
    call = next(i for e in parent_log() for i in timeline.feed("p", e) if isinstance(i, ToolCall))
    assert call.child == "k"


def test_history_and_live_feed_give_equal_items() -> None:
    """Live (the child's events interleaved as they happen) and from history (a store's sessions,
    the tree giving each call's child) fold to equal items; only a live call cannot name its
    child yet (it is not born when the call is logged)."""
    parent, child = parent_log(), child_log("p")
    live = Timeline()
    live.begin("k", header=header("k", parent="p", origin="subagent"))
    got: list[object] = []
    for e in parent[:5]:
        got += live.feed("p", e)
    kid_live = [i for e in child for i in live.feed("k", e)]
    for e in parent[5:]:
        got += live.feed("p", e)
    sessions = {
        "p": LoadedSession(header("p"), 0, parent),
        "k": LoadedSession(header("k", parent="p", origin="subagent"), 0, child),
    }
    tree = SessionTree.of(sessions, "p")
    history = Timeline(tree.by_call)
    history.begin("k", header=sessions["k"].header)
    want = [i for e in parent for i in history.feed("p", e)]
    kid_history = [i for e in child for i in history.feed("k", e)]
    assert [replace(i, child="k") if isinstance(i, ToolCall) else i for i in got] == want
    assert kid_live == kid_history
    assert live.state("p") == history.state("p")
    assert isinstance(want[0], TurnStart)


def test_chunks_become_deltas() -> None:
    timeline = Timeline()
    assert timeline.chunk("p", {"type": "text-delta", "index": 0, "text": "a"}) == Delta("p", "text", "a")
    assert timeline.chunk("p", {"type": "reasoning-delta", "index": 0, "text": "b"}) == Delta(
        "p", "reasoning", "b"
    )
    assert timeline.chunk("p", {"type": "usage", "usage": {}}) is None


def test_a_relayed_message_is_not_a_prompt() -> None:
    event = Event(
        "user/message",
        0,
        T0,
        {
            "role": "user",
            "source": {"kind": "subagent-report"},
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        },
    )
    (item,) = Timeline().feed("p", event)
    assert isinstance(item, Relayed) and item.source == "subagent-report" and item.parts == ("a", "b")


def test_the_log_end_rule_and_the_fold_agree_on_the_open_turn() -> None:
    """``open_turn(events)`` (read from the log's end) is the fold's rule, at every prefix."""
    events = parent_log()
    nested = [Event("turn/start", 0, T0, {"turn": 1}), Event("turn/start", 1, T0, {"turn": 2}),
              Event("turn/end", 2, T0, {"turn": 2})]  # fmt: skip
    for log in (events, nested):
        for n in range(len(log) + 1):
            timeline, _ = _fold(log[:n])
            assert open_turn(log[:n]) == timeline.state("p").open_turn, n


def test_a_step_and_an_interrupted_answer() -> None:
    step = Event("step/start", 0, T0, {"turn": 3, "step": 2})
    message = {"role": "assistant", "content": [{"type": "text", "text": "par"}]}
    cut_short = Event(
        "assistant/message", 1, T0, {"turn": 3, "step": 2, "interrupted": True, "message": message}
    )
    timeline = Timeline()
    (started,) = timeline.feed("p", step)
    (answer,) = timeline.feed("p", cut_short)
    assert isinstance(started, Step) and (started.turn, started.step) == (3, 2)
    assert isinstance(answer, Answer) and answer.interrupted and (answer.turn, answer.text) == (3, "par")
