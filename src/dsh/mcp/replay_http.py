"""``dsh mcp replay DIR --http PORT``: the recording served to Streamable HTTP clients.

One endpoint, ``http://127.0.0.1:PORT/mcp``: a POSTed JSON-RPC message (or batch) is
answered by :class:`~dsh.mcp.replay.ExchangeReplayer` — one response as
``application/json``, a response with notifications around it as a ``text/event-stream``,
a notification or response from the client as ``202 Accepted``. No SSE stream is offered
for GET (``405``, which the protocol allows), and ``DELETE`` ends nothing (``200``). Only
loopback is bound. The server runs until SIGINT/SIGTERM; then the report is returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dsh.jsonx import JSONDecodeError, dumps, loads
from dsh.mcp.exchange import latest_exchange
from dsh.mcp.replay import ExchangeReplayer, ReplayReport


def _stream(messages: list[dict[str, Any]]) -> Response:
    body = b"".join(b"event: message\ndata: " + dumps(m) + b"\n\n" for m in messages)
    return Response(body, media_type="text/event-stream")


def replay_app(replayer: ExchangeReplayer) -> Starlette:
    """The Starlette app answering ``/mcp`` from ``replayer``."""

    async def endpoint(request: Request) -> Response:
        if request.method == "GET":
            return Response(status_code=405, headers={"Allow": "POST, DELETE"})
        if request.method == "DELETE":
            return Response(status_code=200)
        try:
            payload: Any = loads(await request.body())
        except JSONDecodeError:
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
            return JSONResponse(error, status_code=400)
        messages = payload if isinstance(payload, list) else [payload]
        answers = [a for m in messages if isinstance(m, dict) for a in replayer.handle(m)]
        if not answers:
            return Response(status_code=202)
        if len(answers) == 1 and not isinstance(payload, list):
            return Response(dumps(answers[0]), media_type="application/json")
        return _stream(answers)

    return Starlette(routes=[Route("/mcp", endpoint, methods=["GET", "POST", "DELETE"])])


class _Server(uvicorn.Server):
    """uvicorn's server, stopped by SIGINT/SIGTERM without raising the signal again after
    shutdown (uvicorn does, which would lose the report)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.handle_exit, sig, None)
        try:
            yield
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)


async def serve_replay_http(directory: Path, port: int) -> ReplayReport:
    """Serve the newest recording in ``directory`` on ``127.0.0.1:port`` until stopped."""
    replayer = ExchangeReplayer(await latest_exchange(directory))
    config = uvicorn.Config(replay_app(replayer), host="127.0.0.1", port=port, log_level="warning")
    await _Server(config).serve()
    return replayer.finish()
