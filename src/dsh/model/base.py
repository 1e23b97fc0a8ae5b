"""The ``Model`` Protocol and the request a model call receives."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from dsh.events.attachments import Attachment
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
    parent_session: str | None = None
    """The calling session's parent (its header's ``parentSession``): set for every subagent
    child, also one started from code (``Agent.spawn`` / ``Agent.fork``) without a delegating
    tool call; ``None`` for a top-level session and for a user's branch (``store.fork``,
    ``Agent.fork(at=)``, ``dsh sessions fork``), which replays as a top-level session."""
    extra: dict[str, object] = field(default_factory=dict)
    images: Mapping[str, Attachment] = field(default_factory=dict)
    """The bytes of the image blocks in ``messages``, by attachment id (empty: the model
    takes no images, or there are none); an image missing here is sent as a text note."""


@runtime_checkable
class NamedModel(Protocol):
    """A model that knows which model id to ask for, so an agent need not be told again."""

    @property
    def model_name(self) -> str | None:
        """The model id requests use when they name none (``None``: no default)."""
        ...


@runtime_checkable
class HoldsSecrets(Protocol):
    """A model that holds secrets (its provider key): the agent scrubs them out of every
    tool and hook output (:mod:`dsh.tools.redaction`)."""

    def secret_values(self) -> tuple[str, ...]:
        """The secret values themselves (never logged: the caller only scrubs with them)."""
        ...


@runtime_checkable
class Model(Protocol):
    """A streaming model.

    The error contract (``docs/decisions/2026-12-01-model-errors.md``): ``stream`` yields
    chunks of the vocabulary in ``dsh.events.chunks`` and a failure of the *provider* (HTTP
    status, timeout, connection, malformed stream) never raises — it ends the stream with an
    error ``finish`` carrying a classified failure, so the loop logs the partial stream with
    its finish and retries by code. What raises is a failure of the *harness* around the
    model, always a :class:`~dsh.errors.DshError`: a replay that diverged or has no script
    left (``ReplayError``), an exhausted test script, and a replayed call whose recording
    itself ended in an exception (``ModelError``, reproducing the recorded stream without a
    finish). The loop settles either as ``assistant/attempt`` with the failure's code.
    Cancellation is asyncio task cancellation. ``aclose`` releases what the model holds.
    """

    @property
    def provider(self) -> str:
        """The provider name logged in the request header and assistant messages."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """The chunks of one model call for ``request``, ending in exactly one ``finish``
        unless a harness failure raises first (see the class docstring)."""
        ...

    async def aclose(self) -> None:
        """Release connections and other resources (idempotent; a no-op for the test doubles)."""
        ...
