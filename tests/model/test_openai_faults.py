"""OpenAICompatModel failures: every fault ends the stream with one classified error finish."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from dsh.events import chunks as ck
from dsh.events.chunks import Chunk
from dsh.model.failures import retry_after_ms
from dsh.model.openai_compat import OpenAICompatModel
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import (
    Drop,
    Faults,
    Response,
    Stall,
    WireToolCall,
    Write,
    http_error,
    json_response,
    raw_stream,
    stream_reply,
)
from tests.patience import patience

from .conftest import KEY, assemble, check_stream_shape, collect, failure, request


@pytest.mark.parametrize(
    ("status", "message", "code"),
    [
        (401, "Authentication Fails, Your api key is invalid", "AUTH"),
        (403, "forbidden", "AUTH"),
        (429, "Rate limit reached for requests", "RATE_LIMIT"),
        (429, "You exceeded your current quota, please check your plan and billing details.", "QUOTA"),
        (402, "Insufficient Balance", "QUOTA"),
        (
            400,
            "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens.",
            "CONTEXT_OVERFLOW",
        ),
        (400, "Invalid request: messages[3].content must be a string", "BAD_REQUEST"),
        (413, "Request Entity Too Large", "BAD_REQUEST"),
        (422, "Unprocessable Entity", "BAD_REQUEST"),
        (500, "Internal error", "SERVER"),
        (502, "Bad gateway", "SERVER"),
        (503, "Service Unavailable", "OVERLOADED"),
        (529, "Overloaded", "OVERLOADED"),
        (404, "Not Found", "HTTP_404"),
        (409, "Conflict", "HTTP_409"),
    ],
)
async def test_http_errors_are_classified(
    server: OpenAICompatServer, model: OpenAICompatModel, status: int, message: str, code: str
) -> None:
    server.enqueue(http_error(status, message))
    chunks = await collect(model)
    assert len(chunks) == 1
    got = failure(chunks)
    assert got["code"] == code
    assert got["message"].startswith(f"HTTP {status}: {message}")
    assert ck.is_retryable(code) == (code in {"RATE_LIMIT", "SERVER", "OVERLOADED"})


@pytest.mark.parametrize(("header", "expected"), [("2", 2000), ("0.25", 250), ("soon", None), ("-3", None)])
async def test_retry_after_travels_in_the_message(
    server: OpenAICompatServer, model: OpenAICompatModel, header: str, expected: int | None
) -> None:
    server.enqueue(http_error(429, "slow down", retry_after=header, headers=[("x-request-id", "req_42")]))
    got = failure(await collect(model))
    assert got["code"] == "RATE_LIMIT"
    assert retry_after_ms(got["message"]) == expected
    assert "[request-id=req_42]" in got["message"]


async def test_long_provider_messages_keep_the_hints(
    server: OpenAICompatServer, model: OpenAICompatModel
) -> None:
    server.enqueue(http_error(429, "x" * 5000, retry_after="7", headers=[("x-request-id", "req_1")]))
    message = failure(await collect(model))["message"]
    assert len(message) < 600 and "…" in message
    assert retry_after_ms(message) == 7000 and message.endswith("[request-id=req_1]")


def _text_then(faults: Faults, **kwargs: Any) -> Response:
    return stream_reply(text=["one ", "two ", "three"], faults=faults, **kwargs)


FAULTS = {
    # event 0 is the role chunk, events 1-3 carry "one ", "two ", "three"
    "drop-mid-stream": (_text_then(Faults(drop_after=3)), "CONNECTION", "one two "),
    "malformed-json": (_text_then(Faults(malformed_at=3)), "MALFORMED_RESPONSE", "one two "),
    "no-done-sentinel": (_text_then(Faults(omit_done=True)), "STREAM_CLOSED", "one two three"),
    "no-finish-reason": (_text_then(Faults(), finish_reason=None), "STREAM_CLOSED", "one two three"),
    "stall-until-closed": (_text_then(Faults(stall_after=2)), "TIMEOUT", "one "),
    "stall-for-a-while": (_text_then(Faults(stall_after=3, stall_seconds=3.0)), "TIMEOUT", "one two "),
    "drop-before-finish": (_text_then(Faults(drop_after=4)), "CONNECTION", "one two three"),
}


@pytest.mark.parametrize(("response", "code", "partial"), FAULTS.values(), ids=FAULTS.keys())
async def test_mid_stream_faults_keep_partial_chunks(
    server: OpenAICompatServer, response: Response, code: str, partial: str
) -> None:
    async with OpenAICompatModel(base_url=server.base_url, api_key=KEY, idle_timeout=0.3) as m:
        server.enqueue(response)
        chunks = await collect(m, request())
    check_stream_shape(chunks)
    assert failure(chunks)["code"] == code
    assert "block-end" not in [c["type"] for c in chunks]
    assert "".join(c["text"] for c in chunks if c["type"] == "text-delta") == partial
    assert assemble(chunks).failure is not None


def _chunk(delta: Any = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta or {}}],
        **extra,
    }


NOT_COMPLETION = {
    "object-without-choices": {"foo": 1},
    "json-array": [1, 2],
    "content-not-a-string": _chunk({"content": 5}),
    "tool-calls-not-a-list": _chunk({"tool_calls": {"index": 0}}),
    "usage-not-an-object": _chunk({"content": "x"}, usage=3),
}


@pytest.mark.parametrize("payload", NOT_COMPLETION.values(), ids=NOT_COMPLETION.keys())
async def test_chunks_that_are_not_completion_chunks(
    server: OpenAICompatServer, model: OpenAICompatModel, payload: Any
) -> None:
    server.enqueue(raw_stream([_chunk({"content": "a"}), json.dumps(payload)]))
    chunks = await collect(model)
    check_stream_shape(chunks)
    assert failure(chunks)["code"] == "MALFORMED_RESPONSE"
    assert chunks[:2] == [ck.block_start(0, "text"), ck.text_delta(0, "a")]


async def test_error_object_inside_a_200_stream(server: OpenAICompatServer, model: OpenAICompatModel) -> None:
    server.enqueue(
        raw_stream(
            [_chunk({"content": "a"}), {"error": {"message": "Rate limit exceeded", "type": "rate_limit"}}]
        )
    )
    got = failure(await collect(model))
    assert got["code"] == "RATE_LIMIT"
    assert "Rate limit exceeded" in got["message"]
    server.enqueue(raw_stream([{"error": {"message": "upstream exploded", "code": 502}}]))
    assert failure(await collect(model))["code"] == "SERVER"


async def test_json_body_instead_of_a_stream(server: OpenAICompatServer, model: OpenAICompatModel) -> None:
    server.enqueue(json_response(200, {"error": {"message": "Model is overloaded, try later"}}))
    assert failure(await collect(model))["code"] == "OVERLOADED"
    server.enqueue(json_response(200, {"choices": [{"message": {"content": "not streamed"}}]}))
    assert failure(await collect(model))["code"] == "MALFORMED_RESPONSE"


async def test_non_utf8_stream_is_malformed(server: OpenAICompatServer, model: OpenAICompatModel) -> None:
    server.enqueue(Response(200, (("Content-Type", "text/event-stream"),), (Write(b"data: \xff\xfe\n\n"),)))
    assert failure(await collect(model))["code"] == "MALFORMED_RESPONSE"


async def test_stall_before_headers_times_out(server: OpenAICompatServer) -> None:
    reply = stream_reply(text="late")
    server.enqueue(dataclasses.replace(reply, steps=(Stall(None), *reply.steps)))
    async with OpenAICompatModel(base_url=server.base_url, api_key=KEY, idle_timeout=0.3) as m:
        chunks = await collect(m, request())
    assert chunks == [chunks[-1]]
    assert failure(chunks)["code"] == "TIMEOUT"


async def test_drop_without_any_response_is_connection(
    server: OpenAICompatServer, model: OpenAICompatModel
) -> None:
    server.enqueue(Response(steps=(Drop(),)))
    assert failure(await collect(model))["code"] == "CONNECTION"


async def test_connection_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with OpenAICompatModel(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, connect_timeout=2) as m:
        chunks = await collect(m, request())
    got = failure(chunks)
    assert got["code"] == "CONNECTION_REFUSED"  # nothing ever answered at this base URL
    assert f"127.0.0.1:{port}" in got["message"]


def _all_text(chunks: list[Chunk], model: OpenAICompatModel) -> str:
    return json.dumps(chunks) + repr(model) + str(model)


async def test_the_key_never_leaks(server: OpenAICompatServer, model: OpenAICompatModel) -> None:
    echo = f"Incorrect API key provided: {KEY}. Authorization: Bearer {KEY}"
    server.enqueue(
        http_error(401, echo, code=KEY, headers=[("x-request-id", KEY)]),
        http_error(500, echo),
        json_response(503, {"detail": echo}),
        Response(500, (("Content-Type", "text/plain"),), (Write(echo.encode()),), chunked=False),
        raw_stream([{"error": {"message": echo}}]),
        json_response(200, {"error": {"message": echo}}),
    )
    seen: list[Chunk] = []
    for _ in range(6):
        chunks = await collect(model)
        last = chunks[-1]
        assert last["type"] == "finish" and last["reason"]["kind"] == "error"
        assert "***" in last["reason"]["failure"]["message"]
        seen += chunks
    assert server.pending == 0
    assert KEY not in _all_text(seen, model)
    assert KEY[-12:] not in _all_text(seen, model)


async def test_the_key_never_leaks_from_connection_errors() -> None:
    # A base URL that carries the key (some gateways want it in the URL) must be scrubbed too.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with OpenAICompatModel(base_url=f"http://127.0.0.1:{port}/{KEY}/v1", api_key=KEY) as m:
        chunks = await collect(m, request())
        text = _all_text(chunks, m)
    assert failure(chunks)["code"] == "CONNECTION_REFUSED"
    assert KEY not in text


async def test_cancellation_propagates_and_closes_the_response(server: OpenAICompatServer) -> None:
    server.enqueue(stream_reply(text=["first", "never"], faults=Faults(stall_after=2)))
    got: list[Chunk] = []
    first = asyncio.Event()

    async def consume(m: OpenAICompatModel) -> None:
        async for chunk in m.stream(request()):
            got.append(chunk)
            if chunk["type"] == "text-delta":
                first.set()

    async with OpenAICompatModel(base_url=server.base_url, api_key=KEY, idle_timeout=30) as m:
        task = asyncio.create_task(consume(m))
        async with asyncio.timeout(patience(20)):
            await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The server sees the client hang up: the stalled response ends long before max_stall.
        async with asyncio.timeout(patience(20)):
            while server.in_flight:
                await asyncio.sleep(0.01)
    assert got == [ck.block_start(0, "text"), ck.text_delta(0, "first")]
    assert server.requests[0].ended_at is not None


async def test_abandoning_the_iterator_closes_the_response(server: OpenAICompatServer) -> None:
    server.enqueue(stream_reply(text=["first", "never"], faults=Faults(stall_after=2)))
    async with OpenAICompatModel(base_url=server.base_url, api_key=KEY, idle_timeout=30) as m:
        stream = m.stream(request())
        async for chunk in stream:
            if chunk["type"] == "text-delta":
                break
        assert isinstance(stream, AsyncGenerator)
        await stream.aclose()
        async with asyncio.timeout(patience(20)):
            while server.in_flight:
                await asyncio.sleep(0.01)


async def test_two_streams_overlap(server: OpenAICompatServer, model: OpenAICompatModel) -> None:
    args = '{"pattern": "*.md"}'
    server.enqueue(
        stream_reply(text="A", gate=2),
        stream_reply(tool_calls=[WireToolCall.split("c", "glob", args, 3)], gate=2),
    )
    first, second = await asyncio.gather(collect(model), collect(model))
    assert server.gate_timeouts == 0
    assert server.max_in_flight == 2
    a, b = server.requests
    assert a.ended_at is not None and b.ended_at is not None
    assert a.started_at < b.ended_at and b.started_at < a.ended_at
    results = sorted([assemble(first).finish_kind, assemble(second).finish_kind])
    assert results == ["stop", "tool-calls"]


async def test_cancellation_while_waiting_for_headers(server: OpenAICompatServer) -> None:
    reply = stream_reply(text="late")
    server.enqueue(dataclasses.replace(reply, steps=(Stall(None), *reply.steps)))
    async with OpenAICompatModel(base_url=server.base_url, api_key=KEY, idle_timeout=30) as m:
        task = asyncio.create_task(collect(m, request()))
        async with asyncio.timeout(patience(20)):
            while not server.in_flight:
                await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        async with asyncio.timeout(patience(20)):
            while server.in_flight:
                await asyncio.sleep(0.01)
