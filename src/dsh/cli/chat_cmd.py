"""``dsh chat``: an interactive multi-turn conversation with one session.

Each line typed is a turn (line editing and history from ``readline``); Ctrl-C during a
turn cancels it (logged as ``turn/end {aborted}``) and the chat goes on; Ctrl-C at the
prompt drops the line; Ctrl-D (end of input) exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import TYPE_CHECKING

import typer

from dsh.cli.agent_options import (
    DEFAULT_SANDBOX,
    ApproveOption,
    BackgroundWaitOption,
    ContextWindowOption,
    ContinueOption,
    CwdOption,
    DenyOption,
    MaxStepsOption,
    McpConfigOption,
    NetworkOption,
    NoToolsOption,
    ResumeOption,
    SandboxOption,
    SystemOption,
    ToolsOption,
    TrustMcpOption,
    WaitOption,
    setup_from,
)
from dsh.cli.common import ApiKeyOption, BaseUrlOption, ModelOption, StoreOption, stderr_warnings, user_errors

if TYPE_CHECKING:
    from dsh.cli.live import LiveSetup

PROMPT = "› "

with contextlib.suppress(ImportError):  # line editing and history where the platform has it
    import readline  # noqa: F401


def _read_line() -> str | None:
    """The next non-empty line typed, or ``None`` at end of input (Ctrl-D)."""
    while True:
        try:
            line = input(PROMPT)
        except EOFError:
            typer.echo("", err=True)
            return None
        except KeyboardInterrupt:
            typer.echo("", err=True)
            continue
        if line.strip():
            return line


def _converse(setup: LiveSetup) -> None:
    from dsh.cli.live import cancellable_turn, live_agent
    from dsh.cli.turn_output import TurnOutput
    from dsh.loop import Feed

    feed = Feed()
    with asyncio.Runner() as runner:
        stack = contextlib.AsyncExitStack()
        agent = runner.run(stack.enter_async_context(live_agent(setup, feed)))
        try:
            output = TurnOutput(feed, agent.id, as_json=False)
            typer.echo(f"dsh chat · session {agent.id} · Ctrl-C cancels a turn, Ctrl-D exits", err=True)
            while (line := _read_line()) is not None:
                output.start_turn()
                result = runner.run(cancellable_turn(agent, line, output.cancelled))
                if result is not None:
                    output.finish(result)
        finally:
            runner.run(stack.aclose())


def chat(
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    api_key: ApiKeyOption = None,
    store: StoreOption = None,
    cwd: CwdOption = None,
    resume: ResumeOption = None,
    continue_last: ContinueOption = False,
    system: SystemOption = None,
    tools: ToolsOption = None,
    no_tools: NoToolsOption = False,
    max_steps: MaxStepsOption = None,
    context_window: ContextWindowOption = None,
    mcp_config: McpConfigOption = None,
    trust_mcp: TrustMcpOption = False,
    wait: WaitOption = None,
    sandbox: SandboxOption = DEFAULT_SANDBOX,
    network: NetworkOption = "off",
    approve: ApproveOption = False,
    deny: DenyOption = False,
    background: BackgroundWaitOption = None,
) -> None:
    """Talk with an agent turn after turn in one session (new, --resume ID or --continue).

    Each line you type is a turn, streamed as `dsh run` streams it. Ctrl-C cancels the
    running turn (it is logged as aborted) and the chat goes on; Ctrl-D exits. Up/down
    recall earlier lines (readline). The options are those of `dsh run`.
    """
    from dsh.store.notices import warnings_to

    with user_errors():
        setup = setup_from(locals())
    with user_errors(), warnings_to(stderr_warnings()):
        _converse(setup)
    sys.stdout.flush()
