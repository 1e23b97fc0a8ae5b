"""``dsh serve replay`` / ``dsh serve record``: the record/replay server for Chat Completions,
Responses and Messages API clients."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dsh.cli.common import HelpGroup, fail, run_async, user_errors, write_json_line
from dsh.cli.redact_opts import NoRedactOption, RedactOption, redaction

if TYPE_CHECKING:
    from dsh.http1 import Limits
    from dsh.serve.record import RecordServer
    from dsh.serve.replay import ReplayServer

serve_app = typer.Typer(
    cls=HelpGroup,
    help="Record and replay any Chat Completions, Responses or Messages API client over HTTP (127.0.0.1).",
    no_args_is_help=True,
)

PortOption = Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0: a free port).")]
HeaderOption = Annotated[
    list[str] | None,
    typer.Option("--session-header", help="Another request header naming the client session (repeatable)."),
]
AllowHostOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-host",
        metavar="HOST[:PORT]",
        help="Also answer requests whose Host (or Origin) names HOST (repeatable); "
        "by default only 127.0.0.1, localhost and [::1] (DNS rebinding).",
    ),
]
MaxBodyOption = Annotated[
    str,
    typer.Option(
        "--max-body",
        metavar="BYTES",
        help="Refuse a request body over this size with 413 (K, M, G suffixes).",
    ),
]
HeaderTimeoutOption = Annotated[
    float,
    typer.Option(
        "--header-timeout",
        "--idle-timeout",
        metavar="SECONDS",
        help="Close a connection idle this long, or whose request head is not finished (408) "
        "or body stalls this long.",
    ),
]
_SIZE = re.compile(r"(\d+)\s*([kmg]?)i?b?", re.IGNORECASE)


def _limits(command: str, max_body: str, header_timeout: float) -> Limits:
    """The request bounds of ``--max-body`` and ``--header-timeout`` (a bad value: exit 2)."""
    from dsh.http1 import Limits

    found = _SIZE.fullmatch(max_body.strip())
    if found is None:
        fail(f"dsh serve {command}: --max-body {max_body!r}: not a size (e.g. 33554432, 32M)", 2)
    size = int(found.group(1)) * 1024 ** "_kmg".index(found.group(2).lower() or "_")
    if header_timeout <= 0:
        fail(f"dsh serve {command}: --header-timeout must be more than 0", 2)
    return Limits(max_body=size, timeout=header_timeout)


def _check_hosts(command: str, allow_host: list[str] | None) -> list[str]:
    from dsh.hosts import HostPolicy

    try:
        HostPolicy(allow_host or ())
    except ValueError as exc:
        fail(f"dsh serve {command}: {exc}", 2)
    return list(allow_host or ())


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
    allow_host: AllowHostOption = None,
    max_body: MaxBodyOption = "32M",
    header_timeout: HeaderTimeoutOption = 30.0,
) -> None:
    """Serve the recorded sessions keylessly; exit 1 at shutdown if a script was not consumed.

    Prints the base URL, then a per-run control token: GET /_dsh/report and POST
    /_dsh/shutdown need it in the X-Dsh-Token header.
    """
    if speed < 0:
        fail("dsh serve replay: --speed must be 0 or more", 2)
    limits = _limits("replay", max_body, header_timeout)
    hosts = _check_hosts("replay", allow_host)

    from dsh.serve.replay import ReplayServer
    from dsh.serve.run import serve_until_stopped

    async def main() -> ReplayServer:
        server = ReplayServer(
            directory,
            port=port,
            speed=speed,
            session_headers=session_header or (),
            allow_hosts=hosts,
            limits=limits,
        )
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
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace a non-empty directory (as one step, when the server stops)."),
    ] = False,
    allow_host: AllowHostOption = None,
    max_body: MaxBodyOption = "32M",
    header_timeout: HeaderTimeoutOption = 30.0,
    redact: RedactOption = None,
    no_redact: NoRedactOption = False,
) -> None:
    """Proxy /v1/chat/completions, /v1/responses and /v1/messages to the upstream (/v1/X to
    UPSTREAM/X) with the client's key and record each session.

    Refuses a directory that is not empty unless --force. Prints the base URL, then a
    per-run control token for /_dsh/report and /_dsh/shutdown (X-Dsh-Token header). The
    client's key is never recorded; secrets in what it sends or receives are redacted.
    """
    limits = _limits("record", max_body, header_timeout)
    with user_errors():
        rule = redaction(redact, no_redact)
    hosts = _check_hosts("record", allow_host)
    from dsh.serve.record import RecordServer
    from dsh.serve.run import serve_until_stopped

    async def main() -> RecordServer:
        server = RecordServer(
            upstream, directory, port=port, session_headers=session_header or (), allow_hosts=hosts,
            limits=limits, replace=force, redact=rule,
        )  # fmt: skip
        await serve_until_stopped(server, f"dsh serve record: recording into {directory}")
        return server

    write_json_line(run_async(main).report())
