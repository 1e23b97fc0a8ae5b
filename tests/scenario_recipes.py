"""How the bundled scenarios are recorded: scripted answers of the local test server.

Each recipe is the scenario's ``input.json`` plus a request handler for
:class:`~dsh.testing.server.OpenAICompatServer` that answers like a model would. Recording
runs our own record mode over real HTTP against that server:

    .venv/bin/python -m tests.scenario_recipes [NAME ...]     (or: make scenarios)

rewrites ``src/dsh/snapshot/scenarios/<name>/`` (logs and ``transcript.expected.jsonl``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.model.openai_compat import OpenAICompatModel
from dsh.snapshot import ScenarioResult, run_scenario
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply

SNAPSHOTS = Path(__file__).resolve().parent.parent / "src" / "dsh" / "snapshot" / "scenarios"
MODEL = "deepseek-chat"


def _words(text: str, size: int = 6) -> list[str]:
    """Token-like deltas: the text cut every ``size`` characters."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def reply(text: str, reasoning: str = "") -> Response:
    return stream_reply(text=_words(text), reasoning=_words(reasoning) if reasoning else (), model=MODEL)


def call(call_id: str, name: str, arguments: dict[str, Any], *, gate: int | None = None) -> Response:
    raw = json.dumps(arguments)
    return stream_reply(
        reasoning=_words(f"I will call {name}."),
        tool_calls=[WireToolCall.split(call_id, name, raw, 4)],
        model=MODEL,
        gate=gate,
    )


def calls(specs: list[tuple[str, str, dict[str, Any]]]) -> Response:
    return stream_reply(
        tool_calls=[WireToolCall.split(cid, name, json.dumps(args), 3) for cid, name, args in specs],
        model=MODEL,
    )


def last_user(req: RecordedRequest) -> str:
    """The last user message's text, the runtime-context snapshot left out (it follows the prompt)."""
    return req.prompt


def tool_results(req: RecordedRequest) -> list[str]:
    """Contents of the tool messages after the last user message."""
    out: list[str] = []
    for message in req.messages:
        if message.get("role") == "user":
            out = []
        elif message.get("role") == "tool":
            out.append(str(message.get("content") or ""))
    return out


Handler = Callable[[RecordedRequest], Response]


@dataclass(frozen=True)
class Recipe:
    name: str
    prompts: list[str]
    handler: Handler
    waits: tuple[dict[str, Any], ...] = ()
    """Steps after the prompts (e.g. waiting for background children)."""
    deterministic: bool = True
    """Whether recording twice gives the same transcript (background children settle when
    they settle: where their notices land differs between recordings, never between replays)."""

    def input_json(self) -> dict[str, Any]:
        steps: list[dict[str, Any]] = [{"op": "initialize"}, {"op": "newSession"}]
        steps += [{"op": "prompt", "text": p} for p in self.prompts]
        steps += list(self.waits)
        return {"steps": steps}


CHILD_ALPHA = "Reply with exactly the word ALPHA and nothing else."
CHILD_BETA = "Reply with exactly the word BETA and nothing else."


def _text_turn(req: RecordedRequest) -> Response:
    return reply("PONG", reasoning="The user wants exactly PONG.")


def _tool_call_turn(req: RecordedRequest) -> Response:
    if tool_results(req):
        return reply("DONE")
    return call("call_bash_1", "bash", {"command": "echo SNAPSHOT_OK", "description": "Print a marker"})


def _child_or(req: RecordedRequest, answers: dict[str, str]) -> Response | None:
    text = last_user(req)
    for needle, answer in answers.items():
        if needle in text and not tool_results(req):
            return reply(answer)
    return None


def _spawn(req: RecordedRequest) -> Response:
    child = _child_or(req, {"Reply with exactly the word CHILD_OK": "CHILD_OK"})
    if child:
        return child
    if tool_results(req):
        return reply("PARENT_DONE")
    return call(
        "call_spawn_1",
        "subagent",
        {"description": "echo probe", "prompt": "Reply with exactly the word CHILD_OK and nothing else."},
    )


def _multi(req: RecordedRequest) -> Response:
    child = _child_or(req, {"ALPHA and nothing": "ALPHA", "BETA and nothing": "BETA"})
    if child:
        return child
    done = tool_results(req)
    if not done:
        return call("call_alpha", "subagent", {"description": "Say ALPHA", "prompt": CHILD_ALPHA})
    if len(done) == 1:
        return call("call_beta", "subagent", {"description": "Say BETA", "prompt": CHILD_BETA})
    return reply("PARENT_DONE")


FORK_QUESTION = "What is the project codeword from earlier? Reply with exactly that one word."


def _codeword(req: RecordedRequest) -> str:
    for word in ("MARMALADE", "SAFFRON"):
        if any(word in str(m.get("content") or "") for m in req.messages):
            return word
    return "UNKNOWN"


def _fork(req: RecordedRequest) -> Response:
    text = last_user(req)
    if "Remember this fact" in text:
        return reply("OK")
    if FORK_QUESTION in text and not tool_results(req):
        return reply(_codeword(req))
    if tool_results(req):
        return reply("PARENT_DONE")
    return call("call_fork_1", "subagent_fork", {"description": "Recall codeword", "prompt": FORK_QUESTION})


def _mixed(req: RecordedRequest) -> Response:
    text = last_user(req)
    if "Remember this fact" in text:
        return reply("OK")
    child = _child_or(req, {"ALPHA and nothing": "ALPHA"})
    if child:
        return child
    if FORK_QUESTION in text and not tool_results(req):
        return reply(_codeword(req))
    done = tool_results(req)
    if not done:
        return call("call_spawn_alpha", "subagent", {"description": "Say ALPHA", "prompt": CHILD_ALPHA})
    if len(done) == 1:
        return call(
            "call_fork_code", "subagent_fork", {"description": "Recall codeword", "prompt": FORK_QUESTION}
        )
    return reply("PARENT_DONE")


def _parallel(req: RecordedRequest) -> Response:
    text = last_user(req)
    if "ALPHA and nothing" in text and not tool_results(req):
        return stream_reply(text=["AL", "PHA"], model=MODEL, gate=2)
    if "BETA and nothing" in text and not tool_results(req):
        return stream_reply(text=["BE", "TA"], model=MODEL, gate=2)
    if tool_results(req):
        return reply("PARENT_DONE " + " ".join(tool_results(req)))
    return calls(
        [
            ("call_par_alpha", "subagent", {"description": "Say ALPHA", "prompt": CHILD_ALPHA}),
            ("call_par_beta", "subagent", {"description": "Say BETA", "prompt": CHILD_BETA}),
        ]
    )


def _background(req: RecordedRequest) -> Response:
    text = last_user(req)
    if "ALPHA and nothing" in text and not tool_results(req):
        return stream_reply(text=["AL", "PHA"], model=MODEL, gate=2)
    if "BETA and nothing" in text and not tool_results(req):
        return stream_reply(text=["BE", "TA"], model=MODEL, gate=2)
    if text.startswith("Background subagent"):
        return reply("NOTED")
    if tool_results(req):
        return reply("STARTED")
    return calls(
        [
            (
                "call_bg_alpha",
                "subagent",
                {"description": "Say ALPHA", "prompt": CHILD_ALPHA, "run_in_background": True},
            ),
            (
                "call_bg_beta",
                "subagent",
                {"description": "Say BETA", "prompt": CHILD_BETA, "run_in_background": True},
            ),
        ]
    )


REMEMBER = (
    "Remember this fact for later: the project codeword is {}. "
    "Reply with exactly OK and do not use any tools."
)

RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in [
        Recipe("text-turn", ["Reply with exactly the word: PONG. Do not use any tools."], _text_turn),
        Recipe(
            "tool-call-turn",
            ["Use the bash tool to run exactly: echo SNAPSHOT_OK. Then reply with the single word DONE."],
            _tool_call_turn,
        ),
        Recipe(
            "subagent-spawn",
            ["Use the subagent tool once so a child replies CHILD_OK, then reply PARENT_DONE."],
            _spawn,
        ),
        Recipe(
            "subagent-multi",
            [
                "Use the subagent tool twice, one after the other: first ALPHA, then BETA. "
                "Then reply PARENT_DONE."
            ],
            _multi,
        ),
        Recipe(
            "subagent-fork",
            [
                REMEMBER.format("MARMALADE"),
                "Use the subagent_fork tool once to ask for the codeword, then reply PARENT_DONE.",
            ],
            _fork,
        ),
        Recipe(
            "subagent-mixed",
            [
                REMEMBER.format("SAFFRON"),
                "First use the subagent tool so a child says ALPHA, then use subagent_fork to ask "
                "for the codeword, then reply PARENT_DONE.",
            ],
            _mixed,
        ),
        Recipe(
            "subagent-parallel-distinct",
            [
                "In one message, start two subagents at once: one says ALPHA, the other BETA. "
                "Then reply PARENT_DONE."
            ],
            _parallel,
        ),
        Recipe(
            "subagent-background",
            [
                "In one message, start two background subagents: one says ALPHA, the other BETA. "
                "Then reply STARTED."
            ],
            _background,
            waits=(
                {"op": "waitForSubagentTurnEnd", "child": 1},
                {"op": "waitForSubagentTurnEnd", "child": 2},
                {"op": "waitForTurnEnd"},
            ),
            deterministic=False,
        ),
    ]
}


async def record(recipe: Recipe, directory: Path) -> tuple[ScenarioResult, OpenAICompatServer]:
    """Write the recipe's input.json into ``directory`` and record it against the test server."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "input.json").write_text(json.dumps(recipe.input_json(), indent=2) + "\n")
    async with OpenAICompatServer(handler=recipe.handler) as server:
        model = OpenAICompatModel(base_url=server.base_url, api_key="sk-recording-not-a-secret")
        try:
            result = await run_scenario(directory, "record", record_model=model, model_name=MODEL)
        finally:
            await model.aclose()
    return result, server


async def _main(names: list[str]) -> int:
    status = 0
    for name in names or list(RECIPES):
        result, _ = await record(RECIPES[name], SNAPSHOTS / name)
        print(f"{name}: {'recorded' if result.ok else 'FAILED ' + result.failure_text()}")
        status |= 0 if result.ok else 1
    return status


if __name__ == "__main__":
    sys.exit(asyncio.run(_main(sys.argv[1:])))
