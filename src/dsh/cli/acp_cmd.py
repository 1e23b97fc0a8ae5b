"""``dsh acp``: serve dsh agents over the Agent Client Protocol on stdin/stdout.

The ACP SDK is the optional extra ``acp`` (``dsh.errors.install_hint``): this module imports
it only when the command runs, so the rest of the CLI works (and starts fast) without it.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from dsh.cli.agent_options import (
    DEFAULT_SANDBOX,
    BackgroundWaitOption,
    NetworkOption,
    SandboxOption,
    background_wait,
    sandbox_policy,
)
from dsh.cli.common import ApiKeyOption, BaseUrlOption, ModelOption, StoreOption, fail, run_async, user_errors
from dsh.errors import ReplayError, ScenarioError, UsageError, install_hint


class ProfileChoice(StrEnum):
    """Which session updates the server streams."""

    full = "full"
    dsh_compat = "dsh-compat"


def acp(
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    api_key: ApiKeyOption = None,
    store: StoreOption = None,
    replay: Annotated[
        Path | None,
        typer.Option(
            "--replay",
            metavar="DIR",
            help="Serve the recorded scenario in DIR instead of a live model (keyless).",
            show_default=False,
        ),
    ] = None,
    profile: Annotated[
        ProfileChoice,
        typer.Option(
            "--profile",
            help="full: thoughts, streamed text, tool calls, subagents, usage. "
            "dsh-compat: the original's subset (committed top-level text only).",
        ),
    ] = ProfileChoice.full,
    trust: Annotated[
        bool,
        typer.Option(
            "--trust", help="With --replay: do not log a warning naming the recording's bash commands."
        ),
    ] = False,
    drift: Annotated[
        str,
        typer.Option(
            "--drift",
            help="With --replay: strict (default) fails a call that diverges from the "
            "recording; warn serves it anyway.",
        ),
    ] = "strict",
    log_file: Annotated[
        Path | None,
        typer.Option(
            "--log-file",
            help="Append the server's log here (default: no log; stderr is never written).",
            show_default=False,
        ),
    ] = None,
    sandbox: SandboxOption = DEFAULT_SANDBOX,
    network: NetworkOption = "off",
    background: BackgroundWaitOption = None,
) -> None:
    """Serve the Agent Client Protocol on stdin/stdout, for Zed and other ACP clients.

    Live sessions run under --sandbox (bash confined to the workspace by default); a command
    that needs more asks the client with session/request_permission. A replay runs under the
    recording's policy.
    """
    from dsh.snapshot.runner import drift_mode

    try:
        from dsh.acp import ServeOptions, build_runtime, serve_stdio
    except ModuleNotFoundError as exc:
        if exc.name != "acp" and not (exc.name or "").startswith("acp."):
            raise
        fail(f"dsh acp needs the Agent Client Protocol SDK: {install_hint('acp')} ({exc})", 2)
    if log_file is not None:
        try:
            with log_file.open("a", encoding="utf-8"):
                pass
        except OSError as exc:
            fail(f"--log-file {log_file}: {exc.strerror or exc}", 2)
        log_file = log_file.resolve()
    try:
        drift_value = drift_mode(drift)
    except UsageError as exc:
        fail(f"--drift: {exc}", 2)
    try:
        policy = sandbox_policy(sandbox, network)
        wait = background_wait(background)
    except UsageError as exc:
        fail(str(exc), 2)
    options = ServeOptions(
        model=model,
        base_url=base_url,
        api_key=api_key,
        store=store,
        replay=replay,
        profile="dsh-compat" if profile is ProfileChoice.dsh_compat else "full",
        log_file=log_file,
        trust=trust,
        drift=drift_value,
        sandbox=policy,
        background_wait=wait,
    )
    with user_errors():
        try:
            runtime = build_runtime(options)
        except (ScenarioError, ReplayError) as exc:
            fail(f"--replay {replay}: {exc}", 2)
    run_async(lambda: serve_stdio(runtime, log_file))


def main() -> None:
    """Run ``acp`` as a one-command program (``python -c 'from dsh.cli.acp_cmd import main; main()'``)."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    app.command(name="acp")(acp)
    app()
