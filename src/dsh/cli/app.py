"""The ``dsh`` Typer application and its entry point."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="dsh",
    help="dsh: durable, forkable agent sessions and keyless replay of recorded runs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command()
def demo() -> None:
    """Replay a bundled recorded scenario keylessly and show the session tree."""
    typer.echo("dsh demo: nothing recorded yet")


def main() -> None:
    """Console-script entry point."""
    app()
