"""The ``dsh`` Typer application: the commands of :mod:`dsh.cli.commands` wired into one tree."""

from __future__ import annotations

from importlib import import_module
from typing import Annotated, Any

import typer

from dsh.cli.commands import COMMANDS, SUBCOMMANDS, version_line
from dsh.cli.common import HelpGroup

HELP = "dsh: durable, forkable agent sessions and keyless replay of recorded runs."


def _version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


def _main(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """dsh: durable, forkable agent sessions and keyless replay of recorded runs."""


def _resolve(spec: tuple[str, str]) -> Any:
    module, attr = spec
    return getattr(import_module(module), attr)


def _group(name: str, group: typer.Typer) -> typer.Typer:
    """``group`` with the subcommands other modules define for it added (once: the group is a
    module-level object, and a process may build the tree more than once)."""
    known = {info.name for info in group.registered_commands}
    for sub, spec in SUBCOMMANDS.get(name, {}).items():
        if sub not in known:
            group.command(name=sub)(_resolve(spec))
    return group


def build_app(only: str | None = None) -> typer.Typer:
    """The Typer app with every command, or (``only``) with that top-level command alone: what a
    command line naming it needs (its help and its run), without importing the other modules."""
    app = typer.Typer(
        name="dsh",
        cls=HelpGroup,
        help=HELP,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_main)
    for name, spec in COMMANDS.items():
        if only is not None and name != only:
            continue
        command = _resolve(spec)
        if isinstance(command, typer.Typer):
            app.add_typer(_group(name, command), name=name)
        else:
            app.command(name=name)(command)
    return app
