"""dsh serve's HTTP server: keep-alive, JSON replies and chunked SSE, on :mod:`dsh.http1`.

Just what ``dsh serve`` needs and nothing else (no TLS, no pipelining beyond sequential
keep-alive requests; the wire rules live in :mod:`dsh.http1`). A handler gets a
:class:`~dsh.http1.Request` and returns a :class:`Reply`: a complete body, body pieces each
after its pause, or an async iterator of body pieces; the last two are sent with chunked
encoding.

Before a handler sees a request, :class:`HttpServer` refuses what it must not answer, each
with one log line and ``x-should-retry: false`` (the ``openai`` SDK would otherwise retry a
409 or a 408): malformed or oversized input (:mod:`dsh.http1`'s :class:`~dsh.http1.Limits`:
400, 408, 413, 431; the connection is closed), a foreign ``Host`` (421) or ``Origin`` (403)
(:class:`dsh.hosts.HostPolicy`). The control routes (``/_dsh/report``, ``/_dsh/shutdown``)
also need the server's per-run token in ``X-Dsh-Token`` (:func:`control_reply`).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsh import jsonx
from dsh.errors import HttpRequestError
from dsh.hosts import HostPolicy
from dsh.http1 import (
    DEFAULT_LIMITS,
    LAST_CHUNK,
    Limits,
    Listener,
    Log,
    Request,
    chunk,
    head,
    peer_of,
    read_request,
    stderr_log,
)

__all__ = [
    "ErrorShape",
    "HttpServer",
    "Paced",
    "Reply",
    "Request",
    "control_reply",
    "json_body",
    "json_reply",
    "new_token",
    "openai_error",
    "paced",
    "refusal",
]

NO_RETRY = ("x-should-retry", "false")
"""Tells the ``openai`` SDK (and its ports) not to retry: a refusal answers the same again."""
TOKEN_HEADER = "X-Dsh-Token"
"""The header carrying a server's per-run control token."""
CONTROL_PATHS = frozenset({"/_dsh/report", "/_dsh/shutdown"})

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
    refused: str | None = None
    """Set on a refusal (:func:`refusal`): its message, for the server's one log line."""


def json_reply(status: int, document: Any) -> Reply:
    return Reply(status, jsonx.dumps(document))


ErrorShape = Callable[[str, str, dict[str, Any]], dict[str, Any]]
"""A wire dialect's error document: ``(message, kind, extra fields) -> body``."""


def openai_error(message: str, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's error shape (Chat Completions, Responses): ``{"error": {message, type, ...}}``."""
    return {"error": {"message": message, "type": kind, **fields}}


def refusal(
    status: int,
    message: str,
    *,
    kind: str = "invalid_request_error",
    shape: ErrorShape = openai_error,
    **fields: Any,
) -> Reply:
    """A JSON error reply in ``shape`` (default OpenAI's) the client must not retry
    (``x-should-retry: false``)."""
    document = shape(message, kind, fields)
    return Reply(status, jsonx.dumps(document), headers=[NO_RETRY], refused=message)


Handler = Callable[[Request], Awaitable[Reply]]


def new_token() -> str:
    """A fresh per-run control token (printed at start, sent back in ``X-Dsh-Token``)."""
    return secrets.token_urlsafe(18)


def control_reply(
    request: Request, report: Callable[[], dict[str, Any]], stopped: asyncio.Event, token: str
) -> Reply | None:
    """``GET /_dsh/report`` and ``POST /_dsh/shutdown`` (which sets ``stopped``), each only with
    ``token`` in ``X-Dsh-Token`` (else 403); ``None`` for any other path."""
    if request.path not in CONTROL_PATHS:
        return None
    given = request.headers.get(TOKEN_HEADER.lower(), "")
    if not secrets.compare_digest(given.encode("latin-1", "replace"), token.encode()):
        what = "a wrong" if given else "no"
        return refusal(
            403, f"dsh serve: {request.path} refused: {what} {TOKEN_HEADER} (the token printed at start)"
        )
    if request.path == "/_dsh/report" and request.method == "GET":
        return json_reply(200, report())
    if request.path == "/_dsh/shutdown" and request.method == "POST":
        stopped.set()
        return json_reply(200, report())
    return refusal(405, f"dsh serve: {request.method} {request.path} not allowed")


def json_body(request: Request, who: str, shape: ErrorShape = openai_error) -> dict[str, Any] | Reply:
    """The request's JSON object body, or the 400 reply (in ``shape``) saying it is not one."""
    try:
        body = jsonx.loads(request.body) if request.body else None
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return refusal(400, f"{who}: the body is not a JSON object", shape=shape)
    return body


class HttpServer:
    """Serves ``handler`` on ``127.0.0.1:port`` (0: a free port) until :meth:`close`.

    ``hosts`` decides which ``Host`` / ``Origin`` headers are answered (default: loopback
    names only), ``limits`` bound each request, ``log`` gets one line per refusal,
    ``peer_cap`` bounds the connections one peer address holds (:mod:`dsh.peer_slots`).
    """

    def __init__(
        self,
        handler: Handler,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        hosts: HostPolicy | None = None,
        limits: Limits = DEFAULT_LIMITS,
        log: Log = stderr_log,
        name: str = "dsh serve",
        peer_cap: int | None = None,
    ) -> None:
        self.handler = handler
        self.hosts = hosts if hosts is not None else HostPolicy(bound=host)
        self.limits = limits
        self.name = name
        self._log: Log = lambda line: log(" ".join(line.split()))  # one line, whatever a message holds
        self._listener = Listener(self._serve, host=host, port=port, log=log, name=name, peer_cap=peer_cap)

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

    @property
    def accept_failures(self) -> int:
        return self._listener.accept_failures

    async def start(self) -> None:
        await self._listener.start(limit=self.limits.max_head)

    async def close(self) -> None:
        await self._listener.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                request = await read_request(reader, self.limits)
            except HttpRequestError as exc:  # the stream cannot be read on: answer and close
                self._log(f"{self.name}: refused {exc.status} from {peer_of(writer)}: {exc}")
                await _write(writer, refusal(exc.status, f"{self.name}: {exc}"), False)
                return
            if request is None:
                return
            reply = await self._answer(request)
            if reply.refused is not None:
                where = f"{request.method} {request.path[:100]} from {peer_of(writer)}"
                why = reply.refused.removeprefix(f"{self.name}: ")[:300]
                self._log(f"{self.name}: refused {reply.status} {where}: {why}")
            keep = request.headers.get("connection", "").lower() != "close"
            await _write(writer, reply, keep)
            if not keep:
                return

    async def _answer(self, request: Request) -> Reply:
        """The host check's refusal, else the handler's reply (a handler bug: a 500 refusal)."""
        refused = self.hosts.check(request.headers)
        if refused is not None:
            return refusal(refused.status, f"{self.name}: {refused.message}")
        try:
            return await self.handler(request)
        except Exception as exc:  # a handler bug must not kill the connection silently
            return refusal(500, f"{self.name}: {type(exc).__name__}: {exc}", kind="server_error")


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
