"""The ``Tool`` Protocol, the context a call runs in, and what it returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

from dsh.events import Event, SessionHeader
from dsh.events.messages import Block, text_block
from dsh.tools.approval import Approvals
from dsh.tools.observations import FileObservations
from dsh.tools.sandbox import SandboxPolicy

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
"""What a tool does, as an ACP client shows it (the ACP ``ToolKind`` values)."""


class TurnOutcome(Protocol):
    """How a turn an :class:`AgentHandle` ran ended (``dsh.loop.TurnResult`` is one)."""

    @property
    def reason(self) -> Mapping[str, Any]:
        """The ``turn/end`` reason: ``{"kind": "completed" | "max-tokens" | "blocked" | "error" | ...}``."""
        ...

    @property
    def text(self) -> str:
        """The turn's final assistant text."""
        ...


class AgentHandle(Protocol):
    """The agent a tool call runs in (``ToolContext.agent``), as far as a tool may use it.

    ``dsh.loop.Agent`` is the implementation; the delegation tools use it to start children.
    """

    @property
    def id(self) -> str:
        """The session id."""
        ...

    @property
    def header(self) -> SessionHeader:
        """The session's header (its delegation depth, parent, agent preset)."""
        ...

    @property
    def own_events(self) -> Sequence[Event]:
        """The session's own events: everything after its inherited prefix."""
        ...

    async def spawn(self, *, call_id: str | None = None) -> AgentHandle:
        """A stored, empty child session's agent (``call_id``: the tool call that delegates)."""
        ...

    async def fork(self, *, call_id: str | None = None) -> AgentHandle:
        """A stored child holding this session's completed turns, its cut persisted."""
        ...

    async def run_turn(
        self, prompt: str, *, preamble: Sequence[tuple[str, dict[str, Any]]] = ()
    ) -> TurnOutcome:
        """Run one turn; ``preamble`` events are appended right after ``turn/start``."""
        ...


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Where and for whom a tool call runs.

    ``files`` is the session's :class:`FileObservations` (the agent passes the same object
    to every call of its session). ``readable_roots`` are directories outside the workspace
    that ``read`` may still open (the registry adds its spill root). ``sandbox`` is the
    session's file policy (``None``: no policy, nothing fenced or confined); ``approvals`` the
    session's approval service (``None``: none composed, so an escalation cannot be asked).
    ``agent`` is the agent running the call (``None`` when a tool runs outside an agent, e.g.
    in a unit test); ``extras`` is free-form data the composition root gave the agent.
    """

    session_id: str
    call_id: str
    cwd: Path
    turn: int = 0
    step: int = 0
    allow_outside_workspace: bool = False
    extras: dict[str, Any] = field(default_factory=dict)
    files: FileObservations = field(default_factory=FileObservations)
    readable_roots: tuple[Path, ...] = ()
    sandbox: SandboxPolicy | None = None
    approvals: Approvals | None = None
    agent: AgentHandle | None = None


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A tool's result: content blocks, whether it is an error, and an optional code.

    ``code`` (errors only) is logged as ``tool/result.error``; ``None`` means a plain error
    without one. ``meta`` is optional structured detail for the log and UIs (the original
    logs it as ``tool/result.meta``); it must be JSON and is never shown to the model.
    """

    content: list[Block]
    is_error: bool = False
    code: str | None = None
    meta: dict[str, Any] | None = None

    @classmethod
    def text(cls, text: str, *, meta: dict[str, Any] | None = None) -> ToolOutput:
        return cls([text_block(text if text else "(no output)")], meta=meta)

    @classmethod
    def error(
        cls, message: str, code: str | None = "TOOL_ERROR", *, meta: dict[str, Any] | None = None
    ) -> ToolOutput:
        text = message if message.startswith("Error:") else f"Error: {message}"
        return cls([text_block(text)], is_error=True, code=code or None, meta=meta)


@runtime_checkable
class Tool(Protocol):
    """A model-callable tool. ``args_model`` validates arguments and gives the schema."""

    @property
    def name(self) -> str:
        """The name the model calls it by (1-64 letters, digits, ``_`` or ``-``)."""
        ...

    @property
    def description(self) -> str:
        """What the model reads about the tool."""
        ...

    @property
    def args_model(self) -> type[BaseModel]:
        """The pydantic model the arguments validate against; its schema is the tool's ``parameters``."""
        ...

    def is_concurrency_safe(self, args: BaseModel) -> bool:
        """Whether this call may run alongside the other calls of the same model message."""
        ...

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        """Run the call; a raised exception becomes an ``Error: ...`` result (the registry's rule)."""
        ...
