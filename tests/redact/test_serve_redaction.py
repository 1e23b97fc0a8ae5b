"""``dsh serve record`` redacts what it writes: a token in a client's prompt (and in the
upstream's answer) is a placeholder in every recorded file; the replay, holding the salt,
matches the same prompt live, and a changed secret is a 409 that prints neither value."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from dsh.serve.record import RecordServer
from dsh.serve.replay import ReplayServer
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, stream_reply

KEY = "sk-test-client-key-0123456789abcdef"
TOKEN = "ghp_" + "C1l2i3e4n5t6T7o8k9e0n1P2r3o4m5p6t7X8"
OTHER = "ghp_" + "D9i8f7f6e5r4e3n2t1T0o9k8e7n6P5r4o3m2"


def _upstream(request: RecordedRequest) -> Response:
    return stream_reply(text=["Stored ", TOKEN[:10], TOKEN[10:], " safely."])


async def _ask(base_url: str, token: str) -> str:
    async with openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        stream = await client.chat.completions.create(
            model="test-model", messages=[{"role": "user", "content": f"Store {token} please"}], stream=True
        )
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])


@pytest.fixture
async def recorded(tmp_path: Path) -> tuple[Path, str]:
    directory = tmp_path / "rec"
    async with (
        OpenAICompatServer(handler=_upstream) as upstream,
        RecordServer(upstream.base_url, directory) as proxy,
    ):
        answer = await _ask(proxy.base_url, TOKEN)
    return directory, answer


async def test_a_token_in_a_client_prompt_is_redacted_in_every_file(recorded: tuple[Path, str]) -> None:
    directory, answer = recorded
    assert answer == f"Stored {TOKEN} safely."  # the client itself sees the real reply
    text = "".join(p.read_text() for p in directory.iterdir())
    assert TOKEN not in text and TOKEN[:10] not in text and KEY not in text
    assert "<secret:github-token:" in text
    assert json.loads((directory / "input.json").read_text())["replay"]["salt"]


async def test_the_replay_matches_the_same_secret_live_and_refuses_another(
    recorded: tuple[Path, str],
) -> None:
    directory, _ = recorded
    async with ReplayServer(directory) as server:
        replayed = await _ask(server.base_url, TOKEN)
        report = server.report()
    assert report["ok"], report
    assert replayed.startswith("Stored <secret:github-token:")  # what was recorded, redacted
    async with ReplayServer(directory) as server:
        with pytest.raises(openai.ConflictError) as refused:
            await _ask(server.base_url, OTHER)
    shown = str(refused.value.body)
    assert OTHER not in shown and TOKEN not in shown
