"""Log invariants every test can assert: one result per call, one end per step and turn."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from dsh.events import Event


def check_log_invariants(events: Sequence[Event]) -> None:
    """Seqs contiguous; each tool/call one tool/result; each step and turn closed once."""
    assert [e.seq for e in events] == list(range(len(events)))
    calls = Counter(e.data["callId"] for e in events if e.type == "tool/call")
    results = Counter(
        e.data["message"]["content"][0]["toolCallId"] for e in events if e.type == "tool/result"
    )
    assert calls == results, (calls, results)
    assert all(n == 1 for n in calls.values())
    steps = Counter((e.data["turn"], e.data["step"]) for e in events if e.type == "step/start")
    ends = Counter((e.data["turn"], e.data["step"]) for e in events if e.type == "step/end")
    assert steps == ends and all(n == 1 for n in steps.values()), (steps, ends)
    turns = Counter(e.data["turn"] for e in events if e.type == "turn/start")
    turn_ends = Counter(e.data["turn"] for e in events if e.type == "turn/end")
    assert turns == turn_ends and all(n == 1 for n in turns.values()), (turns, turn_ends)
    for e in events:
        if e.type == "tool/result":
            assert e.source_event_seqs is not None and len(e.source_event_seqs) == 1
            call = events[e.source_event_seqs[0]]
            assert call.type == "tool/call"
            assert call.data["callId"] == e.data["message"]["content"][0]["toolCallId"]
