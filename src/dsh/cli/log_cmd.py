"""``dsh log``: a stored session's conversation (``dsh log ID``), or a log file read directly.

``dsh log inspect FILE`` reads a log file (version 0 or 2, plain or ``.jsonl.zst``) without
a store; anything else after ``dsh log`` is the ``show`` command (``dsh log ID``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dsh.cli.common import HelpGroup, JsonOption, user_errors, write_json_line
from dsh.cli.tables import key_value_grid, make_console, or_dash, type_counts, types_table, warn
from dsh.cli.transcript_cmd import log_show

if TYPE_CHECKING:
    from dsh.store.logfile import DecodedLog


class _LogGroup(HelpGroup):
    """A group whose default command is ``show``: ``dsh log ID`` is ``dsh log show ID``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # ctx: the (vendored) click Context
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["show", *args]
        return super().parse_args(ctx, args)


log_app = typer.Typer(
    name="log",
    cls=_LogGroup,
    help="Read a session: dsh log ID prints its conversation; dsh log inspect FILE summarizes a log file.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
log_app.command("show")(log_show)

FilesArgument = Annotated[
    list[Path],
    typer.Argument(
        metavar="FILE",
        help="Session log files: the original's version 0 or dsh's version 2, plain JSONL or .jsonl.zst.",
        show_default=False,
    ),
]


def inspect_json(decoded: DecodedLog) -> dict[str, Any]:
    """The stable JSON object printed by ``dsh log inspect --json`` (docs/reference/json-output.md)."""
    return {
        "path": decoded.source,
        "version": decoded.version,
        "header": decoded.header.to_wire(),
        "isSeeded": decoded.header.is_seeded,
        "inheritedEventCount": decoded.inherited_event_count,
        "eventCount": len(decoded.events),
        "types": type_counts(decoded.events),
        "warnings": list(decoded.warnings),
        "importProblem": decoded.import_problem,
    }


def _render(info: dict[str, Any]) -> None:
    header = info["header"]
    cut = info["inheritedEventCount"]
    rows = [
        ("file", info["path"]),
        ("version", str(info["version"])),
        ("session", header["id"]),
        ("parent", or_dash(header.get("parentSession"))),
        ("origin", or_dash(header.get("origin"))),
        ("depth", str(header["delegationDepth"])),
        ("seeded", "yes" if info["isSeeded"] else "no"),
        ("cut", f"{cut} inherited, {info['eventCount'] - cut} own"),
        ("events", str(info["eventCount"])),
    ]
    if info["importProblem"] is not None:
        rows.append(("import", f"refused: {info['importProblem']}"))
    console = make_console()
    console.print(key_value_grid(rows))
    console.print()
    console.print(types_table(info["types"]))


@log_app.command("inspect")
def inspect(
    files: FilesArgument,
    as_json: JsonOption = False,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            envvar="DSH_STORE",
            help="Ignored: inspect reads FILE directly "
            "(accepted so scripts can pass --store to every command).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Summarize log files: version, logical header, inherited cut and event counts per type.

    Packed chunk rows of version-0 logs are expanded, so counts are per event. A torn last
    line is dropped with a warning; any other corruption or an unsupported version is an
    error that stops at that file. With --json: one JSON object per file, one per line.
    """
    from dsh.store.logfile import load_log_file

    del store
    with user_errors():
        for n, file in enumerate(files):
            decoded = load_log_file(file)
            info = inspect_json(decoded)
            for message in decoded.warnings:
                warn(message)
            if as_json:
                write_json_line(info)
            else:
                if n:
                    make_console().print()
                _render(info)
