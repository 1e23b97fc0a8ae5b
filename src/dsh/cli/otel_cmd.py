"""``dsh export otel``: a session tree as OpenTelemetry GenAI spans (OTLP/JSON or OTLP/HTTP)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dsh.cli.common import HelpGroup, StoreOption, run_async, user_errors

if TYPE_CHECKING:
    from dsh.trace.plan import PlannedSpan

export_app = typer.Typer(
    name="export",
    cls=HelpGroup,
    help="Export runs to other tools: dsh export otel ID writes OpenTelemetry traces.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

RunArgument = Annotated[
    str,
    typer.Argument(
        metavar="RUN",
        help="A session id (a unique prefix works) or a scenario directory.",
        show_default=False,
    ),
]


@export_app.command("otel")
def otel_cmd(
    run: RunArgument,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Write the OTLP/JSON document here.", show_default=False
        ),
    ] = None,
    endpoint: Annotated[
        str | None,
        typer.Option(
            "--endpoint",
            metavar="URL",
            help="Send OTLP/HTTP to URL/v1/traces (default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, "
            "$OTEL_EXPORTER_OTLP_ENDPOINT).",
            show_default=False,
        ),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option(
            "--header",
            metavar="NAME=VALUE",
            help="An HTTP header for --endpoint (repeatable).",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option("--timeout", metavar="SECONDS", help="How long --endpoint may take, retries included."),
    ] = 10.0,
    content: Annotated[
        bool, typer.Option("--content", help="Put prompts, answers, tool arguments and results on the spans.")
    ] = False,
    store: StoreOption = None,
) -> None:
    """Export a session and its subagents as OpenTelemetry GenAI spans.

    One invoke_agent span per turn, chat per model call, execute_tool per tool call; a
    child's turns hang under the subagent call that started it, in one trace. Span times
    are the logged times. With neither -o nor an endpoint the OTLP/JSON document goes to
    stdout. Message content is left out unless --content.
    """
    from dsh.cli.runs import load_run
    from dsh.errors import UsageError
    from dsh.jsonx import dumps_unchecked
    from dsh.session.prices import PriceTable
    from dsh.store.logfile import write_file_atomic
    from dsh.store.url import open_store
    from dsh.trace.export import document, environment_endpoint, parse_headers, send, traces_url
    from dsh.trace.plan import PlanOptions, plan_spans

    with user_errors():
        prices = PriceTable.load()
        headers = parse_headers(header or [])
        if timeout <= 0:
            raise UsageError(f"--timeout {timeout}: expected a positive number of seconds")
        url = traces_url(endpoint) if endpoint else environment_endpoint()

    async def load() -> tuple[str, int, list[PlannedSpan]]:
        from dsh.cli.runs import is_scenario_dir

        opened = None if is_scenario_dir(run) else open_store(store)
        try:
            root, sessions = await load_run(opened, run)
        finally:
            if opened is not None:
                await opened.close()
        return root, len(sessions), plan_spans(sessions, root, PlanOptions(content=content, prices=prices))

    root, count, spans = run_async(load)
    with user_errors():
        if output is not None or url is None:
            data = dumps_unchecked(document(spans)) + b"\n"
            if output is None:
                sys.stdout.buffer.write(data)
                sys.stdout.flush()
            else:
                write_file_atomic(output, data)
                typer.echo(f"wrote {len(spans)} spans of {count} session(s) to {os.fspath(output)}", err=True)
        if url is not None:
            sent = send(spans, url, headers, timeout=timeout)
            typer.echo(f"sent {sent} spans of {count} session(s) to {url} (trace of {root})", err=True)
