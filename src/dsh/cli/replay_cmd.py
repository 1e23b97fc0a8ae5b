"""``dsh replay`` and ``dsh demo``: replay a recorded scenario keylessly through the real loop."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from dsh.cli.common import JsonOption, StoreOption, fail, run_async, write_json_line
from dsh.cli.render import LiveView
from dsh.cli.sessions_cmd import tree_cmd
from dsh.loop import Feed
from dsh.snapshot import ScenarioResult, run_scenario
from dsh.snapshot.runner import SCENARIOS
from dsh.store import EventStore
from dsh.store.url import open_store


async def _replay(directory: Path, store: EventStore, feed: Feed) -> ScenarioResult:
    try:
        return await run_scenario(directory, "replay", store=store, feed=feed)
    finally:
        await store.close()


def _report(result: ScenarioResult, console: Console | None) -> dict[str, Any]:
    report = {
        "ok": result.ok,
        "scenario": result.scenario,
        "sessions": [s.to_json() for s in result.sessions],
        "problems": result.problems,
        "diff": result.diff,
    }
    if console is not None:
        console.print()
        for s in result.sessions:
            mark = "[green]✓[/green]" if s.consumed == s.calls else "[red]✗[/red]"
            console.print(
                f"{mark} {s.kind:<7} recorded {s.recorded_id} → live {s.live_id} · cut "
                f"{s.inherited_event_count} · {s.consumed}/{s.calls} calls · {s.final_text!r}"
            )
        for problem in result.problems:
            console.print(problem, style="red", markup=False)
        if result.diff:
            console.print(result.diff, markup=False, highlight=False)
        console.print("[green]replay ok[/green]" if result.ok else "[red]replay failed[/red]")
    return report


def replay(
    directory: Annotated[Path, typer.Argument(help="A scenario directory (ours or the original's).")],
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Replay the scenario in DIRECTORY keylessly: every session gets its recorded script.

    Checks that every script is consumed, that each session's final text equals the recorded
    one and, when the scenario has a transcript.expected.jsonl, that the transcript matches.
    Sessions go to a temporary in-memory store unless --store is given.
    """
    if not directory.is_dir():
        fail(f"{directory}: not a scenario directory", 2)
    feed = Feed()
    console = None if as_json else Console(highlight=False)
    if console is not None:
        view = LiveView(console)
        feed.on_event(view.event)
        feed.on_chunk(view.chunk)
    result = run_async(lambda: _replay(directory, open_store(store or "memory:"), feed))
    report = _report(result, console)
    if as_json:
        write_json_line(report)
    if not result.ok:
        raise typer.Exit(1)


def demo(store: StoreOption = None) -> None:
    """Replay the bundled subagent-mixed scenario into the store, then show the session tree.

    Keyless: a recorded run (a spawn child and a fork child) goes through the real agent loop
    and tools, and lands in the embedded SQLite store unless --store says otherwise.
    """
    directory = SCENARIOS / "subagent-mixed"
    console = Console(highlight=False)
    feed = Feed()
    view = LiveView(console)
    feed.on_event(view.event)
    feed.on_chunk(view.chunk)
    result = run_async(lambda: _replay(directory, open_store(store), feed))
    _report(result, console)
    if not result.ok:
        raise typer.Exit(1)
    root = result.sessions[0].live_id
    console.print()
    tree_cmd(session_id=root, store=store, as_json=False)
