"""``dsh diff A B``: do two runs behave the same? (sessions by id prefix, or scenario dirs)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from dsh.cli.common import StoreOption, fail, run_async, user_errors, write_json_line

if TYPE_CHECKING:
    from dsh.trace.diff import RunDiff


def diff_cmd(
    a: Annotated[
        str, typer.Argument(metavar="A", help="The baseline: a session id or a scenario directory.")
    ],
    b: Annotated[
        str, typer.Argument(metavar="B", help="The run to compare: a session id or a scenario directory.")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as one JSON object.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print Markdown for a pull-request comment.")
    ] = False,
    store: StoreOption = None,
) -> None:
    """Compare two runs' model-visible behaviour as replay compares a run with its recording.

    The same normalization and rules as replay (workspace path, session ids, spill files;
    system prompt, tool schemas, every message in order), over the whole session tree,
    children paired by their subagent call. Prints the first divergence with a unified
    diff and a per-step table (tool calls, results, text, usage, duration) of both sides.
    Exit 0 when they behave the same, 1 when they differ, 2 on bad input.
    """
    from dsh.errors import DshError

    if as_json and markdown:
        fail("--json and --markdown exclude each other", 2)

    async def body() -> RunDiff:
        from dsh.cli.runs import is_scenario_dir, load_run
        from dsh.store.url import open_store
        from dsh.trace.diff import diff_runs

        opened = None if is_scenario_dir(a) and is_scenario_dir(b) else open_store(store)
        try:
            try:
                return diff_runs(await load_run(opened, a), await load_run(opened, b))
            except DshError as exc:
                fail(str(exc), 2)
        finally:
            if opened is not None:
                await opened.close()

    result = run_async(body)
    with user_errors():
        if as_json:
            write_json_line(result.to_json())
        else:
            from dsh.cli.tables import terminal_safe
            from dsh.trace.diff_report import markdown_report, text_report

            text = markdown_report(result) if markdown else text_report(result)
            sys.stdout.write(terminal_safe(text, multiline=True) if sys.stdout.isatty() else text)
            sys.stdout.flush()
    raise typer.Exit(0 if result.equal else 1)
