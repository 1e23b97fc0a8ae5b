"""Serving a recorded call walks its chunks only for what they hold (issue 40, item 3).

What an entry takes from the live run — ``{{fromRequest:`` placeholders, recorded ids, the
recording's workspace — is found once when the replay opens, in the entry's JSON; serving an
entry that holds none of them does not walk its chunks (before, each call walked them three
times, and asked the check for its whole id map). What is served is unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.events.chunks import Chunk
from dsh.events.messages import Message
from dsh.model import ModelRequest
from dsh.replay import Entry, ReplayModel, SessionScript, placeholders
from dsh.replay import model as replay_model

FIN: Chunk = {"type": "finish", "reason": {"kind": "stop"}}
ID = "0b9f6a52-3c1e-4d7a-9a54-2f7d1c0e8b11"


def text(t: str) -> Chunk:
    return {"type": "text-delta", "index": 0, "text": t}


def request(text_: str = "hello") -> ModelRequest:
    messages: list[Message] = [{"role": "user", "content": [{"type": "text", "text": text_}]}]
    return ModelRequest(session_id="live", model="m", messages=messages)


def test_needs_are_found_in_the_entrys_json() -> None:
    needs_of = placeholders.needs_of
    assert needs_of([text("plain"), FIN], ["{{cwd}}"]) == placeholders.Needs(False, False, False)
    assert needs_of([text("x {{fromRequest:a(b)}}")], []).placeholders
    assert needs_of([text(f"started subagent {ID}")], []).ids
    assert needs_of([text("cat {{cwd}}/a.py")], ["{{cwd}}"]).cwd
    quoted = '/home/o"neil/work'  # a spelling JSON escapes
    assert needs_of([text(f"open {quoted}/x")], [quoted]).cwd
    assert not needs_of([text("open /home/other")], [quoted]).cwd
    assert needs_of([text("open /home/zoë/x")], ["/home/zoë"]).cwd  # UTF-8 on both sides


async def test_a_call_holding_nothing_live_is_served_without_walking_its_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    walks: list[str] = []
    for name in ("has_placeholder", "with_live_cwd", "with_live_ids"):
        real = getattr(replay_model, name)

        def counted(*args: object, _real: object = real, _name: str = name) -> object:
            walks.append(_name)
            return _real(*args)  # type: ignore[operator]

        monkeypatch.setattr(replay_model, name, counted)
    plain = Entry("chunks", (text("plain answer"), FIN))
    with_cwd = Entry("chunks", (text("wrote {{cwd}}/notes.md"), FIN))
    script = SessionScript("session.jsonl", "r", 0, [plain, with_cwd])
    model = ReplayModel(script, cwd=tmp_path)
    first = [c async for c in model.stream(request())]
    assert first == [text("plain answer"), FIN]
    assert walks == []
    second = [c async for c in model.stream(request())]
    assert second == [text(f"wrote {tmp_path}/notes.md"), FIN]  # the workspace is still swapped in
    assert walks == ["with_live_cwd"]
    model.assert_consumed()
