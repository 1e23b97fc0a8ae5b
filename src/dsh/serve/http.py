"""A small HTTP/1.1 server on asyncio streams: keep-alive, JSON replies and chunked SSE.

Just what ``dsh serve`` needs and nothing else (no TLS, no pipelining beyond sequential
keep-alive requests). A handler gets a :class:`Request` and returns a :class:`Reply`: a
complete body, or an async iterator of SSE payloads sent with chunked encoding.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from dsh import jsonx

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            409: "Conflict", 500: "Internal Server Error", 502: "Bad Gateway"}  # fmt: skip


@dataclass(slots=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    """Names lower-cased."""
    body: bytes

    def json(self) -> Any:
        return jsonx.loads(self.body) if self.body else None


@dataclass(slots=True)
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    stream: AsyncIterator[bytes] | None = None
    """Raw body pieces sent with chunked encoding (already framed as SSE by the handler)."""
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
        body = request.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return json_reply(400, {"error": {"message": f"{who}: the body is not a JSON object"}})
    return body


class HttpServer:
    """Serves ``handler`` on ``127.0.0.1:port`` (0: a free port) until :meth:`close`."""

    def __init__(self, handler: Handler, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.handler = handler
        self.host = host
        self._port = port
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self._port, limit=1 << 24)

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                request = await _read(reader)
                if request is None:
                    break
                try:
                    reply = await self.handler(request)
                except Exception as exc:  # a handler bug must not kill the connection silently
                    reply = json_reply(
                        500, {"error": {"message": f"dsh serve: {exc}", "type": "server_error"}}
                    )
                keep = request.headers.get("connection", "").lower() != "close"
                await _write(writer, reply, keep)
                if not keep:
                    break
        except (
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            asyncio.CancelledError,
        ):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError, asyncio.CancelledError):
                await writer.wait_closed()


async def _read(reader: asyncio.StreamReader) -> Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return None
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            body += await reader.readexactly(size)
            await reader.readexactly(2)
        data = bytes(body)
    else:
        data = await reader.readexactly(int(headers.get("content-length", "0") or 0))
    return Request(parts[0], parts[1].split("?")[0], headers, data)


async def _write(writer: asyncio.StreamWriter, reply: Reply, keep: bool) -> None:
    head = [
        f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}",
        f"Content-Type: {reply.content_type}",
    ]
    head.extend(f"{k}: {v}" for k, v in reply.headers)
    head.append("Connection: keep-alive" if keep else "Connection: close")
    if reply.stream is None:
        head.append(f"Content-Length: {len(reply.body)}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + reply.body)
        await writer.drain()
        return
    head.append("Cache-Control: no-cache")
    head.append("Transfer-Encoding: chunked")
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
    async for piece in reply.stream:
        if piece:
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()
