"""HTTP/1.1 on asyncio streams: the one home of the wire rules dsh's local servers share.

``dsh serve`` (keep-alive, JSON and SSE replies) and the scripted test server of
``dsh.testing`` (one scripted response per connection) both listen on 127.0.0.1 with a
:class:`Listener`, read each request with :func:`read_request` (a ``Content-Length`` or
chunked body; names of headers lower-cased; the query string dropped) and frame their
replies with :func:`head` and :func:`chunk`. No TLS, no pipelining, no ``Expect: 100``.
Stdlib only, so any layer may use it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 402: "Payment Required",
           403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 409: "Conflict",
           413: "Payload Too Large", 422: "Unprocessable Entity", 429: "Too Many Requests",
           500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
           529: "Site Overloaded"}  # fmt: skip
"""The reason phrases dsh's servers send (any other status says ``Status``)."""

LAST_CHUNK = b"0\r\n\r\n"
"""The end of a chunked body (no trailers)."""

ConnectionHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

QUIET = (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.CancelledError)
"""What ends a connection without a word: the peer went away, sent garbage, or we closed."""


@dataclass(slots=True)
class Request:
    """One request as read from the wire."""

    method: str
    path: str
    """The request target without its query string."""
    headers: dict[str, str]
    """Names lower-cased."""
    body: bytes


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """The next request, or ``None`` when the peer closed first or the request line is bad.

    Raises ``asyncio.IncompleteReadError`` / ``LimitOverrunError`` / ``ValueError`` (a bad
    chunk size) when the peer breaks off or garbles the head or the body.
    """
    try:
        head_bytes = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head_bytes.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return None
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = await _read_chunked(reader)
    else:
        body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
    return Request(parts[0], parts[1].split("?")[0], headers, body)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readexactly(2)


def reason(status: int) -> str:
    """The reason phrase for ``status``."""
    return REASONS.get(status, "Status")


def head(status: int, headers: Iterable[tuple[str, str]]) -> bytes:
    """The status line and headers of a response, through the blank line."""
    lines = [f"HTTP/1.1 {status} {reason(status)}", *(f"{name}: {value}" for name, value in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def chunk(data: bytes) -> bytes:
    """``data`` framed as one chunk of a chunked body (empty ``data`` ends the body)."""
    return b"%x\r\n%s\r\n" % (len(data), data)


class Listener:
    """Serves ``handler`` per connection on ``host:port`` (0: a free port) until :meth:`close`.

    Each connection runs as a task that :meth:`close` cancels; the handler's writer is closed
    when it returns, whatever happened.
    """

    def __init__(self, handler: ConnectionHandler, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._handler = handler
        self.host = host
        self._port = port
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def started(self) -> bool:
        return self._server is not None

    @property
    def port(self) -> int:
        assert self._server is not None, "listener not started"
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self, *, limit: int = 1 << 16) -> None:
        self._server = await asyncio.start_server(self._connection, self.host, self._port, limit=limit)

    async def close(self) -> None:
        """Stop listening, cancel the connections still open and wait for them."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._handler(reader, writer)
        except QUIET:
            # close() cancels connections still open; a connection task must end quietly, or
            # asyncio's stream callback reports the cancellation as an unhandled exception.
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError, asyncio.CancelledError):
                await writer.wait_closed()
