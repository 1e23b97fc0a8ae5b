"""``dsh serve replay`` / ``dsh serve record``: the OpenAI-compatible record/replay server."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dsh.cli.common import HelpGroup, fail, run_async, write_json_line

if TYPE_CHECKING:
    from dsh.serve.record import RecordServer
    from dsh.serve.replay import ReplayServer

serve_app = typer.Typer(
    cls=HelpGroup,
    help="Record and replay any OpenAI-compatible client over HTTP (127.0.0.1).",
    no_args_is_help=True,
)

PortOption = Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0: a free port).")]
HeaderOption = Annotated[
    list[str] | None,
    typer.Option("--session-header", help="Another request header naming the client session (repeatable)."),
]


@serve_app.command("replay")
def replay_cmd(
    directory: Annotated[Path, typer.Argument(help="A recorded directory (session.jsonl, session.N.jsonl).")],
    port: PortOption = 0,
    speed: Annotated[
        float, typer.Option("--speed", help="0: no pacing; 1: the recorded gaps; N: N times faster.")
    ] = 0.0,
    allow_unconsumed: Annotated[
        bool, typer.Option("--allow-unconsumed", help="Exit 0 even if a recorded call was not served.")
    ] = False,
    session_header: HeaderOption = None,
) -> None:
    """Serve the recorded sessions keylessly; exit 1 at shutdown if a script was not consumed."""
    if speed < 0:
        fail("dsh serve replay: --speed must be 0 or more", 2)

    from dsh.serve.replay import ReplayServer
    from dsh.serve.run import serve_until_stopped

    async def main() -> ReplayServer:
        server = ReplayServer(directory, port=port, speed=speed, session_headers=session_header or ())
        await serve_until_stopped(server, f"dsh serve replay: serving {directory}")
        return server

    server = run_async(main)
    report = server.report()
    write_json_line(report)
    if report["refused"]:
        fail(f"dsh serve replay: {len(report['refused'])} request(s) refused with 409 (see the report)")
    if report["unconsumed"] and not allow_unconsumed:
        fail(
            "dsh serve replay: recorded calls were not served in "
            + ", ".join(report["unconsumed"])
            + " (the client did less than the recording; --allow-unconsumed to relax)"
        )


@serve_app.command("record")
def record_cmd(
    directory: Annotated[Path, typer.Argument(help="Where to write the recorded session logs.")],
    upstream: Annotated[
        str, typer.Option("--upstream", help="The provider's base URL, e.g. https://api.deepseek.com/v1.")
    ],
    port: PortOption = 0,
    session_header: HeaderOption = None,
) -> None:
    """Proxy /v1/chat/completions to the upstream with the client's key and record each session."""
    from dsh.serve.record import RecordServer
    from dsh.serve.run import serve_until_stopped

    async def main() -> RecordServer:
        server = RecordServer(upstream, directory, port=port, session_headers=session_header or ())
        await serve_until_stopped(server, f"dsh serve record: recording into {directory}")
        return server

    write_json_line(run_async(main).report())
