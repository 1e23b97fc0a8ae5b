"""The dialect seam: what ``dsh serve`` needs of one wire protocol, as a typed Protocol.

Record and replay are written once over :class:`Dialect`; each protocol (Chat Completions,
the OpenAI Responses API, the Anthropic Messages API) is one module that owns its request
parse (a body → dsh's :class:`~dsh.model.ModelRequest`), its reply recorder (upstream bytes
→ :class:`~dsh.serve.calls.Settled`), its replayed answer (recorded events → bytes) and its
error shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from dsh.events.messages import Message
from dsh.model import ModelRequest
from dsh.model.sse import SseEvent
from dsh.serve.calls import RecordedReply, Settled
from dsh.serve.http import Reply

Chain = Mapping[str, Sequence[Message]]
"""Server-side conversation state: a reply's id → the whole history after it (Responses'
``previous_response_id``; the same ids in record and replay, since replay sends the recorded
ones)."""


@dataclass(frozen=True, slots=True)
class Parsed:
    """A request body read in one dialect."""

    request: ModelRequest
    streamed: bool
    checked: dict[str, Any] = field(default_factory=dict)
    """The dialect's own fields the check compares besides the header (``tool_choice``)."""
    state: object | None = None
    """What the next read of the same session may reuse (Chat Completions' equal prefix)."""
    missing: str | None = None
    """A ``previous_response_id`` the chain does not know (its history is then incomplete)."""


@dataclass(frozen=True, slots=True)
class NotThisDialect:
    """A body that is not this dialect's (one line saying which it looks like)."""

    message: str


@dataclass(frozen=True, slots=True)
class Call:
    """One recorded call a replay answers: the parsed request and what was recorded."""

    parsed: Parsed
    body: Mapping[str, Any]
    recorded: RecordedReply
    chunks: Sequence[Mapping[str, Any]]
    failure: tuple[str, str] | None
    """The recorded failure's code and message (``None``: it settled)."""
    reply_id: str
    """An id for a rebuilt reply (Chat Completions: ``chatcmpl-dsh-<session>-<n>``)."""


class CallRecorder(Protocol):
    """Turns one upstream reply into :class:`Settled` as its bytes go by."""

    def event(self, sse: SseEvent) -> None:
        """One SSE event of a streamed reply."""
        ...

    def whole(self, raw: bytes) -> None:
        """A whole (not streamed) 200 JSON body."""
        ...

    def settle(self) -> Settled:
        """What the call produced (a stream cut before its end: ``STREAM_CLOSED``)."""
        ...


class Dialect(Protocol):
    """One wire protocol ``dsh serve`` records and replays."""

    name: str
    """As noted in a recording (``request/header`` ``config.dialect``; ``chat`` is not noted)."""
    paths: frozenset[str]
    """The request paths it answers (``/v1/...`` and without the ``/v1``)."""
    upstream_path: str
    """Where ``record`` forwards it, under the upstream URL (``/responses``)."""
    forwarded: tuple[str, ...]
    """The client headers ``record`` passes on (lower-case; auth is never stored)."""

    def shape(self, message: str, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Its error document (what the SDK's error classes read)."""
        ...

    def read(self, body: Mapping[str, Any], previous: Parsed | None, chain: Chain) -> Parsed | NotThisDialect:
        """The body as a dsh request (``previous``: the same session's last read)."""
        ...

    def recorder(self) -> CallRecorder:
        """A fresh recorder for one upstream reply."""
        ...

    def visible(self, reply: Message) -> Message:
        """A recorded reply as the client's next request will show it (continuity, chains)."""
        ...

    def answer(self, call: Call, speed: float) -> Reply:
        """The recorded reply to one call (``speed`` 0: at once; N: the recorded gaps / N)."""
        ...
