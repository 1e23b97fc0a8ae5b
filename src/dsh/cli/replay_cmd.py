"""``dsh replay`` and ``dsh demo``: replay a recorded scenario keylessly through the real loop."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dsh.cli.common import JsonOption, StoreOption, fail, run_async, user_errors, write_json_line
from dsh.cli.tables import make_console
from dsh.errors import DshError, UsageError, install_hint

if TYPE_CHECKING:
    from rich.console import Console

    from dsh.loop import Feed
    from dsh.replay.fidelity import Drift
    from dsh.replay.files import RecordedLogs
    from dsh.snapshot import ScenarioResult
    from dsh.snapshot.runner import AgentFactory
    from dsh.store import EventStore

ReplayStoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Keep the replayed sessions in this store: sqlite:PATH, jsonl:DIR, jsonl+zstd:DIR or "
        "postgresql://... (default: a temporary in-memory store; DSH_STORE is not read, "
        "so a replay never writes into your sessions).",
        show_default=False,
    ),
]
"""``dsh replay``'s store: only an explicit ``--store``, never ``DSH_STORE`` (the user's store)."""

FactoryOption = Annotated[
    str | None,
    typer.Option(
        "--factory",
        help="package.module:function building the agent (default: the project's "
        "dsh_snapshot_factory ini option, else dsh's standard agent).",
        show_default=False,
    ),
]


def agent_factory(spec: str | None) -> AgentFactory:
    """The factory named by ``--factory``, else by the project's ini option, else the default."""
    from dsh.snapshot.factory import load_factory, project_factory
    from dsh.snapshot.runner import default_agent_factory

    if spec:
        return load_factory(spec, root=Path.cwd())
    found = project_factory(Path.cwd())
    return load_factory(found[0], root=found[1]) if found else default_agent_factory


async def _replay(
    directory: Path,
    store: EventStore,
    feed: Feed,
    drift: Drift = "strict",
    factory: AgentFactory | None = None,
    live_mcp: bool = False,
    recorded: RecordedLogs | None = None,
) -> ScenarioResult:
    from dsh.snapshot import run_scenario
    from dsh.snapshot.runner import default_agent_factory

    factory = factory or default_agent_factory
    try:
        result = await run_scenario(
            directory,
            "replay",
            store=store,
            feed=feed,
            drift=drift,
            factory=factory,
            live_mcp=live_mcp,
            recorded=recorded,
        )
    finally:
        await store.close()
    for note in result.notes:  # said once: recorded ids already in the target store
        typer.echo(note, err=True)
    return result


def _report(result: ScenarioResult, console: Console | None) -> dict[str, Any]:
    from rich.markup import escape

    from dsh.session.prices import PriceTable
    from dsh.session.spend import spent_text

    with user_errors():
        prices = PriceTable.load()

    report = {
        "ok": result.ok,
        "scenario": result.scenario,
        "sessions": [s.to_json() for s in result.sessions],
        "problems": result.problems,
        "notes": result.notes,
        "diff": result.diff,
        "divergenceDiff": next((s.divergence.diff() for s in result.sessions if s.divergence), None),
        "cache": [r.to_json() for r in result.reuse],
        "spend": result.spend.to_json(prices) if result.spend is not None else None,
    }
    if console is not None:
        console.print()
        for s in result.sessions:
            good = s.consumed == s.calls and s.divergence is None
            good = good and s.tool_results.equal == s.tool_results.total
            mark = "[green]✓[/green]" if good else "[red]✗[/red]"
            line = (
                f" {s.kind:<7} recorded {s.recorded_id} → live {s.live_label} · cut "
                f"{s.inherited_event_count} · {s.consumed}/{s.calls} calls · tool results "
                f"{s.tool_results.equal}/{s.tool_results.total} · {s.final_text!r}"
            )
            console.print(mark + escape(line))
            if s.not_reproduced:
                console.print(f"  not reproduced (injected by the original): {', '.join(s.not_reproduced)}")
            for t in s.tolerated:
                console.print(
                    f"  tolerated ({t.tolerated_by}): {t.headline(result.scenario)}", style="yellow"
                )
        if result.spend is not None:
            console.print(f"usage: {spent_text(result.spend.ledger, prices)}", markup=False, highlight=False)
        for problem in result.problems:
            console.print(problem, style="red", markup=False)
        if result.diff:
            console.print(result.diff, markup=False, highlight=False)
        console.print("[green]replay ok[/green]" if result.ok else "[red]replay failed[/red]")
    return report


def replay(
    directory: Annotated[Path, typer.Argument(help="A scenario directory (ours or the original's).")],
    store: ReplayStoreOption = None,
    as_json: JsonOption = False,
    drift: Annotated[
        str,
        typer.Option(
            "--drift",
            help="strict (default): the first divergence from the recording fails the replay; "
            "warn: report divergences without failing.",
        ),
    ] = "strict",
    trust: Annotated[
        bool,
        typer.Option(
            "--trust", help="Do not warn before running the recording's bash commands on this machine."
        ),
    ] = False,
    factory: FactoryOption = None,
    live_mcp: Annotated[
        bool,
        typer.Option(
            "--live-mcp",
            help="Start the workspace's .mcp.json servers and call them, instead of serving the "
            "recorded MCP results (the default: no server is started).",
        ),
    ] = False,
    cache: Annotated[
        bool,
        typer.Option(
            "--cache",
            help="Also print each request's prefix reuse (shared bytes and tokens with the "
            "session's previous request, cache reads, where a request rewrote its prefix).",
        ),
    ] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Also write a report page: the sessions side by side, recorded vs live, the first "
            "divergence highlighted (needs the ui extra).",
            show_default=False,
        ),
    ] = None,
    until: Annotated[
        int | None,
        typer.Option(
            "--until",
            metavar="TURN",
            help="With --live: take the recording up to the end of TURN, then go live.",
            show_default=False,
        ),
    ] = None,
    live: Annotated[
        bool,
        typer.Option(
            "--live",
            help="Continue the recording after --until TURN against the configured provider, asking "
            "its later prompts; stored as a branch of the recording (--store, else DSH_STORE).",
        ),
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", help="With --live: the model to continue with (may differ from the recorded one)."
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="With --live: the provider's OpenAI-compatible base URL."),
    ] = None,
) -> None:
    """Replay the scenario in DIRECTORY keylessly: every session gets its recorded script.

    Before each recorded model call is served, the live request is compared with what the
    recorded model saw (history, tool results, and for dsh's own recordings the system
    prompt, tool schemas and model config): the first divergence fails with a diff. Also
    checks that every script is consumed, that every recorded tool result was reproduced,
    that each session's final text equals the recorded one and, when the scenario has a
    transcript.expected.jsonl, that the transcript matches. Sessions go to a temporary
    in-memory store unless --store is given (DSH_STORE is not read).

    A request that rewrites its prompt-cache prefix (it does not extend the session's
    previous request; a compaction excepted) fails the replay with "the cache prefix broke
    at: REGION" unless input.json accepts it ("cache": {"accept": ["tools"]}). --cache also
    prints every request's prefix reuse; the --json report always carries it ("cache").
    """
    from dsh.cli.render import LiveView
    from dsh.loop import Feed
    from dsh.replay.files import read_recorded
    from dsh.replay.permissions import untrusted_warning
    from dsh.snapshot.runner import drift_mode
    from dsh.store.url import open_store

    scenario_argument(directory)
    if live or until is not None:
        if not live or until is None:
            fail("--until TURN and --live go together", 2)
        _live(directory, until, store, model, base_url, as_json)
        return
    try:
        mode = drift_mode(drift)
    except UsageError as exc:
        fail(f"--drift: {exc}", 2)
    with user_errors():
        chosen = agent_factory(factory)
    recorded = None
    if not trust:
        try:  # the commands named are those of the logs the replay runs: read once, for both
            recorded = read_recorded(directory)
            warning = untrusted_warning(directory, recorded=recorded)
        except DshError as exc:
            fail(str(exc), 2)
        if warning:
            typer.echo(warning, err=True)
    feed = Feed()
    console = None if as_json else make_console(markup=True, live=True)
    view = None
    if console is not None:
        view = LiveView(console, prompts=True, batch=True)  # recorded chunks come at once
        feed.on_event(view.event)
        feed.on_chunk(view.chunk)
    result = run_async(
        lambda: _replay(directory, open_store(store or "memory:"), feed, mode, chosen, live_mcp, recorded)
    )
    if view is not None:
        view.flush()
    report = _report(result, console)
    if cache and not as_json:
        from dsh.cli.cache_report import cache_text

        sys.stdout.write(cache_text(result.reuse))
        sys.stdout.flush()
    if html is not None:
        _write_html(html, result)
    if as_json:
        write_json_line(report)
    if not result.ok:
        raise typer.Exit(1)


def _live(
    directory: Path, until: int, store: str | None, model: str | None, base_url: str | None, as_json: bool
) -> None:
    """``--until TURN --live``: the recording's first turns, then the provider (``dsh.snapshot.live``)."""
    import os

    from dsh.cli.render import LiveView
    from dsh.loop import Feed
    from dsh.model.settings import resolve_provider
    from dsh.snapshot.live import continue_live
    from dsh.store.url import open_store

    with user_errors():
        settings = resolve_provider(base_url=base_url, model=model, key_option=None)
    feed = Feed()
    if not as_json:
        view = LiveView(make_console(markup=True, live=True), prompts=True)
        feed.on_event(view.event)
        feed.on_chunk(view.chunk)

    async def body() -> Any:
        s = open_store(store or os.environ.get("DSH_STORE"))
        try:
            return await continue_live(directory, s, until, settings, feed)
        finally:
            await s.close()

    run = run_async(body)
    d = run.divergence
    if as_json:
        diverged = None if d is None else {"turn": d.turn, "recorded": d.recorded, "live": d.live}
        out = {
            "recording": run.recording,
            "branch": run.branch,
            "liveTurns": run.turns,
            "divergence": diverged,
        }
        write_json_line(out)
        return
    typer.echo(
        f"turns 1–{until} from the recording {run.recording} (keyless); turns {run.turns[0]}–{run.turns[-1]} "
        f"live with {settings.model} -> branch {run.branch} (workspace {run.workspace})"
    )
    if d is None:
        typer.echo("the live answers match the recorded ones")
    else:
        typer.echo(f"diverged at turn {d.turn}: recorded {d.recorded!r}, live {d.live!r}")


def scenario_argument(directory: Path) -> Path:
    """``directory`` when it is a scenario to run, else one line and exit 2 (a bad argument, as
    ``dsh acp --replay`` says it): it does not exist, is a file, or has no ``input.json``."""
    from dsh.replay.files import check_scenario_directory

    try:
        check_scenario_directory(directory, need_input=True)
    except DshError as exc:
        fail(str(exc), 2)
    return directory


def _write_html(target: Path, result: ScenarioResult) -> None:
    try:
        from dsh.ui.report import render_replay_report  # the ui extra (jinja2, markdown-it-py)
    except ModuleNotFoundError as exc:
        fail(f"--html needs the viewer's extra: {install_hint('ui')} ({exc})", 2)
    try:
        target.write_text(render_replay_report(result), encoding="utf-8")
    except OSError as exc:
        fail(f"--html {target}: {exc.strerror or exc}", 2)


def demo(store: StoreOption = None) -> None:
    """Replay the bundled subagent-mixed scenario into the store, then show the session tree.

    Keyless: a recorded run (a spawn child and a fork child) goes through the real agent loop
    and tools, and lands in the embedded SQLite store unless --store says otherwise.
    """
    from dsh.cli.render import LiveView
    from dsh.cli.sessions_cmd import tree_cmd
    from dsh.loop import Feed
    from dsh.snapshot.runner import SCENARIOS
    from dsh.store.url import open_store

    directory = SCENARIOS / "subagent-mixed"
    console = make_console(markup=True, live=True)
    feed = Feed()
    view = LiveView(console, prompts=True, batch=True)  # recorded chunks come at once
    feed.on_event(view.event)
    feed.on_chunk(view.chunk)
    result = run_async(lambda: _replay(directory, open_store(store), feed))
    view.flush()
    _report(result, console)
    if not result.ok:
        raise typer.Exit(1)
    root = result.sessions[0].live_id
    console.print()
    tree_cmd(session_id=root, store=store, as_json=False)
