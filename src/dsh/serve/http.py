"""dsh serve's HTTP server: keep-alive, JSON replies and chunked SSE, on :mod:`dsh.http1`.

Just what ``dsh serve`` needs and nothing else (no TLS, no pipelining beyond sequential
keep-alive requests; the wire rules live in :mod:`dsh.http1`). A handler gets a
:class:`~dsh.http1.Request` and returns a :class:`Reply`: a complete body, body pieces each
after its pause, or an async iterator of body pieces; the last two are sent with chunked
encoding.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsh import jsonx
from dsh.http1 import LAST_CHUNK, Listener, Request, chunk, head, read_request

__all__ = ["HttpServer", "Paced", "Reply", "Request", "control_reply", "json_body", "json_reply", "paced"]

Paced = Sequence[tuple[float, bytes]]
"""Body pieces, each sent after a pause of that many seconds (0: at once)."""


@dataclass(slots=True)
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    paced: Paced | None = None
    """Body pieces known up front, each after its pause (a replay's recorded pacing)."""
    stream: AsyncIterator[bytes] | None = None
    """Body pieces as they arrive (a proxied upstream stream)."""
    headers: list[tuple[str, str]] = field(default_factory=list)


def json_reply(status: int, document: Any) -> Reply:
    return Reply(status, jsonx.dumps(document))


Handler = Callable[[Request], Awaitable[Reply]]


def control_reply(
    request: Request, report: Callable[[], dict[str, Any]], stopped: asyncio.Event
) -> Reply | None:
    """``GET /_dsh/report`` and ``POST /_dsh/shutdown`` (which sets ``stopped``); else ``None``."""
    if request.path == "/_dsh/report" and request.method == "GET":
        return json_reply(200, report())
    if request.path == "/_dsh/shutdown" and request.method == "POST":
        stopped.set()
        return json_reply(200, report())
    return None


def json_body(request: Request, who: str) -> dict[str, Any] | Reply:
    """The request's JSON object body, or the 400 reply saying it is not one."""
    try:
        body = jsonx.loads(request.body) if request.body else None
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return json_reply(400, {"error": {"message": f"{who}: the body is not a JSON object"}})
    return body


class HttpServer:
    """Serves ``handler`` on ``127.0.0.1:port`` (0: a free port) until :meth:`close`."""

    def __init__(self, handler: Handler, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.handler = handler
        self._listener = Listener(self._serve, host=host, port=port)

    @property
    def started(self) -> bool:
        return self._listener.started

    @property
    def host(self) -> str:
        return self._listener.host

    @property
    def port(self) -> int:
        return self._listener.port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def start(self) -> None:
        await self._listener.start(limit=1 << 24)

    async def close(self) -> None:
        await self._listener.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            request = await read_request(reader)
            if request is None:
                return
            try:
                reply = await self.handler(request)
            except Exception as exc:  # a handler bug must not kill the connection silently
                reply = json_reply(500, {"error": {"message": f"dsh serve: {exc}", "type": "server_error"}})
            keep = request.headers.get("connection", "").lower() != "close"
            await _write(writer, reply, keep)
            if not keep:
                return


async def _write(writer: asyncio.StreamWriter, reply: Reply, keep: bool) -> None:
    fields = [("Content-Type", reply.content_type), *reply.headers,
              ("Connection", "keep-alive" if keep else "close")]  # fmt: skip
    if reply.stream is None and reply.paced is None:
        fields.append(("Content-Length", str(len(reply.body))))
        writer.write(head(reply.status, fields) + reply.body)
        await writer.drain()
        return
    fields += [("Cache-Control", "no-cache"), ("Transfer-Encoding", "chunked")]
    writer.write(head(reply.status, fields))
    async for piece in reply.stream if reply.stream is not None else paced(reply.paced or ()):
        if piece:
            writer.write(chunk(piece))
            await writer.drain()
    writer.write(LAST_CHUNK)
    await writer.drain()


async def paced(pieces: Paced) -> AsyncIterator[bytes]:
    """``pieces`` as they are due on an asyncio loop (each after its pause)."""
    for pause, piece in pieces:
        if pause > 0:
            await asyncio.sleep(pause)
        yield piece
