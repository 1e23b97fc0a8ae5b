"""The ``dsh_serve_client`` fixture with the two new dialects, in a pytester project: the
OpenAI Agents SDK on its default Responses model (``OpenAIResponsesModel``) with a tool, and
an ``anthropic`` SDK tool loop with thinking, each recorded from a scripted upstream
(``--dsh-snapshot=record``) and replayed in-process with the upstream gone."""

from __future__ import annotations

from typing import Any

import pytest

from dsh.serve.pytest_plugin import UPSTREAM_ENV, BackgroundServer
from tests.serve.dialect_upstreams import Upstream, messages_script, responses_script

INI = "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"

APP = '''
import pathlib
import anthropic
import openai
import pytest
from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

set_tracing_disabled(True)
HERE = pathlib.Path(__file__).parent


@function_tool
def lookup_capital(country: str) -> str:
    """The capital city of a country."""
    return {"France": "Paris"}.get(country, "unknown")


@pytest.mark.dsh_serve(directory=str(HERE / "agents"))
async def test_the_agents_sdk_on_responses(dsh_serve_client):
    client = openai.AsyncOpenAI(base_url="http://api.invalid/v1", api_key="sk-agents-key", max_retries=0,
                                http_client=dsh_serve_client.async_http_client())
    async with client:
        model = OpenAIResponsesModel(model="gpt-test", openai_client=client)
        agent = Agent(name="geo", instructions="Answer with tools.", model=model, tools=[lookup_capital])
        result = await Runner.run(agent, "What is the capital of France?")
    assert result.final_output == "The capital of France is Paris."


TOOLS = [{"name": "lookup_capital", "description": "The capital city of a country.",
          "input_schema": {"type": "object", "properties": {"country": {"type": "string"}}}}]


def _loop(client, messages):
    while True:
        with client.messages.stream(model="claude-test", max_tokens=2048, tools=TOOLS, messages=messages,
                                    thinking={"type": "enabled", "budget_tokens": 1024}) as stream:
            reply = stream.get_final_message()
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        if reply.stop_reason != "tool_use":
            return reply
        use = next(b for b in reply.content if b.type == "tool_use")
        result = {"type": "tool_result", "tool_use_id": use.id, "content": "Paris"}
        messages.append({"role": "user", "content": [result]})


@pytest.mark.dsh_serve(directory=str(HERE / "claude"))
def test_an_anthropic_tool_loop(dsh_serve_client):
    client = anthropic.Anthropic(base_url="http://api.invalid", api_key="sk-ant-key", max_retries=0,
                                 http_client=dsh_serve_client.http_client())
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    with client:
        reply = _loop(client, messages)
    assert reply.content[0].signature == "sig-XYZ=="
    assert reply.content[-1].text == "The capital of France is Paris."
'''


def _script(body: dict[str, Any]) -> Any:
    return responses_script(body) if "input" in body else messages_script(body)


def test_the_agents_sdk_and_an_anthropic_loop_record_and_replay(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_app=APP)
    upstream = Upstream(_script)
    background = BackgroundServer(upstream)  # type: ignore[arg-type]
    background.start()
    try:
        monkeypatch.setenv(UPSTREAM_ENV, upstream.base_url)
        pytester.runpytest("-p", "no:cacheprovider", "--dsh-snapshot=record").assert_outcomes(passed=2)
    finally:
        background.stop()
    assert [body.get("input") is not None for _, body in upstream.requests] == [True, True, False, False]
    for name in ("agents", "claude"):
        text = (pytester.path / name / "session.jsonl").read_text()
        assert "sk-agents-key" not in text and "sk-ant-key" not in text
    monkeypatch.delenv(UPSTREAM_ENV)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)
