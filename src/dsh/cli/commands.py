"""Which module defines each ``dsh`` command, and the version line — known without importing typer."""

from __future__ import annotations

from dsh import __version__
from dsh.errors import DISTRIBUTION as DISTRIBUTION

VERSION_FLAGS = ("--version", "-V")

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("dsh.cli.run_cmd", "run"),
    "chat": ("dsh.cli.chat_cmd", "chat"),
    "compact": ("dsh.cli.compact_cmd", "compact"),
    "rewind": ("dsh.cli.rewind_cmd", "rewind"),
    "log": ("dsh.cli.log_cmd", "log_app"),
    "sessions": ("dsh.cli.sessions_cmd", "sessions_app"),
    "scenario": ("dsh.cli.scenario_cmd", "scenario_app"),
    "replay": ("dsh.cli.replay_cmd", "replay"),
    "demo": ("dsh.cli.replay_cmd", "demo"),
    "acp": ("dsh.cli.acp_cmd", "acp"),
    "ui": ("dsh.cli.ui_cmd", "ui"),
    "serve": ("dsh.cli.serve_cmd", "serve_app"),
    "mcp": ("dsh.cli.mcp_cmd", "mcp_app"),
    "export": ("dsh.cli.otel_cmd", "export_app"),
    "diff": ("dsh.cli.diff_cmd", "diff_cmd"),
    "sandbox": ("dsh.cli.sandbox_cmd", "sandbox"),
    "worker": ("dsh.cli.temporal_cmd", "worker"),
    "temporal": ("dsh.cli.temporal_cmd", "temporal_app"),
}
"""Every top-level command in ``dsh --help``'s order: its module and the command (a function)
or group (a ``typer.Typer``) that module defines."""

SUBCOMMANDS: dict[str, dict[str, tuple[str, str]]] = {
    "sessions": {
        "list": ("dsh.cli.list_cmd", "list_cmd"),
        "export": ("dsh.cli.export_cmd", "export_cmd"),
        "rm": ("dsh.cli.tidy_cmd", "rm_cmd"),
        "prune": ("dsh.cli.tidy_cmd", "prune_cmd"),
        "tail": ("dsh.cli.tail_cmd", "tail"),
    },
    "scenario": {"scan": ("dsh.cli.scan_cmd", "scan_cmd")},
}
"""Subcommands of a group that its own module does not define, added after its own."""


def named_command(argv: list[str]) -> str | None:
    """The top-level command ``argv`` starts with, ``None`` when it starts with none."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def version_line() -> str:
    """``dsh <version>``: :data:`dsh.__version__`, which the build gives the installed package
    (read here without ``importlib.metadata``: ~35 ms of a start-up that is ~70 ms)."""
    return f"dsh {__version__}"
