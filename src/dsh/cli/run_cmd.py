"""``dsh run``: one prompt through a live OpenAI-compatible model, streamed to the terminal."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dsh.cli.agent_options import (
    DEFAULT_SANDBOX,
    ApproveOption,
    BackgroundWaitOption,
    ContextWindowOption,
    ContinueOption,
    CwdOption,
    DenyOption,
    MaxStepsOption,
    McpConfigOption,
    NetworkOption,
    NoToolsOption,
    ResumeOption,
    SandboxOption,
    SystemOption,
    ToolsOption,
    TrustMcpOption,
    WaitOption,
    setup_from,
)
from dsh.cli.common import ApiKeyOption, BaseUrlOption, ModelOption, StoreOption, fail, run_async, user_errors
from dsh.errors import UsageError

if TYPE_CHECKING:
    from dsh.cli.live import LiveSetup
    from dsh.loop import TurnResult
    from dsh.loop.prompts import PromptPart


def read_prompt(prompt: str | None) -> str:
    """PROMPT itself; ``-`` or no PROMPT with piped stdin reads it from stdin (one trailing
    newline dropped). Blank is refused here, before anything is opened (``dsh.loop.prompt``)."""
    from dsh.loop.prompt import check_prompt, stdin_prompt

    if prompt is not None and prompt != "-":
        return check_prompt(prompt, "PROMPT")
    if prompt is None and sys.stdin.isatty():
        raise UsageError("no PROMPT: give one, pipe one in (dsh run - < file), or use dsh chat")
    return check_prompt(stdin_prompt(sys.stdin.read()), "the prompt read from stdin")


def run(
    prompt: Annotated[
        str | None,
        typer.Argument(
            metavar="PROMPT",
            help="What the agent should do; - (or no PROMPT with piped stdin) reads it from stdin.",
            show_default=False,
        ),
    ] = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    api_key: ApiKeyOption = None,
    store: StoreOption = None,
    cwd: CwdOption = None,
    resume: ResumeOption = None,
    continue_last: ContinueOption = False,
    system: SystemOption = None,
    tools: ToolsOption = None,
    no_tools: NoToolsOption = False,
    max_steps: MaxStepsOption = None,
    context_window: ContextWindowOption = None,
    mcp_config: McpConfigOption = None,
    trust_mcp: TrustMcpOption = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object per line (events, deltas, result).")
    ] = False,
    wait: WaitOption = None,
    sandbox: SandboxOption = DEFAULT_SANDBOX,
    network: NetworkOption = "off",
    approve: ApproveOption = False,
    deny: DenyOption = False,
    background: BackgroundWaitOption = None,
    otel: Annotated[
        str | None,
        typer.Option(
            "--otel",
            metavar="URL",
            help="Send OpenTelemetry GenAI spans to this OTLP/HTTP endpoint (URL/v1/traces) as turns end.",
            show_default=False,
        ),
    ] = None,
    temporal: Annotated[
        str | None,
        typer.Option(
            "--temporal",
            metavar="HOST:PORT",
            help="Run the turn on this Temporal server's workers (dsh worker) instead of here; "
            "--store must be theirs.",
            show_default=False,
        ),
    ] = None,
    task_queue: Annotated[
        str, typer.Option("--task-queue", metavar="Q", help="With --temporal: the workers' task queue.")
    ] = "dsh",
    image: Annotated[
        list[Path] | None,
        typer.Option(
            "--image",
            metavar="FILE",
            help="Attach an image (PNG, JPEG, WebP or GIF; repeatable) after PROMPT; the model "
            "must take images.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run PROMPT as one agent turn against an OpenAI-compatible model (DeepSeek first).

    On a terminal the turn streams live; piped, stdout gets only the final answer and the
    progress and footer go to stderr. A base URL on localhost needs no API key. A session
    has one live writer: resuming fails with "session ID is busy (held by pid N on HOST
    since T)" while another process runs it, unless --wait gives it time. Ctrl-C cancels
    the turn (logged as aborted) and exits 130.
    """
    from dsh.store.bulk import start_up

    with start_up() as ready:  # the collector back once the agent is open (``_run``)
        with user_errors():
            text = read_prompt(prompt)
            setup = setup_from(locals())
            otel_url = None
            if otel is not None:
                from dsh.trace.export import traces_url

                otel_url = traces_url(otel)
            from dsh.tools.images import Image

            parts: list[PromptPart] = [text, *(Image.from_path(p) for p in image or [])]
        if temporal is not None:
            ready()  # the turn runs on the workers: nothing here to keep
            _check_temporal_options(model, base_url, api_key, system, tools, no_tools, image, context_window)
            from dsh.cli.approve import AnnouncedApprover, approver_for
            from dsh.cli.temporal_cmd import leave, run_on_temporal

            chosen = setup.approver if setup.approver is not None else approver_for(approve, deny)
            code = 0
            try:
                on_workers = run_on_temporal(
                    text,
                    address=temporal,
                    queue=task_queue,
                    store_url=store,
                    resume=resume,
                    cwd=setup.workspace,
                    as_json=as_json,
                    approver=AnnouncedApprover(chosen) if as_json else chosen,
                )
                _report(on_workers)
            except typer.Exit as exit_:
                code = exit_.exit_code
            leave(code)
        if as_json and setup.approver is not None:
            from dsh.cli.approve import AnnouncedApprover

            setup = dataclasses.replace(setup, approver=AnnouncedApprover(setup.approver))
        with user_errors():  # an image the model cannot take: one line, nothing stored or run
            result = run_async(lambda: _run(setup, parts, as_json, ready, otel_url))
    _report(result)


def _check_temporal_options(*given: object) -> None:
    """The model, tools and images are the workers' (``dsh worker``): refused with --temporal."""
    if any(value not in (None, False, []) for value in given):
        fail(
            "--temporal runs the turn on the workers: --model, --base-url, --api-key, --system, "
            "--tools, --no-tools, --image and --context-window are theirs (give them to dsh worker)",
            2,
        )


def _report(result: TurnResult | None) -> None:
    """Exit 130 for a cancelled turn, or the one line of a turn that did not end well."""
    if result is None:
        raise typer.Exit(130)
    if not result.ok:
        failure = result.failure
        detail = f"{failure['code']}: {failure['message']}" if failure else str(result.reason.get("kind"))
        fail(f"turn {result.turn} of session {result.session_id} ended {result.reason.get('kind')}: {detail}")


async def _run(
    setup: LiveSetup,
    parts: list[PromptPart],
    as_json: bool,
    ready: Callable[[], None],
    otel_url: str | None = None,
) -> TurnResult | None:
    from dsh.cli.live import cancellable_turn, close_background, live_agent
    from dsh.cli.questions import NoAsker
    from dsh.cli.turn_output import TurnOutput
    from dsh.loop import Feed

    feed = Feed()
    if as_json:  # the output is for a program: nobody at the terminal answers questions
        setup = dataclasses.replace(setup, questions=NoAsker())
    async with live_agent(setup, feed) as agent:
        ready()  # start-up done (``dsh.store.bulk.start_up``): the turn's garbage is collected as ever
        first = parts[0]
        prompt = first if len(parts) == 1 and isinstance(first, str) else await agent.prompt_message(parts)
        output = TurnOutput(feed, agent.id, as_json=as_json)
        trace = None
        if otel_url is not None:
            from dsh.cli.common import stderr_warnings
            from dsh.trace.live import LiveTrace

            trace = LiveTrace(agent.store, agent.id, otel_url, warn=stderr_warnings())
            feed.on_event(trace.on_event)
        try:
            result = await cancellable_turn(agent, prompt, output.cancelled)
            if result is not None:
                output.ended(result)  # its footer now; background subagents may still run
            await close_background(agent, setup.background_wait if result is not None else 0.0)
        finally:
            if trace is not None:
                await trace.aclose()  # after the background children: their spans too
        if result is not None:  # the final answer, or the result lines last, with every child's usage
            output.close([result, *agent.turns_after(result.turn)])
        return result
