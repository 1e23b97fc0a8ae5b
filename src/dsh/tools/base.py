"""The tool seam: the typed ``Tool[A]`` base, the ``ToolLike`` Protocol the registry runs,
the context a call runs in, what it returns, and how an ACP client shows a call."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from dsh.errors import ToolInputError
from dsh.events import Event, SessionHeader
from dsh.events.attachments import AttachmentStore
from dsh.events.messages import Block, text_block
from dsh.events.payloads import TurnEndReason
from dsh.tools.approval import Approvals
from dsh.tools.jobs import JobTable
from dsh.tools.observations import FileObservations
from dsh.tools.redaction import NO_REDACTION, Redaction
from dsh.tools.sandbox import SandboxPolicy

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
"""What a tool does, as an ACP client shows it (the ACP ``ToolKind`` values)."""

A = TypeVar("A", bound=BaseModel)
"""A tool's arguments: its pydantic ``args_model``."""


class TurnOutcome(Protocol):
    """How a turn an :class:`AgentHandle` ran ended (``dsh.loop.TurnResult`` is one)."""

    @property
    def reason(self) -> TurnEndReason:
        """The ``turn/end`` reason: ``{"kind": "completed" | "max-tokens" | "blocked" | "error" | ...}``."""
        ...

    @property
    def text(self) -> str:
        """The turn's final assistant text."""
        ...


class AgentHandle(Protocol):
    """The agent a tool call runs in (``ToolContext.agent``), as far as a tool may use it.

    ``dsh.loop.Agent`` is the implementation; the delegation tools (``subagent``,
    ``subagent_fork``) start, set up and run a waited-for child through it alone.
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

    @property
    def events(self) -> Sequence[Event]:
        """The session's whole log: a fork's inherited prefix, then its own events."""
        ...

    @property
    def sandbox(self) -> SandboxPolicy | None:
        """The session's file policy (``None``: none), which a delegated child is given."""
        ...

    @property
    def approvals(self) -> Approvals:
        """The session's approval service (a delegated child's policy is logged through it)."""
        ...

    def append(
        self,
        type: str,
        data: Any,
        *,
        source_event_seqs: Sequence[int] | None = None,
        time: int | None = None,
    ) -> Event:
        """Append an event to the session's log."""
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
    ``jobs`` is the session's background jobs (``None``: none can be started).
    ``redaction`` holds the secret values the agent knows (its provider key): the registry
    scrubs them out of the call's result before it is logged, spilled or sent.
    ``jobs`` is the session's background jobs (``None``: none can be started). ``log``
    appends an event to the session's log between the call's ``tool/call`` and its
    ``tool/result`` (``todo_write``'s ``todo/write``; ``None``: no owning session).
    ``attachments`` is where images are stored (the session's store; ``None``: nowhere, so
    ``read_image`` refuses); ``model`` the model the session asks and ``image_input``
    whether it takes images.
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
    jobs: JobTable | None = None
    redaction: Redaction = NO_REDACTION
    log: Callable[[str, Any], Event] | None = None
    attachments: AttachmentStore | None = None
    model: str = ""
    image_input: bool = False


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

    def redacted(self, redaction: Redaction) -> ToolOutput:
        """This result with ``redaction``'s secrets scrubbed from its content and meta."""
        if not redaction:
            return self
        meta = None if self.meta is None else redaction.data(self.meta)
        return ToolOutput(redaction.blocks(self.content), self.is_error, self.code, meta)

    @classmethod
    def error(
        cls, message: str, code: str | None = "TOOL_ERROR", *, meta: dict[str, Any] | None = None
    ) -> ToolOutput:
        text = message if message.startswith("Error:") else f"Error: {message}"
        return cls([text_block(text)], is_error=True, code=code or None, meta=meta)


@runtime_checkable
class ToolLike(Protocol):
    """What the registry runs: anything with these five members is a tool (structurally).

    :class:`Tool` is the typed base class most tools subclass; it adds how an ACP client
    shows a call (:meth:`Tool.acp_kind`, :meth:`Tool.acp_title`, :meth:`Tool.acp_locations`).
    """

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


@dataclass(frozen=True, slots=True)
class ToolLocation:
    """A file a call touches, as the model wrote it (``line``: 1-based, when known)."""

    path: str
    line: int | None = None


class Tool(ABC, Generic[A]):
    """A model-callable tool whose arguments are the pydantic model ``A``.

    Set ``name``, ``description`` and ``args_model`` (class attributes or properties) and
    write :meth:`call`; :meth:`run` checks the arguments are an ``args_model`` before calling
    it. ``concurrency_safe`` lets calls of it in one model message run in parallel.
    ``acp_kind`` and :meth:`acp_title` / :meth:`acp_locations` are how an ACP client shows a
    call; they read the arguments as the model sent them (not validated: a title must show
    even for a call that fails validation).
    """

    concurrency_safe: bool = False
    reruns_in_replay: bool = True
    """Whether a keyless replay can run the tool again (``False``: its result depends on the
    world outside the workspace, so a replay serves the recorded one; ``dsh.tools.served``)."""
    acp_kind: ToolKind = "other"
    """What the tool does, as an ACP client shows it (``read``, ``edit``, ``execute``, ...)."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The name the model calls it by (1-64 letters, digits, ``_`` or ``-``)."""

    @property
    @abstractmethod
    def description(self) -> str:
        """What the model reads about the tool."""

    @property
    @abstractmethod
    def args_model(self) -> type[A]:
        """The pydantic model the arguments validate against; its schema is the tool's ``parameters``."""

    def acp_title(self, args: Mapping[str, Any]) -> str | None:
        """A short human title for a call with these raw arguments (``None``: the tool's name)."""
        return None

    def acp_locations(self, args: Mapping[str, Any]) -> Sequence[ToolLocation]:
        """The files a call with these raw arguments touches (default: none)."""
        return ()

    def is_concurrency_safe(self, args: BaseModel) -> bool:
        return self.concurrency_safe

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        model = self.args_model
        if not isinstance(args, model):
            raise ToolInputError(
                f"tool {self.name!r} expects {model.__name__} arguments, got {type(args).__name__}"
            )
        return await self.call(args, ctx)

    @abstractmethod
    async def call(self, args: A, ctx: ToolContext) -> ToolOutput:
        """The tool body, with validated arguments."""


@dataclass(frozen=True, slots=True)
class ToolPresentation:
    """How an ACP client shows one call: its kind, a title (``None``: the tool's name), the
    files it touches."""

    kind: ToolKind
    title: str | None = None
    locations: tuple[ToolLocation, ...] = ()


def present(tool: ToolLike | None, args: Mapping[str, Any]) -> ToolPresentation:
    """The one rule: a :class:`Tool` says how its calls look; any other (or none) is ``other``."""
    if not isinstance(tool, Tool):
        return ToolPresentation("other")
    return ToolPresentation(tool.acp_kind, tool.acp_title(args) or None, tuple(tool.acp_locations(args)))


def arg_text(args: Mapping[str, Any], key: str) -> str:
    """A raw argument that is a string (``""`` when missing or not a string), for titles."""
    value = args.get(key)
    return value if isinstance(value, str) else ""
