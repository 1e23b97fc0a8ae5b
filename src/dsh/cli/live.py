"""One live agent for ``dsh run`` and ``dsh chat``: options → provider, tools, session; a turn with Ctrl-C.

Which session: ``--resume ID`` (a unique prefix works; a subagent's session is refused with
one line naming its parent), ``--continue`` (the top-level session of this workspace with the
latest activity; never a child), else a new one in the workspace. A
resumed session keeps the workspace it was recorded in: an explicit ``--cwd`` naming
another directory is refused with one line.
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dsh.cli.questions import asker_for
from dsh.cli.resolve import resolve_id
from dsh.context import WorkspaceConfig
from dsh.context.questions import QuestionAsker
from dsh.errors import UsageError
from dsh.events.messages import Message
from dsh.hooks import HookSet
from dsh.loop import Agent, AgentConfig, CompactionPolicy, Feed, TurnResult
from dsh.loop.config import DEFAULT_SYSTEM_PROMPT
from dsh.loop.workspace_checkpoints import TurnCheckpoints
from dsh.mcp.config import McpServerSpec
from dsh.model.settings import resolve_provider
from dsh.store.base import EventStore
from dsh.store.newest import latest_top_level
from dsh.store.notices import warnings_to
from dsh.store.url import open_store
from dsh.subagents import live_tools
from dsh.tools.approval import Approver
from dsh.tools.registry import ToolRegistry
from dsh.tools.sandbox import SandboxPolicy

if TYPE_CHECKING:
    from dsh.model.openai_compat import OpenAICompatModel


@dataclass(frozen=True, slots=True)
class LiveSetup:
    """What the command line says about the agent to run."""

    store_url: str | None
    workspace: Path
    cwd_given: bool
    resume: str | None
    continue_last: bool
    wait: float
    sandbox: SandboxPolicy
    approver: Approver | None = None
    questions: QuestionAsker | None = None
    """Who answers ``ask_user_question`` (``None``: the terminal when stdin is one, else nobody)."""
    """Who answers approval requests (``--approve`` / ``--deny`` / the terminal / nobody)."""
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    system: str | None = None
    """The system prompt (``None``: dsh's default)."""
    tools: tuple[str, ...] | None = None
    """The tools to offer (``None``: every standard tool; empty: none)."""
    max_steps: int | None = None
    context_window: int | None = None
    """``--context-window``: the model's window in tokens (``None``: known or logged)."""
    background_wait: float = 30.0
    """At exit: how long background subagents still running may finish before they are stopped."""
    mcp_servers: tuple[McpServerSpec, ...] = ()
    """The workspace's ``.mcp.json`` servers and those of each ``--mcp-config FILE``."""


def select_tools(names: tuple[str, ...] | None) -> ToolRegistry:
    """The standard tools, or only ``names`` of them (an unknown name is a one-line error)."""
    every = live_tools()
    if names is None:
        return every
    unknown = [n for n in names if n not in every]
    if unknown:
        raise UsageError(
            f"--tools: unknown tool {', '.join(unknown)} (available: {', '.join(every.names())})"
        )
    chosen = [tool for n in dict.fromkeys(names) if (tool := every.get(n)) is not None]
    return ToolRegistry(chosen, spill=every.spill)


async def _target(store: EventStore, setup: LiveSetup) -> str | None:
    """The id of the session to resume, or ``None`` for a new one; checks ``--cwd`` against it."""
    if setup.resume is not None:
        sid = await resolve_id(store, setup.resume)
    elif setup.continue_last:
        found = await latest_top_level(store, str(setup.workspace))
        if found is None:
            raise UsageError(f"--continue: no session to continue in {setup.workspace} (run one first)")
        sid = found
    else:
        return None
    with warnings_to(lambda _message: None):  # the resume itself says what is wrong, once
        header = await store.header(sid)
    if header.is_subagent:  # --continue never finds one: it takes top-level sessions only
        raise UsageError(
            f"session {sid} is a subagent of session {header.parent_session}: it is not resumed "
            "as a top-level session (continue it from its parent with send_message, or through "
            "the library)"
        )
    if not setup.cwd_given:
        return sid
    recorded = header.cwd
    if recorded is not None and Path(recorded) != setup.workspace:
        raise UsageError(
            f"session {sid} was recorded in {recorded}, not in --cwd {setup.workspace} "
            "(a resumed session keeps its workspace: drop --cwd)"
        )
    return sid


@asynccontextmanager
async def live_agent(setup: LiveSetup, feed: Feed) -> AsyncIterator[Agent]:
    """The agent the setup names, over a fresh store and model client, closed afterwards."""
    if setup.model is not None and not setup.model.strip():
        raise UsageError("--model must not be empty")
    settings = resolve_provider(api_key=setup.api_key, base_url=setup.base_url, model=setup.model)
    store = open_store(setup.store_url)
    model: OpenAICompatModel | None = None
    try:
        tools = select_tools(setup.tools)
        sid = await _target(store, setup)  # refusals (unknown id, a child, --cwd) come first
        # Opened only now: the SDK costs ~1 s that every other command, and every refusal, skips.
        model = settings.open_model()  # the key scrubbed out of /proc/<dsh>/environ and cmdline
        config = AgentConfig(
            model=settings.model,
            system=DEFAULT_SYSTEM_PROMPT if setup.system is None else setup.system,
            hooks=HookSet.from_environment(),
            sandbox=setup.sandbox,
            approver=setup.approver,
            workspace=WorkspaceConfig.from_env(),
            titles=True,
            questions=setup.questions or asker_for(),
            mcp_servers=setup.mcp_servers,
            mcp_notice=lambda line: typer.echo(line, err=True),
        )
        if setup.max_steps is not None:
            config = dataclasses.replace(config, max_steps=setup.max_steps)
        if setup.context_window is not None:
            config = dataclasses.replace(
                config, compaction=CompactionPolicy(context_window=setup.context_window)
            )
        if sid is not None:
            agent = await Agent.resume(
                store, sid, model=model, tools=tools, config=config, feed=feed, lease_wait=setup.wait
            )
        else:
            agent = await Agent.create(
                store, model=model, tools=tools, config=config, cwd=setup.workspace, feed=feed
            )
        agent.workspace_checkpoints = TurnCheckpoints(agent.cwd, store)  # what dsh rewind restores
        try:
            yield agent
        except BaseException:
            await close_background(agent, 0.0)
            raise
        else:
            await close_background(agent, setup.background_wait)
        finally:
            await agent.aclose()
    finally:
        try:
            await store.close()
        finally:
            if model is not None:
                await model.aclose()


async def close_background(agent: Agent, within: float) -> None:
    """At exit: let the agent's background subagents (and the turns their notices wake) finish
    for up to ``within`` s — Ctrl-C ends the wait — then stop the rest, saying so on stderr.

    Stopped turns end ``aborted {reason: disposed}`` in their own logs, before the store
    closes, so no child is left ``running`` (``dsh.subagents.shutdown``).
    """
    from dsh.subagents.shutdown import running_children, settle_background, stop_background

    running = running_children([agent])
    if (running or agent.busy) and within > 0:
        wait = asyncio.ensure_future(settle_background([agent], within))
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, wait.cancel)  # before the line that invites it
        typer.echo(
            f"dsh: waiting up to {within:g} s for {running} background subagent(s) to finish "
            "(--background-wait; Ctrl-C stops them now)",
            err=True,
        )
        try:
            await asyncio.wait([wait])
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            wait.cancel()
    left = running_children([agent])
    await stop_background([agent])
    if left:
        typer.echo(
            f"dsh: stopped {left} background subagent(s) still running at exit "
            "(their turns end aborted; resume one with send_message)",
            err=True,
        )


async def cancellable_turn(
    agent: Agent, prompt: str | Message, on_cancel: Callable[[], None]
) -> TurnResult | None:
    """Run one turn; Ctrl-C (SIGINT) cancels it (logged as ``turn/end {aborted}``) → ``None``."""
    task: asyncio.Future[TurnResult] = asyncio.ensure_future(agent.run_turn(prompt))
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        if not task.cancelled():
            raise
        on_cancel()
        return None
    finally:
        loop.remove_signal_handler(signal.SIGINT)
