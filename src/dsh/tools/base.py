"""The ``Tool`` Protocol, the context a call runs in, and what it returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from dsh.events.messages import Block, text_block
from dsh.tools.approval import Approvals
from dsh.tools.observations import FileObservations
from dsh.tools.sandbox import SandboxPolicy


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Where and for whom a tool call runs.

    ``files`` is the session's :class:`FileObservations` (the agent passes the same object
    to every call of its session). ``readable_roots`` are directories outside the workspace
    that ``read`` may still open (the registry adds its spill root). ``sandbox`` is the
    session's file policy (``None``: no policy, nothing fenced or confined); ``approvals`` the
    session's approval service (``None``: none composed, so an escalation cannot be asked).
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
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def args_model(self) -> type[BaseModel]: ...

    def is_concurrency_safe(self, args: BaseModel) -> bool: ...

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput: ...
