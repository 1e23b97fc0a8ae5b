"""One ``X-Dsh-Session`` key, several independent conversations: a request whose history does
not extend the keyed session's log starts a conversation of its own (every message it
carries recorded, none lost), and the same client replays green with the upstream gone —
with the real ``openai`` SDK (Chat Completions, Responses) and ``anthropic`` SDK (Messages).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import anthropic
import openai
import pytest

from dsh.serve.record import RecordServer
from dsh.serve.replay import ReplayServer
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, stream_reply
from tests.serve.dialect_upstreams import Upstream, messages_script, responses_script

HEADERS = {"X-Dsh-Session": "one-key"}
Ask = Callable[[str, list[dict[str, Any]]], Awaitable[tuple[str, list[dict[str, Any]]]]]
"""``(base_url, history) -> (answer, items)``: one call of a dialect's SDK with this history;
``items`` is the reply as that SDK's users send it back (Responses: its ``output`` items,
Messages: its content blocks, reasoning included)."""


def _chat_upstream(request: RecordedRequest) -> Response:
    asked = [str(m.get("content")) for m in request.messages if m.get("role") == "user"]
    return stream_reply(text=f"answer to {asked[-1]} ({len(asked)})")


async def _chat(base_url: str, history: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    async with openai.AsyncOpenAI(
        base_url=base_url, api_key="k", max_retries=0, default_headers=HEADERS
    ) as c:
        stream = await c.chat.completions.create(model="m", messages=cast("Any", history), stream=True)
        text = "".join([ch.choices[0].delta.content or "" async for ch in stream if ch.choices])
    return text, [{"role": "assistant", "content": text}]


async def _responses(base_url: str, history: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    async with openai.AsyncOpenAI(
        base_url=base_url, api_key="k", max_retries=0, default_headers=HEADERS
    ) as c:
        reply = await c.responses.create(model="m", input=cast("Any", history))
    return reply.output_text, [item.model_dump(exclude_none=True) for item in reply.output]


async def _messages(base_url: str, history: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    root = base_url.removesuffix("/v1")
    async with anthropic.AsyncAnthropic(
        base_url=root, api_key="k", max_retries=0, default_headers=HEADERS
    ) as c:
        reply = await c.messages.create(model="m", max_tokens=64, messages=cast("Any", history))
    text = "".join(b.text for b in reply.content if b.type == "text")
    return text, [{"role": "assistant", "content": [b.model_dump() for b in reply.content]}]


async def _conversations(base_url: str, ask: Ask) -> list[str]:
    """Conversation A, then B (not a continuation of A), then A again (continues A), then C."""
    a = [{"role": "user", "content": "first question"}]
    first, items = await ask(base_url, a)
    second, _ = await ask(base_url, [{"role": "user", "content": "an unrelated question"}])
    third, _ = await ask(base_url, [*a, *items, {"role": "user", "content": "a follow-up"}])
    fourth, _ = await ask(base_url, [{"role": "user", "content": "a third topic"}])
    return [first, second, third, fourth]


DIALECTS: dict[str, tuple[Ask, Callable[[], Any]]] = {
    "chat": (_chat, lambda: OpenAICompatServer(handler=_chat_upstream)),
    "responses": (_responses, lambda: Upstream(responses_script)),
    "messages": (_messages, lambda: Upstream(messages_script)),
}


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
async def test_one_key_many_conversations_record_every_message_and_replay_green(
    dialect: str, tmp_path: Path
) -> None:
    ask, upstream_of = DIALECTS[dialect]
    directory = tmp_path / "rec"
    async with upstream_of() as upstream, RecordServer(upstream.base_url, directory) as proxy:
        recorded = await _conversations(proxy.base_url, ask)
    logs = "".join(p.read_text() for p in sorted(directory.glob("session*.jsonl")))
    for prompt in ("first question", "an unrelated question", "a follow-up", "a third topic"):
        assert prompt in logs  # no user message lost
    async with ReplayServer(directory) as server:
        replayed = await _conversations(server.base_url, ask)
        report = server.report()
    assert report["ok"], report
    assert replayed == recorded
    assert {s["clientKey"] for s in report["sessions"]} == {"one-key"}
