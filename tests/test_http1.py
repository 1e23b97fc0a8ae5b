"""dsh.http1: the HTTP/1.1 reading and framing both local servers (dsh serve, dsh.testing) use."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from dsh.errors import HttpRequestError
from dsh.http1 import LAST_CHUNK, Listener, chunk, head, read_request


def _reader(data: bytes) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    return reader


async def test_a_request_with_a_length_then_a_chunked_one_on_the_same_stream() -> None:
    reader = _reader(
        b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nContent-Length: 2\r\nX-Dsh-Session: a\r\n\r\n{}"
        b"POST /chat HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;ext\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    )
    first = await read_request(reader)
    assert first is not None
    assert (first.method, first.path, first.body) == ("POST", "/v1/chat/completions", b"{}")
    assert first.headers == {"content-length": "2", "x-dsh-session": "a"}
    second = await read_request(reader)
    assert second is not None and (second.path, second.body) == ("/chat", b"abcde")
    assert await read_request(reader) is None  # the peer closed


async def test_a_bad_request_line_or_a_cut_body() -> None:
    with pytest.raises(HttpRequestError) as bad:
        await read_request(_reader(b"GARBAGE\r\n\r\n"))
    assert bad.value.status == 400
    assert await read_request(_reader(b"POST / HTTP/1.1\r\nHost: x")) is None  # the peer closed mid-head
    with pytest.raises(asyncio.IncompleteReadError):
        await read_request(_reader(b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nabc"))


def test_framing() -> None:
    assert head(409, [("Content-Length", "0")]) == b"HTTP/1.1 409 Conflict\r\nContent-Length: 0\r\n\r\n"
    assert head(299, []) == b"HTTP/1.1 299 Status\r\n\r\n"
    assert chunk(b"hello") + LAST_CHUNK == b"5\r\nhello\r\n0\r\n\r\n"


async def test_close_cancels_open_connections_and_closes_them() -> None:
    opened = asyncio.Event()

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        opened.set()
        await reader.read()  # until the listener cancels us

    listener = Listener(hold)
    await listener.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    await asyncio.wait_for(opened.wait(), 10)
    await asyncio.wait_for(listener.close(), 10)
    assert await asyncio.wait_for(reader.read(), 10) == b""  # the server side closed the socket
    assert not listener.started
    writer.close()


async def _ok_server(peer_cap: int, gate: asyncio.Event, entered: list[str]) -> Listener:
    """A keep-alive server answering every request ``ok``; ``/slow`` waits for ``gate``."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (request := await read_request(reader)) is not None:
            entered.append(request.path)
            if request.path == "/slow":
                await gate.wait()
            writer.write(head(200, [("Content-Length", "2")]) + b"ok")
            await writer.drain()

    listener = Listener(answer, peer_cap=peer_cap)
    await listener.start()
    return listener


async def _until(condition: Callable[[], bool]) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), 10)


async def _get(port: int, path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    return reader, writer


async def test_over_an_addresss_cap_its_longest_idle_connection_makes_room() -> None:
    listener = await _ok_server(3, asyncio.Event(), [])
    opened: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    try:
        for _ in range(3):
            opened.append(await asyncio.open_connection("127.0.0.1", listener.port))
        await _until(lambda: listener.peers.held("127.0.0.1") == 3)
        reader, writer = await _get(listener.port, "/")
        opened.append((reader, writer))
        assert (
            await asyncio.wait_for(reader.readexactly(40), 10)
            == b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        )
        assert await asyncio.wait_for(opened[0][0].read(), 10) == b""  # the longest idle was closed
        assert (listener.peers.shed, listener.peers.refused, listener.peers.held("127.0.0.1")) == (1, 0, 3)
    finally:
        for _, writer in opened:
            writer.close()
        await asyncio.wait_for(listener.close(), 10)


async def test_a_connection_being_answered_is_never_shed_and_a_new_one_is_refused() -> None:
    gate, entered = asyncio.Event(), list[str]()
    listener = await _ok_server(2, gate, entered)
    try:
        first = await _get(listener.port, "/slow")
        second = await _get(listener.port, "/slow")
        await _until(lambda: entered == ["/slow", "/slow"])  # both heads read: both busy
        third_reader, third_writer = await asyncio.open_connection("127.0.0.1", listener.port)
        assert await asyncio.wait_for(third_reader.read(), 10) == b""  # refused
        third_writer.close()
        gate.set()
        for reader, _ in (first, second):
            assert (await asyncio.wait_for(reader.readexactly(40), 10)).endswith(b"ok")
        assert (listener.peers.shed, listener.peers.refused) == (0, 1)
    finally:
        for _, writer in (first, second):
            writer.close()
        await asyncio.wait_for(listener.close(), 10)
