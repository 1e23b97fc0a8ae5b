"""The ``dsh`` Typer application: wires every command group into one entry point."""

from __future__ import annotations

from typing import Annotated

import typer

from dsh.cli.acp_cmd import acp
from dsh.cli.chat_cmd import chat
from dsh.cli.common import HelpGroup
from dsh.cli.compact_cmd import compact
from dsh.cli.diff_cmd import diff_cmd
from dsh.cli.export_cmd import export_cmd
from dsh.cli.list_cmd import list_cmd
from dsh.cli.log_cmd import log_app
from dsh.cli.mcp_cmd import mcp_app
from dsh.cli.otel_cmd import export_app
from dsh.cli.replay_cmd import demo, replay
from dsh.cli.rewind_cmd import rewind
from dsh.cli.run_cmd import run
from dsh.cli.sandbox_cmd import sandbox
from dsh.cli.scan_cmd import scan_cmd
from dsh.cli.scenario_cmd import scenario_app
from dsh.cli.serve_cmd import serve_app
from dsh.cli.sessions_cmd import sessions_app
from dsh.cli.tail_cmd import tail
from dsh.cli.temporal_cmd import temporal_app, worker
from dsh.cli.tidy_cmd import prune_cmd, rm_cmd
from dsh.cli.ui_cmd import ui

DISTRIBUTION = "dsh-harness"
"""The name dsh is published under on PyPI (``dsh`` is taken); the command stays ``dsh``."""

app = typer.Typer(
    name="dsh",
    cls=HelpGroup,
    help="dsh: durable, forkable agent sessions and keyless replay of recorded runs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError  # only here: ~40 ms every start paid
        from importlib.metadata import version as dist_version

        try:
            number = dist_version(DISTRIBUTION)
        except PackageNotFoundError:  # running from a source tree that was never installed
            number = "unknown"
        typer.echo(f"dsh {number}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """dsh: durable, forkable agent sessions and keyless replay of recorded runs."""


app.command(name="run")(run)
app.command(name="chat")(chat)
app.command(name="compact")(compact)
app.command(name="rewind")(rewind)
app.add_typer(log_app, name="log")
app.add_typer(sessions_app, name="sessions")
app.add_typer(scenario_app, name="scenario")
app.command(name="replay")(replay)
app.command(name="demo")(demo)
app.command(name="acp")(acp)
app.command(name="ui")(ui)
app.add_typer(serve_app, name="serve")
app.add_typer(mcp_app, name="mcp")
app.add_typer(export_app, name="export")
app.command(name="diff")(diff_cmd)
app.command(name="sandbox")(sandbox)
app.command(name="worker")(worker)
app.add_typer(temporal_app, name="temporal")
sessions_app.command(name="list")(list_cmd)
scenario_app.command(name="scan")(scan_cmd)
sessions_app.command(name="export")(export_cmd)
sessions_app.command(name="rm")(rm_cmd)
sessions_app.command(name="prune")(prune_cmd)
sessions_app.command(name="tail")(tail)


def main() -> None:
    """Console-script entry point."""
    app()
