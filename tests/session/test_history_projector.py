"""The loop's history: each event folded once, an empty assistant message a node that shows the
model nothing, a compaction's replace rebuilding what later calls see."""

from __future__ import annotations

from dsh.events import Event, SessionHeader
from dsh.session import HistoryProjector, Session


def _user(text: str) -> dict[str, object]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _answer(text: str | None) -> dict[str, object]:
    content = [] if text is None else [{"type": "text", "text": text}]
    return {"turn": 1, "step": 1, "message": {"role": "assistant", "content": content}}


def test_the_projection_skips_empty_answers_and_follows_a_replace() -> None:
    session = Session(SessionHeader(id="s", created_at=1, cwd="/work"))
    projector = HistoryProjector()
    session.append("user/message", _user("one"))
    session.append("assistant/message", _answer(None))  # a node that shows the model nothing
    session.append("assistant/message", _answer("first"))
    texts = [m["content"][0]["text"] for m in projector.messages(session.events)]
    assert texts == ["one", "first"]
    assert projector.surface.seqs == [0, 1, 2] and projector.surface.messages[1] is None
    session.append("user/message", _user("two"))
    assert [m["content"][0]["text"] for m in projector.messages(session.events)] == ["one", "first", "two"]
    summary = _user("summary")
    session.append_event(Event("user/message", 4, 2, summary, {"op": "replace", "start": 0, "end": 2}))
    session.append("assistant/message", _answer(None))
    session.append("assistant/message", _answer("after"))
    texts = [m["content"][0]["text"] for m in projector.messages(session.events)]
    assert texts == ["summary", "two", "after"], "the replace rebuilt the history, the appends after it kept"
    assert HistoryProjector().messages(session.events) == projector.messages(session.events), "folded at once"
