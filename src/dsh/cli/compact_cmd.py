"""``dsh compact ID``: compact a stored session's history now, between its turns."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dsh.cli.agent_options import ContextWindowOption, WaitOption
from dsh.cli.common import ApiKeyOption, BaseUrlOption, ModelOption, StoreOption, run_async, user_errors


def compact(
    session: Annotated[str, typer.Argument(metavar="ID", help="The session (a unique prefix works).")],
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    api_key: ApiKeyOption = None,
    store: StoreOption = None,
    wait: WaitOption = None,
    context_window: ContextWindowOption = None,
) -> None:
    """Replace a stored session's history, all but its newest exchange, by a summary.

    The model writes the summary (one call, to the model dsh run would ask); the log
    keeps every original message, `dsh log` shows the compaction, and the next turn sees
    the summary instead of what it replaced. Exits 1 with the reason when nothing was
    replaced (nothing to compact yet, or a failed or empty summary: the history is unchanged).
    """
    from dsh.cli.live import LiveSetup, live_agent
    from dsh.loop import Feed
    from dsh.loop.compaction import Compacted
    from dsh.tools.sandbox import SandboxPolicy

    setup = LiveSetup(
        store_url=store,
        workspace=Path.cwd().resolve(),
        cwd_given=False,
        resume=session,
        continue_last=False,
        wait=wait or 0.0,
        sandbox=SandboxPolicy(),
        model=model,
        base_url=base_url,
        api_key=api_key,
        context_window=context_window,
    )

    async def go() -> tuple[str, Compacted]:
        async with live_agent(setup, Feed()) as agent:
            return agent.id, await agent.compact()

    with user_errors():
        sid, done = run_async(go)
    if not done.ok:
        typer.echo(f"dsh compact: session {sid}: {done.error}; the history is unchanged", err=True)
        raise typer.Exit(1)
    typer.echo(
        f"session {sid}: compacted {done.replaced} messages, {done.tokens_before:,} → "
        f"{done.tokens_after:,} tokens (compaction {done.compaction_id})"
    )
