"""Agent-CLI session headers: Claude Code's session / agent / parent-agent ids key the sessions
that dsh serve records (parents included) and route the replay, with the real openai SDK."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import openai
from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, set_tracing_disabled

from dsh.serve.keys import ClientKey, SessionKeys
from dsh.serve.record import RecordServer
from dsh.serve.replay import ReplayServer
from dsh.store.logfile import load_log_file
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, stream_reply

set_tracing_disabled(True)

CLI_SESSION = "5f0c2a9e-cc-session"
MAIN = {"X-Claude-Code-Session-Id": CLI_SESSION}
AGENT_A = {**MAIN, "x-claude-code-agent-id": "agent-a"}
AGENT_B = {**MAIN, "x-claude-code-agent-id": "agent-b", "x-claude-code-parent-agent-id": "agent-a"}


def test_dsh_headers_win_then_the_agent_id_then_the_cli_session() -> None:
    keys = SessionKeys(["X-Team-Run"])
    low = {k.lower(): v for k, v in AGENT_B.items()}
    assert keys.of({}) == ClientKey(None)
    assert keys.of({"x-claude-code-session-id": CLI_SESSION}) == ClientKey(CLI_SESSION)
    assert keys.of({k.lower(): v for k, v in AGENT_A.items()}) == ClientKey("agent-a", CLI_SESSION)
    assert keys.of(low) == ClientKey("agent-b", "agent-a")
    assert keys.of({**low, "x-dsh-parent": "p"}) == ClientKey("agent-b", "p")
    assert keys.of({**low, "x-team-run": "t"}) == ClientKey("t")
    assert keys.of({**low, "x-team-run": "t", "x-dsh-session": "d"}) == ClientKey("d")


def _upstream() -> Any:
    """The same prompt gets a different reply each time (the subagents cannot be told apart by it)."""
    count = itertools.count(1)

    def handler(request: RecordedRequest) -> Response:
        return stream_reply(text=[f"reply {next(count)} ", "to ", request.messages[-1]["content"]])

    return handler


async def _ask(base_url: str, headers: dict[str, str], prompt: str) -> str:
    async with openai.AsyncOpenAI(
        base_url=base_url, api_key="sk-unused", max_retries=0, default_headers=headers
    ) as client:
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": prompt}], stream=True
        )
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])


async def test_claude_code_ids_key_the_sessions_and_their_parents(tmp_path: Path) -> None:
    directory = tmp_path / "rec"
    async with (
        OpenAICompatServer(handler=_upstream()) as upstream,
        RecordServer(upstream.base_url, directory) as proxy,
    ):
        main = await _ask(proxy.base_url, MAIN, "Plan the work")
        a = await _ask(proxy.base_url, AGENT_A, "Look around")
        b = await _ask(proxy.base_url, AGENT_B, "Look around")
    assert (main, a, b) == ("reply 1 to Plan the work", "reply 2 to Look around", "reply 3 to Look around")
    names = ("session.jsonl", "session.1.jsonl", "session.2.jsonl")
    logs = [load_log_file(directory / name) for name in names]
    keys = [next(e.data["session"] for e in log.events if e.type == "serve/client") for log in logs]
    assert keys == [CLI_SESSION, "agent-a", "agent-b"]
    headers = [log.header for log in logs]
    assert (headers[1].parent_session, headers[1].delegation_depth) == (headers[0].id, 1)
    assert (headers[2].parent_session, headers[2].delegation_depth) == (headers[1].id, 2)

    async with ReplayServer(directory) as server:  # B first: by the prompt alone it would get A's reply
        replayed = [
            await _ask(server.base_url, AGENT_B, "Look around"),
            await _ask(server.base_url, AGENT_A, "Look around"),
            await _ask(server.base_url, MAIN, "Plan the work"),
        ]
        report = server.report()
    assert replayed == [b, a, main]
    assert report["ok"], report


async def _agent_reply(base_url: str, session: str) -> str:
    """An OpenAI Agents SDK agent that names its session the documented way (extra_headers)."""
    async with openai.AsyncOpenAI(base_url=base_url, api_key="sk-unused", max_retries=0) as client:
        model = OpenAIChatCompletionsModel(model="m", openai_client=client)
        settings = ModelSettings(extra_headers={"X-Dsh-Session": session})
        agent = Agent(name=session, instructions="Be brief.", model=model, model_settings=settings)
        result = Runner.run_streamed(agent, "Look around")
        async for _ in result.stream_events():
            pass
        return str(result.final_output)


async def test_the_agents_sdk_names_its_session_through_extra_headers(tmp_path: Path) -> None:
    directory = tmp_path / "rec"
    async with (
        OpenAICompatServer(handler=_upstream()) as upstream,
        RecordServer(upstream.base_url, directory) as proxy,
    ):
        first = await _agent_reply(proxy.base_url, "scout-1")
        second = await _agent_reply(proxy.base_url, "scout-2")
    assert (first, second) == ("reply 1 to Look around", "reply 2 to Look around")
    async with ReplayServer(directory) as server:  # crossed: by the prompt alone scout-2 gets reply 1
        replayed = [
            await _agent_reply(server.base_url, "scout-2"),
            await _agent_reply(server.base_url, "scout-1"),
        ]
        report = server.report()
    assert replayed == [second, first]
    assert report["ok"], report
