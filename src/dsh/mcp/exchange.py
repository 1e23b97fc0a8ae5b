"""A recorded MCP exchange: the JSON-RPC messages a ``dsh mcp record`` proxy passed, as a session log.

The recording is a JSONL store (``jsonl:DIR``) holding one session per recording; each
message is an ``mcp/message {direction, message}`` event, ``toServer`` (from the client) or
``toClient`` (from the server), in the order the proxy saw them. :func:`latest_exchange`
reads the newest recording of a directory back as :class:`Exchange` — its requests each
with the response and the server notifications around it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dsh import jsonx
from dsh.errors import UsageError
from dsh.events.vocabulary import MCP_MESSAGE
from dsh.redact import Redactor
from dsh.redact.settings import settings_in
from dsh.store.url import open_store

Direction = Literal["toServer", "toClient"]


@dataclass(slots=True)
class RecordedRequest:
    """One client request of the recording, what the server answered, and its notifications."""

    method: str
    params: Any
    response: dict[str, Any] | None = None
    during: list[dict[str, Any]] = field(default_factory=list)
    """Server notifications between the request and its response (progress, logging)."""
    after: list[dict[str, Any]] = field(default_factory=list)
    """Server notifications after the response, before the client's next message."""
    consumed: bool = False

    def label(self) -> str:
        if self.method == "tools/call" and isinstance(self.params, dict):
            return f"tools/call {self.params.get('name')} {_compact(self.params.get('arguments'))}"
        return self.method


def _compact(value: Any) -> str:
    return jsonx.dumps_sorted(value)


@dataclass(slots=True)
class Exchange:
    """A recording's requests in order."""

    requests: list[RecordedRequest]
    redactor: Redactor | None = None
    """The recording's redaction rule, for the live side (``None``: recorded verbatim)."""


def exchange_of(messages: list[tuple[Direction, dict[str, Any]]]) -> Exchange:
    """The requests of a message sequence, each bound to its response by id."""
    requests: list[RecordedRequest] = []
    pending: dict[Any, RecordedRequest] = {}
    last: RecordedRequest | None = None
    for direction, message in messages:
        if direction == "toServer":
            last = None
            if "method" in message and "id" in message:
                request = RecordedRequest(str(message["method"]), message.get("params"))
                requests.append(request)
                pending[message["id"]] = request
            continue
        if "method" not in message and message.get("id") in pending:  # a response
            last = pending.pop(message["id"])
            last.response = message
        elif "method" in message and "id" not in message:  # a server notification
            if last is not None:
                last.after.append(message)
            elif pending:
                next(reversed(pending.values())).during.append(message)
    return Exchange(requests)


async def latest_exchange(directory: Path) -> Exchange:
    """The newest recording in ``directory`` (none: a one-line ``UsageError``)."""
    if not await asyncio.to_thread(directory.is_dir):
        raise UsageError(
            f"{directory}: no MCP recording here (record one with dsh mcp record DIR -- COMMAND)"
        )
    store = open_store(f"jsonl:{directory}")
    try:
        sessions = await store.list_sessions()
        if not sessions:
            raise UsageError(
                f"{directory}: no MCP recording here (record one with dsh mcp record DIR -- COMMAND)"
            )
        newest = max(sessions, key=lambda s: (s.header.created_at, s.header.id))
        loaded = await store.load(newest.header.id)
    finally:
        await store.close()
    messages: list[tuple[Direction, dict[str, Any]]] = []
    for event in loaded.events:
        data = event.data
        if event.type == MCP_MESSAGE and isinstance(data, dict) and isinstance(data.get("message"), dict):
            direction: Direction = "toServer" if data.get("direction") == "toServer" else "toClient"
            messages.append((direction, data["message"]))
    found = exchange_of(messages)
    found.redactor = await asyncio.to_thread(lambda: settings_in(directory).live())
    return found
