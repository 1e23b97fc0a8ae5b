"""The root facade: ``from dsh import ...`` with a pinned ``__all__``, loaded lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest

import dsh

PUBLIC = [
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


def test_all_is_pinned_and_every_name_resolves() -> None:
    assert dsh.__all__ == PUBLIC
    for name in PUBLIC:
        assert getattr(dsh, name) is not None, name
    assert set(PUBLIC) <= set(dir(dsh))


def test_the_names_are_the_home_modules_objects() -> None:
    from dsh.loop.agent import Agent as LoopAgent
    from dsh.store.url import open_store
    from dsh.subagents.agent import Agent
    from dsh.tools.function import tool

    assert dsh.Agent is Agent and dsh.open_store is open_store and dsh.tool is tool
    assert issubclass(dsh.Agent, LoopAgent)  # the loop's agent with the delegation tools


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Agnet'"):
        _ = dsh.Agnet


def test_import_dsh_loads_only_the_lazy_exports_rule_and_no_dependency() -> None:
    code = (
        "import sys, dsh\n"
        "deps = ('dsh.', 'openai', 'pydantic', 'orjson', 'typing')\n"
        "heavy = [m for m in sys.modules if m.startswith(deps)]\n"
        "print(','.join(sorted(heavy)))\n"
        "from dsh import Agent\n"
        "print('dsh.loop.agent' in sys.modules, 'openai' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0] == "dsh.lazy"
    assert lines[1] == "True False"  # the agent does not need the openai SDK until a model is built
