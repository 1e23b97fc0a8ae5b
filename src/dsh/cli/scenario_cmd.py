"""``dsh scenario``: record, refresh, replay and save scenarios from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dsh.cli.common import (
    ApiKeyOption,
    BaseUrlOption,
    HelpGroup,
    ModelOption,
    StoreOption,
    run_async,
    user_errors,
)
from dsh.cli.redact_opts import NoRedactOption, RedactOption, redaction
from dsh.cli.replay_cmd import FactoryOption, agent_factory, replay, scenario_argument

if TYPE_CHECKING:
    from dsh.snapshot import ScenarioResult
    from dsh.snapshot.runner import AgentFactory

scenario_app = typer.Typer(
    cls=HelpGroup,
    help="Scenarios as regression tests: record once against a real provider, replay keylessly.",
    no_args_is_help=True,
)
scenario_app.command(name="replay")(replay)


def _directory(directory: Path) -> Path:
    return scenario_argument(directory)


def _finish(result: ScenarioResult, verb: str) -> None:
    for note in result.notes:
        typer.echo(note, err=True)
    if not result.ok:
        for problem in result.problems:
            typer.echo(problem, err=True)
        if result.diff:
            typer.echo(result.diff, err=True)
        raise typer.Exit(1)
    if result.changed:
        typer.echo(f"{verb} {result.scenario}: changed {', '.join(result.changed)}")
    else:
        typer.echo(f"{verb} {result.scenario}: nothing changed")


@scenario_app.command(name="record")
def record(
    directory: Annotated[Path, typer.Argument(help="The scenario directory (holding input.json).")],
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    api_key: ApiKeyOption = None,
    factory: FactoryOption = None,
    keep_failed: Annotated[
        bool, typer.Option("--keep-failed", help="Write a failed recording beside it as NAME.failed/.")
    ] = False,
    redact: RedactOption = None,
    no_redact: NoRedactOption = False,
    cache: Annotated[
        str,
        typer.Option(
            "--cache",
            metavar="fail|warn|off",
            help="A request whose prompt-cache prefix reuse dropped against the committed "
            "recording's (it now rewrites its prefix: tools, the system prompt, a message): "
            "fail the record (default), warn and write it, or do not check.",
        ),
    ] = "fail",
) -> None:
    """Run the scenario against the real provider and keep its logs and transcript.

    The previous recording is replaced as one step, and only when every turn completed;
    otherwise nothing is written and the command exits 1 naming the failure. Secrets are
    redacted from what is written (<secret:KIND:HASH8>; the salt goes to input.json).

    Each request's prefix reuse is compared with the committed recording's: a request that
    now rewrites its prefix fails the record with "the cache prefix broke at: REGION",
    naming the request and the shared bytes before → after (--cache warn: written, with a
    warning; --cache off: not checked).
    """
    from dsh.model.settings import resolve_provider
    from dsh.snapshot import run_scenario
    from dsh.snapshot.cache_check import cache_check

    _directory(directory)
    with user_errors():
        settings = resolve_provider(api_key=api_key, base_url=base_url, model=model)
        chosen: AgentFactory = agent_factory(factory)
        rule = redaction(redact, no_redact, settings.api_key)
        checked = cache_check(cache)

    async def go() -> ScenarioResult:
        live = settings.open_model()  # the key scrubbed out of /proc/<dsh>/environ and cmdline
        try:
            return await run_scenario(
                directory, "record", factory=chosen, record_model=live, model_name=settings.model,
                keep_failed=keep_failed, redact=rule, cache=checked,
            )  # fmt: skip
        finally:
            await live.aclose()

    _finish(run_async(go), "recorded")


@scenario_app.command(name="refresh")
def refresh(
    directory: Annotated[Path, typer.Argument(help="The scenario directory.")],
    factory: FactoryOption = None,
) -> None:
    """Replay keylessly (every call checked) and rewrite only transcript.expected.jsonl."""
    from dsh.snapshot import run_scenario
    from dsh.snapshot.runner import accept_hint

    _directory(directory)
    with user_errors():
        chosen = agent_factory(factory)
    result = run_async(lambda: run_scenario(directory, "refresh", factory=chosen))
    if not result.ok:
        typer.echo(accept_hint(result.scenario, model_side=True), err=True)
    _finish(result, "refreshed")


@scenario_app.command(name="save")
def save(
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="A top-level session id (a unique prefix works).")
    ],
    directory: Annotated[Path, typer.Argument(help="Where to write the scenario.")],
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            help="Copy this folder in as the scenario's workspace/ (the workspace as it was before the run).",
            show_default=False,
        ),
    ] = None,
    store: StoreOption = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a recording already in DIRECTORY.")] = False,
    redact: RedactOption = None,
    no_redact: NoRedactOption = False,
) -> None:
    """Turn a real session from any store into a scenario that replays strictly.

    Writes the session as session.jsonl, each descendant (spawn and fork children,
    grandchildren) as session.N.jsonl, an input.json of its prompts and the normalized
    transcript; with --workspace a copy of that folder. Secrets (provider keys, token
    shapes, secret environment values, --redact matches) become <secret:KIND:HASH8> in every
    file, the workspace copy too; the user's store is left as it is.
    """
    from dsh.cli.resolve import resolve_id
    from dsh.snapshot.save import save_scenario
    from dsh.store.url import open_store

    with user_errors():
        rule = redaction(redact, no_redact)

    async def go() -> tuple[str, list[str]]:
        opened = open_store(store, create=False)
        try:
            sid = await resolve_id(opened, session_id)  # a unique prefix, as every command takes
            saved = await save_scenario(opened, sid, directory, workspace=workspace, force=force, redact=rule)
            return sid, saved
        finally:
            await opened.close()

    sid, written = run_async(go)
    typer.echo(f"saved {sid} as {directory}: {', '.join(written)}")
