"""``dsh run``: one prompt through a live OpenAI-compatible model, streamed to the terminal."""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, cast

import typer
from rich.console import Console

from dsh.cli.common import (
    ApiKeyOption,
    BaseUrlOption,
    ModelOption,
    StoreOption,
    fail,
    run_async,
    write_json_line,
)
from dsh.cli.render import LiveView
from dsh.errors import UsageError
from dsh.events import Event
from dsh.hooks import HookSet
from dsh.loop import Agent, AgentConfig, Feed, TurnResult
from dsh.model.settings import resolve_provider
from dsh.store.url import open_store
from dsh.subagents import standard_tools
from dsh.tools.sandbox import DEFAULT_MODE, SANDBOX_MODES, SandboxMode, SandboxPolicy


def run(
    prompt: Annotated[str, typer.Argument(metavar="PROMPT", help="What the agent should do.")],
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    api_key: ApiKeyOption = None,
    store: StoreOption = None,
    cwd: Annotated[
        Path | None,
        typer.Option("--cwd", help="Workspace the tools work in (default: the current directory)."),
    ] = None,
    resume: Annotated[
        str | None, typer.Option("--resume", help="Continue a stored session with a new turn.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON event per line instead of the live view.")
    ] = False,
    wait: Annotated[
        float | None,
        typer.Option(
            "--wait",
            metavar="SECONDS",
            min=0.0,
            help="With --resume: wait up to SECONDS for another writer of the session to finish "
            "(default: fail at once if the session is busy).",
            show_default=False,
        ),
    ] = None,
    sandbox: Annotated[
        str,
        typer.Option(
            "--sandbox",
            metavar="MODE",
            help="File policy: read-only, workspace-write (bash confined by bubblewrap, writes only "
            "in the workspace and temp dirs) or danger-full-access (nothing confined).",
        ),
    ] = DEFAULT_MODE,
    network: Annotated[
        str,
        typer.Option("--network", metavar="on|off", help="Whether confined commands may use the network."),
    ] = "off",
) -> None:
    """Run PROMPT as one agent turn against an OpenAI-compatible model (DeepSeek first).

    A session has one live writer: --resume ID fails with "session ID is busy (held by pid N
    on HOST since T)" while another process runs it, unless --wait gives it time.
    """
    workspace = (cwd or Path.cwd()).resolve()
    if not workspace.is_dir():
        fail(f"--cwd {workspace}: not a directory", 2)
    if wait is not None and not resume:
        fail("--wait SECONDS needs --resume ID", 2)
    if sandbox not in SANDBOX_MODES:
        fail(f"--sandbox {sandbox}: expected one of {', '.join(SANDBOX_MODES)}", 2)
    if network not in ("on", "off"):
        fail(f"--network {network}: expected on or off", 2)
    policy = SandboxPolicy(mode=cast(SandboxMode, sandbox), network=network == "on")
    target = _Target(store, workspace, resume, wait or 0.0, policy)
    result = run_async(lambda: _run(prompt, model, base_url, api_key, target, as_json))
    if result is None:
        raise typer.Exit(130)
    if not result.ok:
        failure = result.failure
        detail = f"{failure['code']}: {failure['message']}" if failure else str(result.reason.get("kind"))
        fail(f"turn {result.turn} of session {result.session_id} ended {result.reason.get('kind')}: {detail}")


@dataclass(frozen=True, slots=True)
class _Target:
    """Where the turn runs: the store, the workspace, the session to resume, the lease wait, the policy."""

    store_url: str | None
    workspace: Path
    resume: str | None
    wait: float
    sandbox: SandboxPolicy


async def _run(
    prompt: str,
    model_name: str | None,
    base_url: str | None,
    api_key: str | None,
    target: _Target,
    as_json: bool,
) -> TurnResult | None:
    if model_name is not None and not model_name.strip():
        raise UsageError("--model must not be empty")
    settings = resolve_provider(api_key=api_key, base_url=base_url, model=model_name)
    # Imported here, not at module top: the SDK costs ~250 ms that every other command skips.
    from dsh.model.openai_compat import OpenAICompatModel

    name = settings.model
    model = OpenAICompatModel(base_url=settings.base_url, api_key=settings.api_key, default_model=name)
    store = open_store(target.store_url)
    feed = Feed()
    config = AgentConfig(model=name, hooks=HookSet.from_environment(), sandbox=target.sandbox)
    agent: Agent | None = None
    try:
        tools = standard_tools()
        if target.resume:
            agent = await Agent.resume(
                store,
                target.resume,
                model=model,
                tools=tools,
                config=config,
                feed=feed,
                lease_wait=target.wait,
            )
        else:
            agent = await Agent.create(
                store, model=model, tools=tools, config=config, cwd=target.workspace, feed=feed
            )
        view = _attach_output(feed, agent.id, as_json)
        task = asyncio.ensure_future(agent.run_turn(prompt))
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, task.cancel)
        try:
            result = await task
        except asyncio.CancelledError:
            if view is not None:
                view.console.print("\n[red]■ cancelled[/red] · session " + agent.id)
            return None
        finally:
            loop.remove_signal_handler(signal.SIGINT)
        if view is not None:
            view.finish(agent.id, result.reason, result.usage)
        else:
            write_json_line(
                {
                    "type": "result",
                    "sessionId": agent.id,
                    "turn": result.turn,
                    "reason": result.reason,
                    "text": result.text,
                    "usage": result.usage,
                }
            )
        return result
    finally:
        try:
            if agent is not None:
                await agent.aclose()
        finally:
            await store.close()
            await model.aclose()


def _attach_output(feed: Feed, root: str, as_json: bool) -> LiveView | None:
    if as_json:

        def emit(session_id: str, event: Event) -> None:
            write_json_line({"sessionId": session_id, **event.to_wire()})

        feed.on_event(emit)
        return None
    view = LiveView(Console(highlight=False), root)
    feed.on_event(view.event)
    feed.on_chunk(view.chunk)
    return view
