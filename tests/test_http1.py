"""dsh.http1: the HTTP/1.1 reading and framing both local servers (dsh serve, dsh.testing) use."""

from __future__ import annotations

import asyncio

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
