"""Hook test helpers: hook files in a workspace, agents over a ScriptedModel, event access."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from dsh.events import Event
from dsh.hooks import HookSet, reset_handler_ids
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel
from dsh.store import EventStore
from dsh.store.memory import MemoryEventStore
from dsh.tools.registry import builtin_registry

PYTHON = shlex.quote(sys.executable)


@pytest.fixture(autouse=True)
def _fresh_handler_ids() -> Iterator[None]:
    reset_handler_ids()
    yield
    reset_handler_ids()


def command(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "command", "command": text, **extra}


def write_hooks(cwd: Path, events: dict[str, list[dict[str, Any]]], *, name: str = "hooks.json") -> None:
    (cwd / name).write_text(json.dumps({"hooks": events}))


def python_hook(cwd: Path, name: str, body: str) -> str:
    """A Python hook script in ``cwd``; returns the command that runs it."""
    (cwd / name).write_text(body)
    return f"{PYTHON} {shlex.quote(name)}"


async def hooked_agent(
    cwd: Path, scripts: Any, *, hooks: HookSet | None = None, store: EventStore | None = None
) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(scripts)
    config = AgentConfig(model="test-model", retry=NO_DELAY, hooks=hooks if hooks is not None else HookSet())
    agent = await Agent.create(
        store or MemoryEventStore(), model=model, tools=builtin_registry(), config=config, cwd=cwd
    )
    return agent, model


def of_type(events: Sequence[Event], *types: str) -> list[Event]:
    return [e for e in events if e.type in types]


def types(agent: Agent) -> list[str]:
    return [e.type for e in agent.session.events]


def result_text(event: Event) -> str:
    return str(event.data["message"]["content"][0]["content"][0]["text"])
