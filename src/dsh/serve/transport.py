"""``dsh serve`` without a socket: ``httpx2`` transports for Python clients in the same process.

The ``openai`` SDK (3.x) and what is built on it (openai-agents, pydantic-ai's OpenAI model)
send through an ``httpx2`` client, which takes a transport:

    openai.OpenAI(api_key="unused", http_client=httpx2.Client(transport=ReplayTransport(server)))

:class:`ReplayTransport` answers each request with :meth:`ReplayServer.answer` — the same
routing, divergence check (409 with the diff), bytes, pacing and report as over HTTP; only
the socket and the HTTP framing are gone, as with VCR.py's patched transports.
:class:`RedirectTransport` sends every request to a running ``dsh serve`` server instead, so
the same client code records through ``dsh serve record``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator

import httpx2

from dsh.http1 import Request
from dsh.serve.http import Paced, Reply, paced
from dsh.serve.replay import ReplayServer

__all__ = ["RedirectTransport", "ReplayTransport"]


class ReplayTransport(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """Answers every request from ``server`` in-process (sync and async clients alike)."""

    def __init__(self, server: ReplayServer) -> None:
        self.server = server

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        reply = self.server.answer(_request(request, request.read()))
        return _response(reply, None if reply.paced is None else _Paced(reply.paced))

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        reply = self.server.answer(_request(request, await request.aread()))
        return _response(reply, None if reply.paced is None else _AsyncPaced(reply.paced))


def _request(request: httpx2.Request, body: bytes) -> Request:
    headers = {name.lower(): value for name, value in request.headers.items()}
    return Request(
        request.method, request.url.path, headers, body, request.url.query.decode("ascii", "replace")
    )


def _response(reply: Reply, stream: httpx2.SyncByteStream | httpx2.AsyncByteStream | None) -> httpx2.Response:
    headers = [("content-type", reply.content_type), *reply.headers]
    if stream is None:
        return httpx2.Response(reply.status, headers=headers, content=reply.body)
    return httpx2.Response(reply.status, headers=headers, stream=stream)


class _Paced(httpx2.SyncByteStream):
    def __init__(self, pieces: Paced) -> None:
        self._pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        for pause, piece in self._pieces:
            if pause > 0:
                time.sleep(pause)
            yield piece


class _AsyncPaced(httpx2.AsyncByteStream):
    def __init__(self, pieces: Paced) -> None:
        self._pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for piece in paced(self._pieces):
            yield piece


class RedirectTransport(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """Sends every request, path and headers unchanged, to the server at ``base_url``; only
    ``Host`` is set to that server's (``dsh serve`` refuses a foreign one: DNS rebinding)."""

    def __init__(self, base_url: str) -> None:
        url = httpx2.URL(base_url)
        self._origin = {"scheme": url.scheme, "host": url.host, "port": url.port}
        self._host = url.netloc.decode("ascii")
        self._sync = httpx2.HTTPTransport()
        self._async = httpx2.AsyncHTTPTransport()

    def _redirect(self, request: httpx2.Request) -> httpx2.Request:
        request.url = request.url.copy_with(**self._origin)
        request.headers["Host"] = self._host
        return request

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        return self._sync.handle_request(self._redirect(request))

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self._async.handle_async_request(self._redirect(request))

    def close(self) -> None:
        self._sync.close()

    async def aclose(self) -> None:
        await self._async.aclose()
