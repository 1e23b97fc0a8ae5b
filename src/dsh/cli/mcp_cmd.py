"""``dsh mcp record`` / ``dsh mcp replay``: a stdio MCP server recorded once, then served keylessly."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dsh.cli.common import run_async, user_errors

mcp_app = typer.Typer(
    help="Record an MCP server's exchange; serve it again without the server.",
    no_args_is_help=True,
)


@mcp_app.command("record")
def record_command(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="Where the recording goes (a JSONL store).")
    ],
    command: Annotated[
        list[str], typer.Argument(metavar="-- COMMAND ARGS…", help="The real server, after --.")
    ],
) -> None:
    """Proxy the stdio MCP server COMMAND, recording every message.

    Point the client at `dsh mcp record DIR -- COMMAND ARGS…` instead of `COMMAND ARGS…`; then
    `dsh mcp replay DIR` answers the same requests with no server.
    """
    from dsh.mcp.record import record

    with user_errors():
        code = run_async(lambda: record(directory, list(command)))
    raise typer.Exit(code or 0)


@mcp_app.command("replay")
def replay_command(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="A directory dsh mcp record wrote.")],
    report: Annotated[
        Path | None,
        typer.Option(
            "--report", metavar="FILE", help="Also write the report as JSON to FILE.", show_default=False
        ),
    ] = None,
    http: Annotated[
        int | None,
        typer.Option(
            "--http",
            metavar="PORT",
            min=0,
            max=65535,
            help="Serve Streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio (until Ctrl-C).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve a recording over stdio without the server.

    The newest recording in DIR answers as the recorded server did. A request that differs
    from the recorded one gets a JSON-RPC error naming the difference (tools/call: an error
    result). When the client closes stdin, the report (what was served,
    what differed, what was recorded but never asked) goes to stderr.
    """
    from dsh import jsonx
    from dsh.mcp.replay_stdio import serve_replay

    with user_errors():
        if http is None:
            result = run_async(lambda: serve_replay(directory))
        else:
            from dsh.mcp.replay_http import serve_replay_http

            port = http
            result = run_async(lambda: serve_replay_http(directory, port))
    for line in result.lines():
        typer.echo(line, err=True)
    if report is not None:
        report.write_bytes(jsonx.dumps(result.to_json()) + b"\n")
