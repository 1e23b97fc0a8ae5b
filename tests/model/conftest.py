"""Fixtures for the model layer: a live local server and an adapter pointed at it."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from dsh.events.assembler import Assembled, BlockAssembler
from dsh.events.chunks import Chunk
from dsh.events.messages import Message, user_message
from dsh.model.base import ModelRequest
from dsh.model.openai_compat import OpenAICompatModel
from dsh.testing.server import OpenAICompatServer

KEY = "sk-dsh-test-SECRET-0123456789abcdef"


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (connecting to it is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def server() -> AsyncIterator[OpenAICompatServer]:
    async with OpenAICompatServer(read_timeout=5.0, gate_timeout=5.0, max_stall=5.0) as srv:
        yield srv


@pytest.fixture
async def model(server: OpenAICompatServer) -> AsyncIterator[OpenAICompatModel]:
    async with OpenAICompatModel(
        base_url=server.base_url, api_key=KEY, default_model="test-model", idle_timeout=2.0
    ) as m:
        yield m


def request(messages: Sequence[Message] | None = None, **fields: Any) -> ModelRequest:
    return ModelRequest(
        session_id=fields.pop("session_id", "s-1"),
        model=fields.pop("model", "test-model"),
        messages=list(messages) if messages is not None else [user_message("hi")],
        **fields,
    )


async def collect(model: Any, req: ModelRequest | None = None) -> list[Chunk]:
    return [chunk async for chunk in model.stream(req or request())]


def assemble(chunks: Sequence[Chunk]) -> Assembled:
    assembler = BlockAssembler()
    for chunk in chunks:
        assembler.feed(chunk)
    return assembler.result()


def check_stream_shape(chunks: Sequence[Chunk]) -> None:
    """Exactly one ``finish``, last; ``usage`` (if any) right before it; deltas after their start."""
    kinds = [c["type"] for c in chunks]
    assert kinds.count("finish") == 1 and kinds[-1] == "finish", kinds
    if "usage" in kinds:
        assert kinds.count("usage") == 1 and kinds[-2] == "usage", kinds
    started: set[int] = set()
    ended: set[int] = set()
    for chunk in chunks:
        if chunk["type"] == "block-start":
            assert chunk["index"] not in started
            started.add(chunk["index"])
        elif chunk["type"] in ("text-delta", "reasoning-delta", "tool-call-delta"):
            assert chunk["index"] in started and chunk["index"] not in ended
        elif chunk["type"] == "block-end":
            assert chunk["index"] in started
            ended.add(chunk["index"])


def failure(chunks: Sequence[Chunk]) -> dict[str, str]:
    last = chunks[-1]
    assert last["type"] == "finish", last
    reason = last["reason"]
    assert reason["kind"] == "error", reason
    found = reason["failure"]
    return {"code": found["code"], "message": found["message"]}
