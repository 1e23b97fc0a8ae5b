"""The local OpenAI-compatible server itself: wire format, routing, recording, threads, bounds."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from dsh.errors import DshError
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import (
    CRLF_STYLE,
    DEEPSEEK_STYLE,
    Faults,
    WireToolCall,
    http_error,
    stream_reply,
    wire_usage,
)
from tests.patience import patience


def post(
    url: str, body: Any, path: str = "/chat/completions", method: str = "POST"
) -> tuple[int, dict[str, str], bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        url + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, dict(err.headers), err.read()


def sse_payloads(raw: bytes) -> list[str]:
    return [line[len(b"data: ") :].decode() for line in raw.split(b"\n") if line.startswith(b"data: ")]


def test_thread_mode_exact_wire_format() -> None:
    reply = stream_reply(
        reasoning="r",
        text="t",
        tool_calls=[WireToolCall.split("call_1", "read", '{"file_path":"x"}', 3)],
        usage=wire_usage(10, 4, cached=2),
        model="deepseek-chat",
    )
    with OpenAICompatServer([reply]) as server:
        assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
        status, headers, raw = post(
            server.base_url, {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        )
        assert server.requests[0].json == {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert server.requests[0].path == "/v1/chat/completions"
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    assert raw.endswith(b"data: [DONE]\n\n")
    assert b"\n\n\n" not in raw
    payloads = sse_payloads(raw)
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert payloads[-1] == "[DONE]"
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["id"] == "chatcmpl-dsh-test" and chunk["model"] == "deepseek-chat"
        assert isinstance(chunk["created"], int)
    *content, finish, usage = chunks
    assert content[0]["choices"][0]["delta"] == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "",
    }
    calls = [
        c["choices"][0]["delta"]["tool_calls"][0] for c in content if "tool_calls" in c["choices"][0]["delta"]
    ]
    assert [c["index"] for c in calls] == [0, 0, 0]
    assert calls[0]["id"] == "call_1" and calls[0]["function"]["name"] == "read"
    assert all("id" not in c and "name" not in c["function"] for c in calls[1:])
    assert "".join(c["function"]["arguments"] for c in calls) == '{"file_path":"x"}'
    assert finish["choices"] == [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "tool_calls"}]
    assert usage["choices"] == [] and usage["usage"]["prompt_tokens_details"] == {"cached_tokens": 2}


def test_wire_variants_on_the_wire() -> None:
    calls = [WireToolCall.split("c", "glob", '{"pattern":"*"}', 2)]
    with OpenAICompatServer(
        [stream_reply(tool_calls=calls, style=DEEPSEEK_STYLE), stream_reply(text="x", style=CRLF_STYLE)]
    ) as server:
        _, _, deepseek = post(server.base_url, {})
        _, _, crlf = post(server.base_url, {})
    assert b": keep-alive\n\n" in deepseek
    chunks = [json.loads(p) for p in sse_payloads(deepseek)[:-1]]
    assert all(
        c["choices"][0]["delta"]["tool_calls"][0]["id"] == "c"
        for c in chunks
        if c["choices"] and "tool_calls" in c["choices"][0]["delta"]
    )
    assert "usage" in chunks[-1] and chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert crlf.count(b"\r\n") > 4 and b"\r\ndata: " in crlf
    assert crlf.replace(b"\r\n", b"").count(b"\n") == 0


def test_routing_by_handler_then_queue_then_500() -> None:
    def route(req: RecordedRequest) -> Any:
        return stream_reply(text="child answer") if "CHILD" in req.text() else None

    with OpenAICompatServer([stream_reply(text="parent answer")], handler=route) as server:
        _, _, child = post(server.base_url, {"messages": [{"role": "user", "content": "CHILD task"}]})
        _, _, parent = post(server.base_url, {"messages": [{"role": "user", "content": "hello"}]})
        status, _, body = post(server.base_url, {"messages": []})
        assert server.pending == 0
        assert [r.index for r in server.requests] == [0, 1, 2]
        assert server.bodies[0]["messages"][0]["content"] == "CHILD task"
    assert b"child answer" in child and b"parent answer" in parent
    assert status == 500 and b"no scripted response left for request #2" in body


def test_bad_paths_and_methods() -> None:
    with OpenAICompatServer() as server:
        assert post(server.base_url, {}, path="/embeddings")[0] == 404
        assert post(server.base_url, None, method="GET")[0] == 405


async def test_async_handler_and_error_reply(server: OpenAICompatServer) -> None:
    async def route(req: RecordedRequest) -> Any:
        await asyncio.sleep(0)
        return http_error(429, "slow", retry_after="1")

    server.handler = route
    status, headers, body = await asyncio.to_thread(post, server.base_url, {})
    assert status == 429 and headers["Retry-After"] == "1"
    assert json.loads(body) == {
        "error": {"message": "slow", "type": "api_error", "code": None, "param": None}
    }


async def test_gate_is_bounded() -> None:
    async with OpenAICompatServer([stream_reply(text="x", gate=2)], gate_timeout=0.1) as server:
        status, _, _ = await asyncio.to_thread(post, server.base_url, {})
        assert status == 200 and server.gate_timeouts == 1 and server.max_in_flight == 1


async def test_close_ends_stalled_responses() -> None:
    server = OpenAICompatServer([stream_reply(text="x", faults=Faults(stall_after=1))], max_stall=60)
    await server.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
    await writer.drain()
    async with asyncio.timeout(patience(20)):
        while not server.in_flight:
            await asyncio.sleep(0.01)
    async with asyncio.timeout(patience(20)):
        await server.close()
    assert (await reader.read()).startswith(b"HTTP/1.1 200 OK")
    writer.close()
    await writer.wait_closed()
    with pytest.raises(DshError, match="not running"):
        _ = server.port


async def test_chunked_request_body_and_slow_client_timeout() -> None:
    async with OpenAICompatServer([stream_reply(text="x")], read_timeout=0.2) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
        )
        assert (await reader.read()).startswith(b"HTTP/1.1 200 OK")
        writer.close()
        await writer.wait_closed()
        assert server.requests[0].json == {}
        # A client that never finishes its request is dropped after read_timeout.
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\n")
        async with asyncio.timeout(patience(20)):
            assert await reader.read() == b""
        writer.close()
        await writer.wait_closed()
        assert len(server.requests) == 1
