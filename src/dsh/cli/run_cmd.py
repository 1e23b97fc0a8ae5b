"""``dsh run``: one prompt through a live OpenAI-compatible model, streamed to the terminal."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dsh.cli.agent_options import (
    DEFAULT_SANDBOX,
    ApproveOption,
    ContinueOption,
    CwdOption,
    DenyOption,
    MaxStepsOption,
    NetworkOption,
    NoToolsOption,
    ResumeOption,
    SandboxOption,
    SystemOption,
    ToolsOption,
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
    """PROMPT itself; ``-`` or no PROMPT with piped stdin reads it from stdin."""
    if prompt is not None and prompt != "-":
        return prompt
    if prompt is None and sys.stdin.isatty():
        raise UsageError("no PROMPT: give one, pipe one in (dsh run - < file), or use dsh chat")
    text = sys.stdin.read()
    if not text.strip():
        raise UsageError("the prompt read from stdin is empty")
    return text


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
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object per line (events, deltas, result).")
    ] = False,
    wait: WaitOption = None,
    sandbox: SandboxOption = DEFAULT_SANDBOX,
    network: NetworkOption = "off",
    approve: ApproveOption = False,
    deny: DenyOption = False,
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
    with user_errors():
        setup = setup_from(locals())
        text = read_prompt(prompt)
        from dsh.tools.images import Image

        parts: list[PromptPart] = [text, *(Image.from_path(p) for p in image or [])]
    with user_errors():  # an image the model cannot take: one line, nothing stored or run
        result = run_async(lambda: _run(setup, parts, as_json))
    if result is None:
        raise typer.Exit(130)
    if not result.ok:
        failure = result.failure
        detail = f"{failure['code']}: {failure['message']}" if failure else str(result.reason.get("kind"))
        fail(f"turn {result.turn} of session {result.session_id} ended {result.reason.get('kind')}: {detail}")


async def _run(setup: LiveSetup, parts: list[PromptPart], as_json: bool) -> TurnResult | None:
    from dsh.cli.live import cancellable_turn, live_agent
    from dsh.cli.turn_output import TurnOutput
    from dsh.loop import Feed

    feed = Feed()
    async with live_agent(setup, feed) as agent:
        first = parts[0]
        prompt = first if len(parts) == 1 and isinstance(first, str) else await agent.prompt_message(parts)
        output = TurnOutput(feed, agent.id, as_json=as_json)
        result = await cancellable_turn(agent, prompt, output.cancelled)
        if result is not None:
            output.finish(result)
        return result
