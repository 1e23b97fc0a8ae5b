"""The OpenAI Responses API through dsh serve, with the real ``openai`` SDK: record from a
scripted upstream (streamed and whole, a function call round trip, ``previous_response_id``
chains), replay with the upstream gone — every SDK event the same — and a changed request
refused as ``openai.ConflictError``, once (no retry)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from starlette.testclient import TestClient

from dsh.serve.record import RecordServer
from dsh.serve.replay import ReplayServer
from dsh.serve.transport import ReplayTransport
from dsh.store.url import open_store
from dsh.ui.app import create_app
from tests.serve.dialect_upstreams import Upstream, responses_script

KEY = "sk-responses-secret-0123456789"
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "lookup_capital",
        "description": "The capital city of a country.",
        "parameters": {
            "type": "object",
            "properties": {"country": {"type": "string"}},
            "required": ["country"],
        },
        "strict": False,
    }
]
ASK = "What is the capital of France?"


async def _conversation(
    client: Any, *, instructions: str = "Answer with tools.", output: str = "Paris"
) -> list[Any]:
    """A streamed call that asks for the tool, its result sent back by ``previous_response_id``
    (streamed), then a whole follow-up on the same chain: every event and body, dumped."""
    seen: list[Any] = []
    first = await client.responses.create(
        model="gpt-test", instructions=instructions, input=ASK, tools=TOOLS, stream=True
    )
    done: Any = None
    async for event in first:
        seen.append(event.model_dump())
        done = event.response if event.type == "response.completed" else done
    call = next(item for item in done.output if item.type == "function_call")
    result = [{"type": "function_call_output", "call_id": call.call_id, "output": output}]
    second = await client.responses.create(
        model="gpt-test",
        instructions=instructions,
        input=result,
        previous_response_id=done.id,
        tools=TOOLS,
        stream=True,
    )
    async for event in second:
        seen.append(event.model_dump())
        done = event.response if event.type == "response.completed" else done
    whole = await client.responses.create(
        model="gpt-test", input="And in one word?", previous_response_id=done.id
    )
    seen += [whole.model_dump(), whole.output_text]
    return seen


async def _through(base_url: str) -> list[Any]:
    async with openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        return await _conversation(client)


async def _record(directory: Path) -> tuple[Path, list[Any], Upstream]:
    async with Upstream(responses_script) as upstream, RecordServer(upstream.base_url, directory) as proxy:
        seen = await _through(proxy.base_url)
    return directory, seen, upstream


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any], Upstream]:
    """One recording for the module (the upstream is gone once it is made)."""
    return asyncio.run(_record(tmp_path_factory.mktemp("responses") / "rec"))


async def test_a_replay_answers_every_event_as_recorded(recorded: tuple[Path, list[Any], Upstream]) -> None:
    directory, seen, upstream = recorded
    assert len(upstream.requests) == 3
    assert upstream.requests[0][0]["authorization"] == f"Bearer {KEY}"
    assert seen[-1] == "The capital of France is Paris."
    names = [e["type"] for e in seen[:-2]]
    assert names.count("response.completed") == 2 and "response.function_call_arguments.delta" in names
    async with (
        ReplayServer(directory) as server,
        openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-other", max_retries=0) as client,
    ):
        replayed = await _conversation(client)
        report = server.report()
    assert replayed == seen
    assert report["ok"], report
    assert report["sessions"][0]["dialect"] == "responses" and report["sessions"][0]["served"] == 3


async def test_in_process_replay_answers_the_same(recorded: tuple[Path, list[Any], Upstream]) -> None:
    directory, seen, _ = recorded
    server = ReplayServer(directory)
    http = httpx2.AsyncClient(transport=ReplayTransport(server))
    async with openai.AsyncOpenAI(
        base_url="http://replay.invalid/v1", api_key="x", http_client=http
    ) as client:
        assert await _conversation(client) == seen
    assert server.report()["ok"]


async def test_a_changed_request_is_a_conflict_sent_once(recorded: tuple[Path, list[Any], Upstream]) -> None:
    directory, _, _ = recorded
    async with (
        ReplayServer(directory) as server,
        openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=2) as client,
    ):
        with pytest.raises(openai.ConflictError) as caught:
            await _conversation(client, instructions="Answer WITHOUT tools.")
        refused = server.report()["refused"]
    assert len(refused) == 1 and refused[0]["what"] == "the system prompt"
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert "-Answer with tools.\n+Answer WITHOUT tools." in refused[0]["diff"]


async def test_a_changed_tool_result_later_in_the_chain_is_a_conflict(
    recorded: tuple[Path, list[Any], Upstream],
) -> None:
    directory, _, _ = recorded
    async with (
        ReplayServer(directory) as server,
        openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0) as client,
    ):
        with pytest.raises(openai.ConflictError):
            await _conversation(client, output="Rome")
        report = server.report()
    assert report["refused"][0]["call"] == 2 and "lookup_capital" in report["refused"][0]["what"]
    assert "-      Paris\n+      Rome" in report["refused"][0]["diff"]


async def test_tool_choice_and_streaming_are_checked(recorded: tuple[Path, list[Any], Upstream]) -> None:
    directory, _, _ = recorded
    async with (
        ReplayServer(directory) as server,
        openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0) as client,
    ):
        with pytest.raises(openai.ConflictError, match="tool_choice differs"):
            await client.responses.create(
                model="gpt-test",
                instructions="Answer with tools.",
                input=ASK,
                tools=TOOLS,
                stream=True,
                tool_choice="required",
            )
        with pytest.raises(openai.ConflictError, match="stream differs"):
            await client.responses.create(
                model="gpt-test", instructions="Answer with tools.", input=ASK, tools=TOOLS
            )


def test_the_recording_is_a_dsh_session_log_without_the_key(
    recorded: tuple[Path, list[Any], Upstream], tmp_path: Path
) -> None:
    directory, _, _ = recorded
    for path in directory.iterdir():
        assert KEY not in path.read_text(), path
    events = [json.loads(line) for line in (directory / "session.jsonl").read_text().splitlines()[1:]]
    header = next(e for e in events if e["type"] == "request/header")["data"]["header"]
    assert header["config"]["dialect"] == "responses" and header["system"] == "Answer with tools."
    settled = [e["data"] for e in events if e["type"] == "assistant/message" and "wire" in e["data"]]
    assert [d["wire"]["streamed"] for d in settled] == [True, True, False]
    assert settled[0]["wire"]["events"][0][0] == "response.created"
    assert settled[0]["message"]["content"][0] == {
        "type": "reasoning",
        "text": "Thinking.",
        "signature": "enc-abc",
    }
    assert [e["type"] for e in events].count("tool/call") == 1
    store = f"sqlite:{tmp_path / 's.db'}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dsh.cli",
            "sessions",
            "import",
            str(directory / "session.jsonl"),
            "--json",
            "--store",
            store,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    (imported,) = json.loads(done.stdout)
    app = create_app(lambda: open_store(store), label=store)
    with TestClient(app) as ui:
        html = ui.get(f"/s/{imported['id']}").text
    assert "The capital of France is Paris." in html and "tool call · lookup_capital" in html
    assert "<summary>reasoning</summary>" in html and "Thinking." in html
