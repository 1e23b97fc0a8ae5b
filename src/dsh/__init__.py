"""dsh: durable, forkable agent sessions and keyless, deterministic replay of real runs.

The public API in one import: ``from dsh import Agent, OpenAICompatModel, open_store, tool``.
Names are loaded on first use (PEP 562), so ``import dsh`` itself imports only :mod:`dsh.lazy`;
each name's home module is in :data:`_HOMES`.
"""

from __future__ import annotations

from dsh.lazy import exports

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: ``import dsh`` stays free of ``typing``

__version__ = "0.1.0"
"""The one home of dsh's version: the build reads it (``pyproject.toml``, ``[tool.setuptools.dynamic]``)."""

_HOMES: dict[str, str] = {
    # agents and turns
    "Agent": "dsh.subagents.agent",
    "AgentConfig": "dsh.loop",
    "TurnResult": "dsh.loop",
    "Feed": "dsh.loop",
    "RetryPolicy": "dsh.loop",
    "NO_DELAY": "dsh.loop",
    "run_sync": "dsh.loop",
    # streamed events
    "StreamEvent": "dsh.loop",
    "TextDelta": "dsh.loop",
    "ReasoningDelta": "dsh.loop",
    "ToolCallStarted": "dsh.loop",
    "ToolCallFinished": "dsh.loop",
    "ChildStarted": "dsh.loop",
    "ChildFinished": "dsh.loop",
    "TurnFinished": "dsh.loop",
    # tools
    "tool": "dsh.tools.function",
    "FunctionTool": "dsh.tools.function",
    "Tool": "dsh.tools",
    "ToolArgs": "dsh.tools",
    "ToolContext": "dsh.tools",
    "ToolLike": "dsh.tools",
    "ToolOutput": "dsh.tools",
    "ToolRegistry": "dsh.tools",
    "AgentHandle": "dsh.tools.base",
    "standard_tools": "dsh.subagents",
    "Image": "dsh.tools.images",
    # models
    "Model": "dsh.model",
    "ModelRequest": "dsh.model",
    "OpenAICompatModel": "dsh.model.openai_compat",
    "ScriptedModel": "dsh.model.scripted",
    # stores and logs
    "open_store": "dsh.store.url",
    "EventStore": "dsh.store",
    "LoadedSession": "dsh.store",
    "MemoryEventStore": "dsh.store.memory",
    "SqliteEventStore": "dsh.store.sqlite",
    "JsonlEventStore": "dsh.store.jsonl",
    "Event": "dsh.events",
    "SessionHeader": "dsh.events",
    # errors
    "DshError": "dsh.errors",
}

__all__ = [
    "NO_DELAY",
    "Agent",
    "AgentConfig",
    "AgentHandle",
    "ChildFinished",
    "ChildStarted",
    "DshError",
    "Event",
    "EventStore",
    "Feed",
    "FunctionTool",
    "Image",
    "JsonlEventStore",
    "LoadedSession",
    "MemoryEventStore",
    "Model",
    "ModelRequest",
    "OpenAICompatModel",
    "ReasoningDelta",
    "RetryPolicy",
    "ScriptedModel",
    "SessionHeader",
    "SqliteEventStore",
    "StreamEvent",
    "TextDelta",
    "Tool",
    "ToolArgs",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolContext",
    "ToolLike",
    "ToolOutput",
    "ToolRegistry",
    "TurnFinished",
    "TurnResult",
    "__version__",
    "open_store",
    "run_sync",
    "standard_tools",
    "tool",
]


__getattr__, __dir__ = exports(__name__, _HOMES)


if TYPE_CHECKING:
    from dsh.errors import DshError
    from dsh.events import Event, SessionHeader
    from dsh.loop import (
        NO_DELAY,
        AgentConfig,
        ChildFinished,
        ChildStarted,
        Feed,
        ReasoningDelta,
        RetryPolicy,
        StreamEvent,
        TextDelta,
        ToolCallFinished,
        ToolCallStarted,
        TurnFinished,
        TurnResult,
        run_sync,
    )
    from dsh.model import Model, ModelRequest
    from dsh.model.openai_compat import OpenAICompatModel
    from dsh.model.scripted import ScriptedModel
    from dsh.store import EventStore, LoadedSession
    from dsh.store.jsonl import JsonlEventStore
    from dsh.store.memory import MemoryEventStore
    from dsh.store.sqlite import SqliteEventStore
    from dsh.store.url import open_store
    from dsh.subagents import standard_tools
    from dsh.subagents.agent import Agent
    from dsh.tools import Tool, ToolArgs, ToolContext, ToolLike, ToolOutput, ToolRegistry
    from dsh.tools.base import AgentHandle
    from dsh.tools.function import FunctionTool, tool
    from dsh.tools.images import Image
