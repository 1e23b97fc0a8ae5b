"""Every ``--help`` reads well on an 80-column terminal; ``-h``, ``--version`` and completion exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import typer

from dsh.cli.app import DISTRIBUTION, app

from .conftest import Dsh


def _paths(command: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the app (``()``, ``("run",)``, ``("sessions", "list")``, ...)."""
    out = [prefix]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        out += _paths(sub, (*prefix, name))
    return out


def test_every_help_fits_80_columns_and_cuts_no_description(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    paths = _paths(typer.main.get_command(app))
    assert ("sessions", "rm") in paths and ("chat",) in paths and ("log", "show") in paths
    dsh_sqlite.env["COLUMNS"] = "80"
    results = dsh_sqlite.many(*[(*path, "--help") for path in paths])
    for path, result in zip(paths, results, strict=True):
        text = result.ok().stdout
        name = " ".join(("dsh", *path))
        assert text.startswith("Usage: "), name
        for line in text.splitlines():
            assert len(line) <= 80, f"{name} --help: a line of {len(line)} columns: {line!r}"
            assert not re.search(r"\w\.\.\.$", line), f"{name} --help cuts a description: {line!r}"
    top = results[0].stdout
    assert "--install-completion" in top and "-h, --help" in top


def test_short_help_version_and_log_id_alias(dsh_sqlite: Dsh) -> None:
    short, long_, ver, log_help = dsh_sqlite.many(("-h",), ("--help",), ("--version",), ("log", "-h"))
    assert short.ok().stdout == long_.ok().stdout
    assert ver.ok().stdout == f"dsh {version(DISTRIBUTION)}\n"
    assert "inspect" in log_help.ok().stdout and "show" in log_help.stdout


def test_shell_completion_completes_commands_and_subcommands(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("dsh")  # the installed console script
    # With shellingham installed, typer detects the shell from the process tree (and fails where no
    # shell is an ancestor, e.g. under a daemonized runner); its test switch takes the name given.
    no_detection = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    shown = subprocess.run(
        [script, "--show-completion", "bash"], env=no_detection, capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "_dsh_completion" in shown.stdout and "complete " in shown.stdout

    def complete(words: str) -> list[str]:
        env = {**os.environ, "_DSH_COMPLETE": "complete_bash", "COMP_WORDS": words}
        env["COMP_CWORD"] = str(len(words.split()) - 1)
        done = subprocess.run([script], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout.split()

    assert complete("dsh ses") == ["sessions"]
    assert complete("dsh sessions p") == ["prune"]
