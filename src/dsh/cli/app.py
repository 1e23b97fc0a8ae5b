"""The ``dsh`` entry point: ``--version`` without typer, else the command tree a command line needs.

``dsh --version`` / ``dsh -V`` answer before typer is imported. A command line starting with a
top-level command (``dsh run --help``, ``dsh sessions list``) builds the tree with that command
alone (:func:`dsh.cli.tree.build_app`), importing that command's module and no other; anything
else (``dsh``, ``dsh --help``, shell completion, a mistyped command) builds the whole tree.
``app`` (the whole tree, for tests and the docs generator) is built on first access.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import TYPE_CHECKING

from dsh.cli.commands import DISTRIBUTION as DISTRIBUTION
from dsh.cli.commands import VERSION_FLAGS, named_command, version_line

if TYPE_CHECKING:
    import typer

_TREE = "dsh.cli.tree"
"""Imported by name when a command line needs the tree (it imports typer: ~50 ms)."""


def __getattr__(name: str) -> typer.Typer:
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    app: typer.Typer = import_module(_TREE).build_app()
    globals()["app"] = app
    return app


def main() -> None:
    """Console-script entry point."""
    argv = sys.argv[1:]
    if len(argv) == 1 and argv[0] in VERSION_FLAGS:
        sys.stdout.write(version_line() + "\n")
        sys.stdout.flush()
        return
    from dsh.store.bulk import start_up

    with start_up():  # the tree's modules live as long as the process: not walked while imported
        cli = import_module(_TREE).build_app(named_command(argv))
    cli()
