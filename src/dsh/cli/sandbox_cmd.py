"""``dsh sandbox``: which kernel sandbox confines ``bash`` on this host, and why one cannot."""

from __future__ import annotations

from typing import Any

import typer

from dsh.cli.common import JsonOption, fail, write_json_line


def sandbox(as_json: JsonOption = False) -> None:
    """Show which kernel sandbox confines bash here (bubblewrap, else Landlock) and why one cannot.

    The same check every confined bash call makes (read-only and workspace-write; under
    danger-full-access nothing is confined), $DSH_SANDBOX_BACKEND (auto, bubblewrap or
    landlock) included. Exits 1 when neither can confine, so confined commands would be
    refused here.
    """
    from pathlib import Path

    from dsh.errors import ToolError
    from dsh.tools.landlock import landlock_abi, landlock_failure
    from dsh.tools.sandbox import SandboxPolicy, bwrap_failure, bwrap_program, confining_backend

    try:
        backend, failure = confining_backend(SandboxPolicy(), Path.cwd())
    except ToolError as exc:  # a bad $DSH_SANDBOX_BACKEND
        fail(str(exc), 2)
    program = bwrap_program()
    bwrap = bwrap_failure()
    landlock = landlock_failure()
    report: dict[str, Any] = {
        "bubblewrap": {"program": program, "usable": bwrap is None, "failure": bwrap},
        "landlock": {"abi": landlock_abi(), "usable": landlock is None, "failure": landlock},
        "confinedBy": backend if failure is None else None,
        "failure": failure,
    }
    if as_json:
        write_json_line(report)
    else:
        typer.echo(f"bubblewrap  {'usable' if bwrap is None else 'unusable: ' + bwrap} ({program})")
        abi = report["landlock"]["abi"]
        typer.echo(f"landlock    {'usable' if landlock is None else 'unusable: ' + landlock} (ABI {abi})")
        if failure is None:
            typer.echo(f"bash under read-only / workspace-write runs confined by {backend}")
        else:
            typer.echo(f"bash under read-only / workspace-write is refused here: {failure}")
    if failure is not None:
        raise typer.Exit(1)
