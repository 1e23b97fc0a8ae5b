"""The viewer's ``Host`` / ``Origin`` check as ASGI middleware (the rule is :mod:`dsh.hosts`').

A refused request gets the status (400, 421 or 403) and a one-line plain-text body, and
the viewer logs one line; nothing else runs for it (the store is never read).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from dsh.hosts import HostPolicy, Refusal
from dsh.http1 import Log, stderr_log

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class HostGuard:
    """Answers only requests whose ``Host`` and ``Origin`` ``policy`` accepts."""

    def __init__(self, app: App, policy: HostPolicy, log: Log = stderr_log) -> None:
        self.app = app
        self.policy = policy
        self.log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        hosts = 0
        for raw_name, raw_value in scope.get("headers", ()):
            name = raw_name.decode("latin-1").lower()
            hosts += name == "host"
            headers[name] = raw_value.decode("latin-1")
        refused = Refusal(400, "more than one Host header") if hosts > 1 else self.policy.check(headers)
        if refused is None:
            await self.app(scope, receive, send)
            return
        client = scope.get("client") or ("?", 0)
        path = str(scope.get("path", ""))[:100]
        self.log(f"dsh ui: refused {refused.status} {path} from {client[0]}:{client[1]}: {refused.message}")
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = f"dsh ui: {refused.message}\n".encode()
        await send({"type": "http.response.start", "status": refused.status, "headers": [
            (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
            (b"x-content-type-options", b"nosniff"), (b"connection", b"close"),
        ]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})
