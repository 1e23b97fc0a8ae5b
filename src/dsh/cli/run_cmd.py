"""``dsh run``: one prompt through a live OpenAI-compatible model, streamed to the terminal."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Annotated

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
from dsh.loop import Agent, AgentConfig, Feed, TurnResult
from dsh.model.settings import resolve_provider
from dsh.store.url import open_store
from dsh.subagents import standard_tools


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
) -> None:
    """Run PROMPT as one agent turn against an OpenAI-compatible model (DeepSeek first)."""
    workspace = (cwd or Path.cwd()).resolve()
    if not workspace.is_dir():
        fail(f"--cwd {workspace}: not a directory", 2)
    result = run_async(lambda: _run(prompt, model, base_url, api_key, store, workspace, resume, as_json))
    if result is None:
        raise typer.Exit(130)
    if not result.ok:
        failure = result.failure
        detail = f"{failure['code']}: {failure['message']}" if failure else str(result.reason.get("kind"))
        fail(f"turn {result.turn} of session {result.session_id} ended {result.reason.get('kind')}: {detail}")


async def _run(
    prompt: str,
    model_name: str | None,
    base_url: str | None,
    api_key: str | None,
    store_url: str | None,
    workspace: Path,
    resume: str | None,
    as_json: bool,
) -> TurnResult | None:
    if model_name is not None and not model_name.strip():
        raise UsageError("--model must not be empty")
    settings = resolve_provider(api_key=api_key, base_url=base_url, model=model_name)
    # Imported here, not at module top: the SDK costs ~250 ms that every other command skips.
    from dsh.model.openai_compat import OpenAICompatModel

    name = settings.model
    model = OpenAICompatModel(base_url=settings.base_url, api_key=settings.api_key, default_model=name)
    store = open_store(store_url)
    feed = Feed()
    config = AgentConfig(model=name)
    try:
        tools = standard_tools()
        if resume:
            agent = await Agent.resume(store, resume, model=model, tools=tools, config=config, feed=feed)
        else:
            agent = await Agent.create(
                store, model=model, tools=tools, config=config, cwd=workspace, feed=feed
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
