"""ScriptedModel and its reply builders."""

from __future__ import annotations

import asyncio

import pytest

from dsh.errors import DshError, ScriptExhaustedError
from dsh.events import chunks as ck
from dsh.events.chunks import Chunk
from dsh.model.base import Model, ModelRequest
from dsh.model.scripted import (
    HANG,
    Call,
    Pause,
    ScriptedModel,
    error_reply,
    hang_reply,
    text_reply,
    tool_call_reply,
    tool_calls_reply,
)
from tests.patience import patience

from .conftest import assemble, check_stream_shape, collect, request


async def test_serves_scripts_in_order_and_records_requests() -> None:
    model = ScriptedModel([text_reply("one"), text_reply("two")])
    first, second = request(session_id="a"), request(session_id="b")
    assert assemble(await collect(model, first)).content == [{"type": "text", "text": "one"}]
    assert assemble(await collect(model, second)).content == [{"type": "text", "text": "two"}]
    assert model.requests == [first, second]
    assert model.calls == 2 and model.remaining == 0
    assert isinstance(model, Model) and model.provider == "scripted"


async def test_exhausted_raises_a_clear_dsh_error() -> None:
    model = ScriptedModel([text_reply("only")])
    await collect(model)
    with pytest.raises(ScriptExhaustedError, match=r"call #2 \(session s-1\) but only 1 script") as info:
        await collect(model)
    assert isinstance(info.value, DshError)


async def test_callable_source_routes_by_request() -> None:
    def route(req: ModelRequest, index: int) -> list[Chunk]:
        return text_reply(f"{req.session_id}#{index}")

    model = ScriptedModel(route, provider="routed")
    assert assemble(await collect(model, request(session_id="child"))).content[0]["text"] == "child#0"
    assert assemble(await collect(model, request(session_id="parent"))).content[0]["text"] == "parent#1"
    assert model.remaining is None and "routed" in repr(model)


async def test_chunks_are_copies() -> None:
    model = ScriptedModel([text_reply("x"), text_reply("x")])
    chunks = await collect(model)
    last = chunks[-1]
    assert last["type"] == "finish"
    last["reason"]["kind"] = "aborted"
    assert (await collect(model))[-1] == ck.finish("stop")


async def test_pause_delay_and_hang_until_cancelled() -> None:
    model = ScriptedModel([[Pause(0.01), *hang_reply("partial")]], delay=0.001)
    got: list[Chunk] = []

    async def consume() -> None:
        async for chunk in model.stream(request()):
            got.append(chunk)

    task = asyncio.create_task(consume())
    async with asyncio.timeout(patience(20)):
        while len(got) < 2:
            await asyncio.sleep(0.005)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert got == [ck.block_start(0, "text"), ck.text_delta(0, "partial")]
    assert hang_reply() == [HANG]


def test_text_reply_is_canonical() -> None:
    script = text_reply("Hello world", deltas=3, reasoning="hm", usage={"inputTokens": 3, "outputTokens": 2})
    check_stream_shape(script)
    assert [c["type"] for c in script] == [
        "block-start",
        "reasoning-delta",
        "block-start",
        "text-delta",
        "text-delta",
        "text-delta",
        "block-end",
        "block-end",
        "usage",
        "finish",
    ]
    result = assemble(script)
    assert result.content == [{"type": "reasoning", "text": "hm"}, {"type": "text", "text": "Hello world"}]
    assert result.usage == {"inputTokens": 3, "outputTokens": 2}
    assert [c["type"] for c in text_reply("", usage=None)] == [
        "block-start",
        "text-delta",
        "block-end",
        "finish",
    ]


def test_tool_call_reply_split() -> None:
    script = tool_call_reply("c1", "read", {"file_path": "a.py"}, split=4)
    check_stream_shape(script)
    deltas = [c for c in script if c["type"] == "tool-call-delta"]
    assert len(deltas) == 4 and all(d["id"] == "c1" and d["name"] == "read" for d in deltas)
    result = assemble(script)
    assert result.finish_kind == "tool-calls"
    assert result.tool_calls == [
        {"type": "tool-call", "id": "c1", "name": "read", "arguments": '{"file_path":"a.py"}'}
    ]


def test_tool_calls_reply_with_text() -> None:
    script = tool_calls_reply(
        [Call("a", "glob", '{"pattern":"*"}'), Call("b", "bash", {"command": "ls"})], text="go"
    )
    check_stream_shape(script)
    result = assemble(script)
    assert [b["type"] for b in result.content] == ["text", "tool-call", "tool-call"]
    assert [b["id"] for b in result.tool_calls] == ["a", "b"]


def test_error_reply() -> None:
    script = error_reply("RATE_LIMIT", "slow down", partial_text="par")
    check_stream_shape(script)
    result = assemble(script)
    assert result.failure == {"code": "RATE_LIMIT", "message": "slow down"}
    assert result.content == [{"type": "text", "text": "par"}]
