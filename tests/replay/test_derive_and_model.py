"""Script derivation and the ReplayModel through their public APIs."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from dsh.errors import OverrideError, ReplayError
from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.events.messages import Message
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model import Delegation, ModelRequest
from dsh.replay import Entry, ReplayModel, SessionScript, apply_override, derive_script
from dsh.store.memory import MemoryEventStore
from dsh.tools.registry import builtin_registry
from tests.patience import until

FIN: Chunk = {"type": "finish", "reason": {"kind": "stop"}}


def chunk_event(seq: int, turn: int, step: int, chunk: Mapping[str, Any]) -> Event:
    return Event("assistant/chunk", seq, 0, {"turn": turn, "step": step, "chunk": chunk})


def text(t: str) -> Chunk:
    return {"type": "text-delta", "index": 0, "text": t}


def test_v0_groups_by_turn_and_step_and_closes_at_finish() -> None:
    events = [
        chunk_event(0, 1, 1, text("a")),
        chunk_event(
            1, 1, 1, {"type": "finish", "reason": {"kind": "error", "failure": {"code": "X", "message": "m"}}}
        ),
        chunk_event(2, 1, 1, text("b")),
        chunk_event(3, 1, 1, FIN),
        Event("assistant/message", 4, 0, {"turn": 1, "step": 1, "message": {"content": []}}),
        chunk_event(5, 1, 2, text("c")),
        chunk_event(6, 1, 2, FIN),
    ]
    script = derive_script(events, "log")
    assert [len(e.chunks) for e in script] == [2, 2, 2]
    last = script[0].chunks[-1]  # a retry in the same step is its own entry
    assert last["type"] == "finish" and last["reason"]["kind"] == "error"


def test_v0_group_without_finish_needs_an_override() -> None:
    events = [chunk_event(0, 1, 1, text("a")), chunk_event(1, 1, 2, text("b")), chunk_event(2, 1, 2, FIN)]
    with pytest.raises(ReplayError, match="without a finish chunk"):
        derive_script(events, "log")


def test_v2_settlements_attempts_and_mixed_logs() -> None:
    ok = {"chunks": [text("hi"), FIN], "dt": [1]}
    thrown = {"chunks": [text("par")], "dt": []}
    events = [
        chunk_event(0, 1, 1, text("legacy")),
        chunk_event(1, 1, 1, FIN),
        Event(
            "assistant/attempt",
            2,
            0,
            {"turn": 2, "step": 1, "failure": {"code": "CONNECTION", "message": "dropped"}, "stream": thrown},
        ),
        Event("assistant/message", 3, 0, {"turn": 2, "step": 1, "message": {}, "stream": ok}),
        Event(
            "assistant/message",
            4,
            0,
            {"turn": 3, "step": 1, "message": {}, "interrupted": True, "stream": thrown},
        ),
    ]
    script = derive_script(events, "log")
    assert [e.kind for e in script] == ["chunks", "throw", "chunks", "hang"]
    assert script[1].code == "CONNECTION" and script[1].message == "dropped"
    assert list(script[2].chunks) == ok["chunks"]


def test_override_validation_and_patches() -> None:
    derived = [Entry("chunks", (FIN,))]
    replaced = apply_override(
        derived, [{"kind": "throw", "chunks": [], "code": "AUTH", "message": "no"}], "o"
    )
    assert replaced[0].kind == "throw"
    patched = apply_override(
        derived, {"patches": [{"at": 1, "entry": {"kind": "hang", "readyFile": "r"}}]}, "o"
    )
    assert [e.kind for e in patched] == ["chunks", "hang"]
    bads: tuple[object, ...] = (
        {"patches": [{"at": 5, "entry": {"kind": "hang"}}]},
        {"patches": [{"at": 0, "entry": {"kind": "hang"}}, {"at": 0, "entry": {"kind": "hang"}}]},
        [{"kind": "chunks", "chunks": [{"type": "nope"}]}],
        [{"kind": "throw", "chunks": [], "code": "", "message": "m"}],
        {"other": []},
    )
    for bad in bads:
        with pytest.raises(OverrideError):
            apply_override(derived, bad, "o")


def _request(session: str, text_: str = "", delegation: Delegation | None = None) -> ModelRequest:
    messages: list[Message] = [{"role": "user", "content": [{"type": "text", "text": text_}]}]
    return ModelRequest(session_id=session, model="m", messages=messages, delegation=delegation)


async def _drain(model: ReplayModel, request: ModelRequest) -> list[Chunk]:
    return [c async for c in model.stream(request)]


async def test_from_request_placeholder_uses_the_last_match() -> None:
    entry = Entry(
        "chunks", ({"type": "text-delta", "index": 0, "text": "id={{fromRequest:goal-([0-9]+)}}"}, FIN)
    )
    model = ReplayModel(SessionScript("session.jsonl", "r", 0, [entry]))
    chunks = await _drain(model, _request("live", "goal-1 then goal-42"))
    assert chunks[0] == text("id=42")
    model.assert_consumed()


async def test_children_bind_by_delegation_identity_not_order() -> None:
    primary = SessionScript("session.jsonl", "P", 0, [Entry("chunks", (FIN,))])
    first = SessionScript(
        "session.1.jsonl", "A", 1, [Entry("chunks", (text("A"), FIN))], parent_session="P", call_id="ca"
    )
    second = SessionScript(
        "session.2.jsonl", "B", 2, [Entry("chunks", (text("B"), FIN))], parent_session="P", call_id="cb"
    )
    model = ReplayModel(primary, [first, second], scenario="s")
    await _drain(model, _request("live-parent"))
    got_b = await _drain(model, _request("child-x", delegation=Delegation("live-parent", "cb")))
    got_a = await _drain(model, _request("child-y", delegation=Delegation("live-parent", "ca")))
    assert got_b[0] == text("B") and got_a[0] == text("A")
    model.assert_consumed()


async def test_unrecorded_child_and_exhausted_script_fail_loud() -> None:
    primary = SessionScript("session.jsonl", "P", 0, [Entry("chunks", (FIN,))])
    model = ReplayModel(primary, scenario="demo")
    await _drain(model, _request("live"))
    with pytest.raises(ReplayError, match=r"scenario demo: script session.jsonl .* exhausted"):
        await _drain(model, _request("live"))
    with pytest.raises(ReplayError, match="no recorded child session"):
        await _drain(model, _request("kid", delegation=Delegation("live", "c9")))


async def test_throw_and_hang_entries_through_the_loop(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    primary = SessionScript(
        "session.jsonl",
        "P",
        0,
        [
            Entry("throw", (text("par"),), code="SERVER", message="boom"),
            Entry(
                "hang",
                ({"type": "block-start", "index": 0, "blockType": "text"}, text("partial")),
                ready_file=str(ready),
            ),
        ],
    )
    model = ReplayModel(primary, scenario="s", cwd=tmp_path)
    agent = await Agent.create(
        MemoryEventStore(),
        model=model,
        tools=builtin_registry(),
        config=AgentConfig(model="m", retry=NO_DELAY),
        cwd=tmp_path,
    )
    task = asyncio.create_task(agent.run_turn("go"))
    await until(ready.exists, "the command is ready", every=0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    types = [e.type for e in agent.session.events]
    assert types.count("assistant/attempt") == 1 and types[-1] == "turn/end"
    attempt = next(e for e in agent.session.events if e.type == "assistant/attempt")
    assert attempt.data["failure"] == {"code": "SERVER", "message": "boom"}
    interrupted = next(e for e in agent.session.events if e.type == "assistant/message")
    assert interrupted.data["interrupted"] is True
    model.assert_consumed()
