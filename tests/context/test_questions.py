"""ask_user_question: a real prompt on a pseudo-terminal (options as a picker, free text),
refused piped / with --json (a clear text), refused in a subagent with the original's text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dsh.context.tools import with_context_tools
from dsh.loop import NO_DELAY, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply, tool_call_reply
from dsh.store.memory import MemoryEventStore
from dsh.subagents import Agent as DelegatingAgent
from dsh.subagents import standard_tools
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply
from tests.cli.test_chat_cli import Terminal
from tests.cli.test_run_cli import KEY, _env, dsh

QUESTION = {
    "questions": [
        {
            "id": "mode",
            "question": "Which build mode?",
            "header": "Choose Mode",
            "options": [
                {"label": "debug", "description": "Fast to build."},
                {"label": "release (Recommended)"},
            ],
        },
        {"id": "name", "question": "What should the binary be called?"},
    ]
}
DELEGATED = (
    "Error: human interaction is unavailable while the calling agent is owned by another live agent; "
    "include the unresolved question or decision in the child agent's final result"
)


def _tool_result(req: RecordedRequest) -> str | None:
    for message in req.messages:
        if message.get("role") == "tool":
            return str(message["content"])
    return None


def _asking(req: RecordedRequest) -> Response:
    result = _tool_result(req)
    if result is not None:
        return stream_reply(text=[f"GOT {result}"])
    return stream_reply(tool_calls=[WireToolCall.split("q1", "ask_user_question", json.dumps(QUESTION), 2)])


def test_on_a_terminal_the_user_picks_and_types(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=_asking) as server:
        args = ["run", "Build it", "--base-url", server.base_url, "--api-key", KEY, "--model", "m1"]
        term = Terminal(args, _env(tmp_path), tmp_path)
        term.expect("[Choose Mode] Which build mode?")
        term.expect("2) release (Recommended)")
        term.expect("answer (a number, or type your own): ")
        term.send("2\r")
        term.expect("What should the binary be called?")
        term.send("fastcat\r")
        term.expect("GOT ")
        assert term.wait() == 0
    answer = json.loads(_tool_result(server.requests[1]) or "")
    assert answer == {
        "answers": [
            {"id": "mode", "selected": ["release (Recommended)"]},
            {"id": "name", "selected": [], "custom": "fastcat"},
        ]
    }


def test_piped_and_json_runs_refuse_with_a_clear_text(tmp_path: Path) -> None:
    for extra in ([], ["--json"]):
        with OpenAICompatServer(handler=_asking) as server:
            out = dsh(tmp_path, "run", "Build it", *extra, "--base-url", server.base_url, "--api-key", KEY)
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr
        refused = _tool_result(server.requests[1]) or ""
        assert refused.startswith(
            "Error: nobody can answer ask_user_question here (dsh is not reading a terminal)"
        )


async def test_a_subagent_s_question_is_refused_with_the_original_s_text(tmp_path: Path) -> None:
    def script(request: Any, index: int) -> list[Any]:
        if request.delegation is None:  # the parent: delegate in the foreground, then finish
            if index == 0:
                args = {"description": "Ask", "prompt": "Ask the user.", "run_in_background": False}
                return tool_call_reply("p1", "subagent", args)
            return text_reply("PARENT_DONE")
        seen = [m for m in request.messages if m["role"] == "user" and m["source"]["kind"] == "tool"]
        if not seen:
            return tool_call_reply(
                "c1", "ask_user_question", {"questions": [{"id": "q", "question": "CUDA?"}]}
            )
        return text_reply("UNRESOLVED: CUDA?")

    asked: list[Any] = []

    class Tripwire:
        async def ask(self, questions: list[Any], **where: str) -> list[Any]:
            asked.append(questions)
            raise AssertionError("a delegated question reached the asker")

    store = MemoryEventStore()
    agent = await DelegatingAgent.create(
        store,
        model=ScriptedModel(script),
        tools=with_context_tools(standard_tools()),
        config=AgentConfig(model="m", retry=NO_DELAY, questions=Tripwire()),
        cwd=tmp_path,
    )
    result = await agent.run_turn("Delegate the question")
    assert result.ok and asked == []
    [child] = await store.children(agent.id)
    loaded = await store.load(child.header.id)
    [refusal] = [e for e in loaded.events if e.type == "tool/result"]
    assert refusal.data["message"]["content"][0]["content"][0]["text"] == DELEGATED
    assert refusal.data["error"] == {"code": "DELEGATED_CALLER"}
    parent = [e for e in agent.session.events if e.type == "tool/result"]
    assert parent[0].data["message"]["content"][0]["content"][0]["text"] == "UNRESOLVED: CUDA?"
