"""``dsh ui``: the local, read-only web viewer over a store's sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dsh.cli.common import StoreOption, fail, store_label
from dsh.errors import DshError, install_hint


def ui(
    store: StoreOption = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (default: localhost only).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to bind (0: a free one).")] = 0,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the viewer in a browser.")] = False,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            metavar="FILE",
            help="Also serve this HTML replay report (dsh.ui.report) at /report.",
            show_default=False,
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            metavar="HOST[:PORT]",
            help="Also answer requests whose Host (or Origin) names HOST (repeatable); by default only "
            "127.0.0.1, localhost, [::1] and the --host address (DNS rebinding).",
        ),
    ] = None,
    header_timeout: Annotated[
        float,
        typer.Option(
            "--header-timeout",
            metavar="SECONDS",
            help="Close a connection that has not sent a whole request head within this many seconds.",
        ),
    ] = 30.0,
) -> None:
    """Serve a read-only web viewer of the store's sessions and print its URL.

    Sessions list (search, sort, pages), session pages with the lineage tree and each fork
    child's cut on the parent's timeline, transcripts, raw events, and live updates while a
    session is being appended to. Bound to 127.0.0.1 unless --host says otherwise; a request
    naming another Host (DNS rebinding) gets 421 and one from another page's Origin 403,
    unless --allow-host names it.
    """
    try:  # the viewer's web stack is the optional `ui` extra; every other command works without it
        from dsh.ui import server as ui_server
    except ModuleNotFoundError as exc:  # pragma: no cover - exercised only without the extra
        fail(f"dsh ui needs the ui extra ({exc.name} is not installed): {install_hint('ui')}", 1)
    if port < 0 or port > 65535:
        fail(f"--port {port}: not a port number (0..65535)", 2)
    if header_timeout <= 0:
        fail("--header-timeout must be more than 0", 2)
    if host not in ui_server.LOCAL_HOSTS:
        typer.echo(
            f"dsh: warning: --host {host} exposes every session in the store to that network",
            err=True,
        )
    report_html: str | None = None
    if report is not None:
        try:
            report_html = report.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"--report {report}: cannot read it ({exc})", 2)
    from dsh.hosts import HostPolicy

    try:
        HostPolicy(allow_host or ())
    except ValueError as exc:
        fail(str(exc), 2)
    label = store or f"sqlite:{store_label(None)}"
    try:
        ui_server.serve(
            store,
            host=host,
            port=port,
            open_browser=open_browser,
            label=label,
            echo=typer.echo,
            report_html=report_html,
            allow_hosts=allow_host or (),
            header_timeout=header_timeout,
        )
    except DshError as exc:  # the store does not exist (read-only: never created)
        fail(str(exc), 1)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}", 1)
