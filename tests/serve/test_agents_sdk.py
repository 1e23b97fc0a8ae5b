"""An agent framework (the OpenAI Agents SDK) pointed at dsh serve: record, stop, replay (over
HTTP, and in-process through ReplayTransport)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai.types.responses import ResponseTextDeltaEvent

from dsh.serve.record import RecordServer
from dsh.serve.replay import ReplayServer
from dsh.serve.transport import ReplayTransport
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply

set_tracing_disabled(True)


@function_tool
def lookup_capital(country: str) -> str:
    """The capital city of a country."""
    return {"France": "Paris"}.get(country, "unknown")


def _upstream(request: RecordedRequest) -> Response:
    if request.messages[-1].get("role") == "tool":
        return stream_reply(text=["The capital ", "of France ", "is ", "Paris."])
    call = WireToolCall.split("call_cap", "lookup_capital", '{"country": "France"}', 4)
    return stream_reply(tool_calls=[call])


async def _run(base_url: str, http: httpx2.AsyncClient | None = None) -> tuple[str, list[str]]:
    async with openai.AsyncOpenAI(
        base_url=base_url, api_key="sk-agents-test", max_retries=0, http_client=http
    ) as client:
        model = OpenAIChatCompletionsModel(model="test-model", openai_client=client)
        agent = Agent(name="geo", instructions="Answer with tools.", model=model, tools=[lookup_capital])
        result = Runner.run_streamed(agent, "What is the capital of France?", run_config=RunConfig())
        deltas: list[str] = []
        async for event in result.stream_events():
            if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent):
                deltas.append(event.data.delta)
        return str(result.final_output), deltas


@pytest.mark.parametrize("via", ["http", "in-process"])
async def test_the_agents_sdk_replays_what_it_recorded(tmp_path: Path, via: str) -> None:
    directory = tmp_path / "agents"
    async with OpenAICompatServer(handler=_upstream) as upstream:
        async with RecordServer(upstream.base_url, directory) as proxy:
            recorded = await _run(proxy.base_url)
        assert len(upstream.requests) == 2
    assert recorded == ("The capital of France is Paris.", ["The capital ", "of France ", "is ", "Paris."])
    server = ReplayServer(directory)
    if via == "http":
        async with server:
            replayed = await _run(server.base_url)
    else:
        http = httpx2.AsyncClient(transport=ReplayTransport(server))
        replayed = await _run("http://dsh-replay.invalid/v1", http)
    report: dict[str, Any] = server.report()
    assert report["ok"], report
    assert report["sessions"][0]["served"] == 2
    assert replayed == recorded


async def test_a_changed_instruction_diverges(tmp_path: Path) -> None:
    directory = tmp_path / "agents"
    async with (
        OpenAICompatServer(handler=_upstream) as upstream,
        RecordServer(upstream.base_url, directory) as proxy,
    ):
        await _run(proxy.base_url)
    async with (
        ReplayServer(directory) as server,
        openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0) as client,
    ):
        model = OpenAIChatCompletionsModel(model="test-model", openai_client=client)
        agent = Agent(name="geo", instructions="Answer WITHOUT tools.", model=model, tools=[lookup_capital])
        with pytest.raises(openai.ConflictError):
            await Runner.run(agent, "What is the capital of France?")
        refused = server.report()["refused"]
    assert refused and refused[0]["what"] == "the system prompt"
    assert "-Answer with tools.\n+Answer WITHOUT tools." in refused[0]["diff"]
