"""The ``dsh`` Typer application: wires every command group into one entry point."""

from __future__ import annotations

import typer

from dsh.cli.acp_cmd import acp
from dsh.cli.log_cmd import log_app
from dsh.cli.replay_cmd import demo, replay
from dsh.cli.run_cmd import run
from dsh.cli.scenario_cmd import scenario_app
from dsh.cli.serve_cmd import serve_app
from dsh.cli.sessions_cmd import sessions_app
from dsh.cli.tail_cmd import tail
from dsh.cli.ui_cmd import ui

app = typer.Typer(
    name="dsh",
    help="dsh: durable, forkable agent sessions and keyless replay of recorded runs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.command(name="run")(run)
app.add_typer(log_app, name="log")
app.add_typer(sessions_app, name="sessions")
app.add_typer(scenario_app, name="scenario")
app.command(name="replay")(replay)
app.command(name="demo")(demo)
app.command(name="acp")(acp)
app.command(name="ui")(ui)
app.add_typer(serve_app, name="serve")
sessions_app.command(name="tail")(tail)


def main() -> None:
    """Console-script entry point."""
    app()
