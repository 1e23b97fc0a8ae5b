"""The ``Model`` Protocol and the request a model call receives."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from dsh.events.chunks import Chunk
from dsh.events.messages import Message, ToolSpec


@dataclass(frozen=True, slots=True)
class Delegation:
    """Who started a child session: the parent session and the tool call id."""

    parent_session: str
    call_id: str


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call needs; derivable from the calling session's log."""

    session_id: str
    model: str
    messages: Sequence[Message]
    system: str | None = None
    tools: Sequence[ToolSpec] = ()
    max_tokens: int | None = None
    delegation: Delegation | None = None
    extra: dict[str, object] = field(default_factory=dict)


@runtime_checkable
class NamedModel(Protocol):
    """A model that knows which model id to ask for, so an agent need not be told again."""

    @property
    def model_name(self) -> str | None:
        """The model id requests use when they name none (``None``: no default)."""
        ...


@runtime_checkable
class Model(Protocol):
    """A streaming model.

    ``stream`` yields chunks of the vocabulary in ``dsh.events.chunks``. It never raises
    for a provider failure: it ends the stream with an error ``finish`` carrying a
    classified failure. Cancellation is asyncio task cancellation.
    """

    @property
    def provider(self) -> str:
        """The provider name logged in the request header and assistant messages."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """The chunks of one model call for ``request``, ending in exactly one ``finish``."""
        ...
