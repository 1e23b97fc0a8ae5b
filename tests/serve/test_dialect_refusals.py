"""Bad input to the dialects: an unknown path (404 naming the supported ones), a body in the
wrong dialect (400 in the dialect's error shape), a truncated upstream stream (recorded as a
failed attempt, replayed as one), and Codex's own session header routing a replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from dsh.serve.record import RecordServer
from dsh.serve.replay import ReplayServer
from tests.serve.dialect_upstreams import Upstream, messages_script, responses_script

SUPPORTED = "POST /v1/chat/completions, /v1/responses, /v1/messages"


def _events(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (directory / "session.jsonl").read_text().splitlines()[1:]]


async def _recorded_one(tmp_path: Path) -> Path:
    directory = tmp_path / "one"
    async with (
        Upstream(responses_script) as upstream,
        RecordServer(upstream.base_url, directory) as proxy,
        openai.AsyncOpenAI(base_url=proxy.base_url, api_key="k", max_retries=0) as client,
    ):
        await client.responses.create(model="m", input="hi")
    return directory


async def test_unknown_paths_and_wrong_dialects_are_refused(tmp_path: Path) -> None:
    directory = await _recorded_one(tmp_path)
    async with ReplayServer(directory) as server, httpx2.AsyncClient(base_url=server.base_url + "/") as http:
        unknown = await http.post("embeddings", json={"input": "x"})
        assert unknown.status_code == 404 and SUPPORTED in unknown.json()["error"]["message"]
        chat_body = {"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "s"}]}
        wrong = await http.post("messages", json=chat_body)
        assert wrong.status_code == 400 and wrong.headers["x-should-retry"] == "false"
        assert wrong.json()["type"] == "error" and "/v1/chat/completions" in wrong.json()["error"]["message"]
        wrong = await http.post("responses", json={"model": "m", "messages": []})
        assert wrong.status_code == 400 and "/v1/messages" in wrong.json()["error"]["message"]
        wrong = await http.post("chat/completions", json={"model": "m", "input": "hi"})
        assert wrong.status_code == 400 and "/v1/responses" in wrong.json()["error"]["message"]
        assert server.report()["sessions"][0]["served"] == 0
    async with (
        Upstream(responses_script) as upstream,
        RecordServer(upstream.base_url, tmp_path / "rec") as proxy,
        httpx2.AsyncClient(base_url=proxy.base_url + "/") as http,
    ):
        unknown = await http.post("embeddings", json={"input": "x"})
        assert unknown.status_code == 404 and SUPPORTED in unknown.json()["error"]["message"]
        assert (await http.post("messages", json=chat_body)).status_code == 400
        assert not upstream.requests


async def test_a_truncated_responses_stream_is_a_failed_attempt_replayed_as_one(tmp_path: Path) -> None:
    directory = tmp_path / "cut"

    async def run(base_url: str) -> list[Any]:
        async with openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0) as client:
            stream = await client.responses.create(model="m", input="hi", stream=True)
            return [event.model_dump() async for event in stream]

    async with Upstream(responses_script) as upstream, RecordServer(upstream.base_url, directory) as proxy:
        upstream.cut = True
        recorded = await run(proxy.base_url)
    assert recorded and recorded[-1]["type"] != "response.completed"
    attempt = next(e["data"] for e in _events(directory) if e["type"] == "assistant/attempt")
    assert attempt["failure"]["code"] == "STREAM_CLOSED" and len(attempt["wire"]["events"]) == len(recorded)
    async with ReplayServer(directory) as server:
        assert await run(server.base_url) == recorded
        assert server.report()["ok"]


async def test_a_truncated_messages_stream_is_a_failed_attempt_replayed_as_one(tmp_path: Path) -> None:
    directory = tmp_path / "cut"

    async def run(base_url: str) -> list[Any]:
        async with anthropic.AsyncAnthropic(
            base_url=base_url.removesuffix("/v1"), api_key="k", max_retries=0
        ) as c:
            stream = await c.messages.create(
                model="m", max_tokens=9, messages=[{"role": "user", "content": "hi"}], stream=True
            )
            return [event.model_dump() async for event in stream]

    async with Upstream(messages_script) as upstream, RecordServer(upstream.base_url, directory) as proxy:
        upstream.cut = True
        recorded = await run(proxy.base_url)
    assert recorded and recorded[-1]["type"] != "message_stop"
    attempt = next(e["data"] for e in _events(directory) if e["type"] == "assistant/attempt")
    assert attempt["failure"]["code"] == "STREAM_CLOSED"
    async with ReplayServer(directory) as server:
        assert await run(server.base_url) == recorded
        assert server.report()["ok"]


async def test_codex_session_headers_name_the_session(tmp_path: Path) -> None:
    directory = tmp_path / "codex"
    async with Upstream(responses_script) as upstream, RecordServer(upstream.base_url, directory) as proxy:
        for conversation in ("conv-a", "conv-b"):
            async with openai.AsyncOpenAI(
                base_url=proxy.base_url,
                api_key="k",
                max_retries=0,
                default_headers={"session_id": conversation},
            ) as client:
                await client.responses.create(model="m", input="the same prompt")
    assert _events(directory)[0]["data"] == {"session": "conv-a"}
    async with ReplayServer(directory) as server:
        for conversation in ("conv-b", "conv-a"):
            async with openai.AsyncOpenAI(
                base_url=server.base_url,
                api_key="k",
                max_retries=0,
                default_headers={"session_id": conversation},
            ) as client:
                await client.responses.create(model="m", input="the same prompt")
        assert [s["served"] for s in server.report()["sessions"]] == [1, 1]
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="k", max_retries=0, default_headers={"session_id": "conv-c"}
        ) as client:
            with pytest.raises(openai.ConflictError, match="no recorded session is named 'conv-c'"):
                await client.responses.create(model="m", input="the same prompt")


async def test_anthropic_auth_headers_and_the_query_are_forwarded_and_never_recorded(tmp_path: Path) -> None:
    directory = tmp_path / "auth"
    sent = {
        "x-api-key": "sk-ant-header-secret",
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "b1",
        "x-unrelated": "not-forwarded",
    }
    body = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}
    async with (
        Upstream(messages_script) as upstream,
        RecordServer(upstream.base_url, directory) as proxy,
        httpx2.AsyncClient(base_url=proxy.base_url + "/") as http,
    ):
        reply = await http.post("messages?beta=true", json=body, headers=sent)
    assert reply.status_code == 200 and reply.json()["stop_reason"] == "end_turn"
    assert upstream.targets == ["/v1/messages?beta=true"]  # Claude Code's query goes along
    headers = upstream.requests[0][0]
    assert {k: headers.get(k) for k in sent} == {**sent, "x-unrelated": None}
    for path in directory.iterdir():
        assert "sk-ant-header-secret" not in path.read_text()
