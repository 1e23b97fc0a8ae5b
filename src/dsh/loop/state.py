"""The narrow views of an agent its helpers take: each helper names the state it uses.

:class:`~dsh.loop.agent.Agent` satisfies every one of these Protocols; the helpers (the
steps, titling, the sandbox mode, delegation, job notices, waking, children, repairs) import
this module, never the agent, so the agent is the only module that knows all of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, Self

from dsh.events import Event
from dsh.events.messages import Message
from dsh.loop.config import AgentConfig
from dsh.loop.feed import Feed
from dsh.loop.inbox import Inbox, Target
from dsh.loop.result import TurnResult
from dsh.model import Delegation, Model, SessionProgress
from dsh.session import Session
from dsh.store import EventStore, LoadedSession
from dsh.tools.approval import Approvals
from dsh.tools.redaction import Redaction
from dsh.tools.registry import ToolRegistry


class Appends(Protocol):
    """Appends to its session's log (and publishes the event on its feed)."""

    def append(
        self,
        type: str,
        data: Any,
        *,
        source_event_seqs: Sequence[int] | None = None,
        time: int | None = None,
    ) -> Event:
        """Append an event to the session (published on its feed); the event as logged."""
        ...


class ApprovalLog(Appends, Protocol):
    """A session whose approval policy can be logged (a delegated child's setup)."""

    @property
    def approvals(self) -> Approvals:
        """The session's approval service."""
        ...


class SessionState(Appends, Protocol):
    """A session's id, log and configuration, and its checkpoint."""

    @property
    def id(self) -> str:
        """The session id."""
        ...

    @property
    def session(self) -> Session:
        """The session's in-memory log."""
        ...

    @property
    def config(self) -> AgentConfig:
        """The agent's configuration."""
        ...

    async def checkpoint(self) -> None:
        """Flush every appended event to the store, durably."""
        ...


class FedState(SessionState, Protocol):
    """A session with the feed its events are published on."""

    @property
    def feed(self) -> Feed:
        """The live feed the session's events and chunks are published on."""
        ...


class DelegatedState(SessionState, Protocol):
    """A session that may be a delegated child, with its approvals."""

    @property
    def delegation(self) -> Delegation | None:
        """Who delegated this session (``None``: a top-level session or a child started from code)."""
        ...

    @property
    def approvals(self) -> Approvals:
        """The session's approval service."""
        ...


class ModeState(DelegatedState, Protocol):
    """A session whose file policy can be switched (its configuration replaced)."""

    config: AgentConfig  # writable here: the switch replaces it


class RequestHook(Protocol):
    """Told before each model request (the session's titling)."""

    def on_request(self) -> None:
        """A model request is about to be sent."""
        ...


class TurnState(DelegatedState, Protocol):
    """What the steps of a turn use: the model, tools, store, inbox, workspace and feed."""

    @property
    def feed(self) -> Feed:
        """The live feed the session's events and chunks are published on."""
        ...

    @property
    def store(self) -> EventStore:
        """The store the session lives in."""
        ...

    @property
    def model(self) -> Model:
        """The model the session asks."""
        ...

    @property
    def tools(self) -> ToolRegistry:
        """The session's tool registry."""
        ...

    @property
    def inbox(self) -> Inbox:
        """Messages other sessions and jobs queued for the session."""
        ...

    @property
    def cwd(self) -> Path:
        """The session's workspace."""
        ...

    @property
    def redaction(self) -> Redaction:
        """The secrets scrubbed out of the session's tool and hook outputs."""
        ...

    @property
    def titling(self) -> RequestHook:
        """The session's titling, told before each request."""
        ...

    def replace_surface(self, start: int, end: int, message: Message, sources: Sequence[int]) -> Event:
        """Append ``message`` replacing the surface nodes ``start..end`` (citing ``sources``)."""
        ...


class IdleState(Protocol):
    """An agent as its activation sees it when its woken turns run out of work."""

    @property
    def id(self) -> str:
        """The session id."""
        ...

    @property
    def session(self) -> Session:
        """The session's in-memory log."""
        ...


class Activation(Protocol):
    """Told when an agent's woken turns run out of work (a continuable child's settlement)."""

    async def before_idle(self, agent: IdleState) -> None:
        """Awaited first; work queued meanwhile keeps the agent running instead."""

    def on_idle(self, agent: IdleState, last: TurnResult) -> None:
        """The agent is idle; ``last`` is how its last turn ended."""


class WakeState(IdleState, Protocol):
    """What the waker of woken turns reads: the inbox and the activation."""

    @property
    def inbox(self) -> Inbox:
        """Messages other sessions and jobs queued for the session."""
        ...

    @property
    def activation(self) -> Activation | None:
        """Told when woken turns run out of work (``None``: nobody)."""
        ...


class NoticeState(SessionState, Protocol):
    """What a session's background-job notices use: delivery, its model and its state."""

    @property
    def model(self) -> Model:
        """The model the session asks."""
        ...

    @property
    def redaction(self) -> Redaction:
        """The secrets scrubbed out of the session's tool and hook outputs."""
        ...

    @property
    def closed(self) -> bool:
        """Whether the agent was closed."""
        ...

    @property
    def busy(self) -> bool:
        """A turn is running or about to run."""
        ...

    def progress(self) -> SessionProgress:
        """Steps started and turns ended in the session's own log so far."""
        ...

    def deliver(self, message: Message, target: Target, *, wake: bool = False) -> None:
        """Queue ``message`` for the session (logged); ``wake``: run a turn for it."""
        ...


class ParentState(Protocol):
    """A session that starts children of its own class (``Agent.fork`` / ``spawn``)."""

    @property
    def id(self) -> str:
        """The session id."""
        ...

    @property
    def session(self) -> Session:
        """The session's in-memory log."""
        ...

    @property
    def store(self) -> EventStore:
        """The store the session lives in."""
        ...

    @property
    def model(self) -> Model:
        """The model the session asks."""
        ...

    @property
    def tools(self) -> ToolRegistry:
        """The session's tool registry."""
        ...

    @property
    def config(self) -> AgentConfig:
        """The agent's configuration."""
        ...

    @property
    def feed(self) -> Feed:
        """The live feed the session's events and chunks are published on."""
        ...

    @property
    def extras(self) -> Mapping[str, Any]:
        """Free-form data of the composition root, handed to children."""
        ...

    @classmethod
    def attach(
        cls,
        loaded: LoadedSession,
        *,
        store: EventStore,
        model: Model,
        tools: ToolRegistry,
        config: AgentConfig,
        feed: Feed | None = None,
        delegation: Delegation | None = None,
        extras: Mapping[str, Any] | None = None,
    ) -> Self:
        """An agent of this class over a session already stored exactly as ``loaded``."""
        ...
