"""OpenAICompatModel against the local server over real HTTP: responses and request bodies."""

from __future__ import annotations

from typing import Any

import pytest

from dsh.errors import MissingCredentialError
from dsh.events import chunks as ck
from dsh.events.chunks import Usage
from dsh.events.messages import Message, assistant_message, tool_result_message, user_message
from dsh.model.base import Model
from dsh.model.openai_compat import OpenAICompatModel
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import (
    CRLF_STYLE,
    DEEPSEEK_STYLE,
    OPENAI_STYLE,
    WireStyle,
    WireToolCall,
    raw_stream,
    stream_reply,
    wire_usage,
)

from .conftest import KEY, assemble, check_stream_shape, collect, failure, request


async def test_text_reply_chunks_and_request(server: OpenAICompatServer, model: OpenAICompatModel) -> None:
    server.enqueue(stream_reply(text=["Hel", "lo", "!"], usage=wire_usage(9, 3)))
    chunks = await collect(model)
    assert chunks == [
        ck.block_start(0, "text"),
        ck.text_delta(0, "Hel"),
        ck.text_delta(0, "lo"),
        ck.text_delta(0, "!"),
        ck.block_end(0, {"type": "text", "text": "Hello!"}),
        ck.usage_chunk({"inputTokens": 9, "outputTokens": 3}),
        ck.finish("stop"),
    ]
    (recorded,) = server.requests
    assert recorded.path == "/v1/chat/completions"
    assert recorded.headers["authorization"] == f"Bearer {KEY}"
    assert recorded.headers["accept"] == "text/event-stream"
    assert recorded.json == {
        "model": "test-model",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_reasoning_then_text(server: OpenAICompatServer, model: OpenAICompatModel) -> None:
    # The role chunk carries reasoning_content "" and content null: neither opens a block.
    server.enqueue(stream_reply(reasoning=["Let me ", "think."], text=["Four."]))
    chunks = await collect(model)
    check_stream_shape(chunks)
    assert chunks[:5] == [
        ck.block_start(0, "reasoning"),
        ck.reasoning_delta(0, "Let me "),
        ck.reasoning_delta(0, "think."),
        ck.block_start(1, "text"),
        ck.text_delta(1, "Four."),
    ]
    result = assemble(chunks)
    assert result.content == [
        {"type": "reasoning", "text": "Let me think."},
        {"type": "text", "text": "Four."},
    ]
    assert result.finish_kind == "stop"


async def test_tool_calls_split_over_deltas_reassemble_exactly(
    server: OpenAICompatServer, model: OpenAICompatModel
) -> None:
    args_a = '{"file_path": "src/app.py", "offset": 10, "limit": 200}'
    args_b = '{"command": "echo \\"hi\\" && ls -la", "description": "list"}'
    server.enqueue(
        stream_reply(
            reasoning="plan",
            text="Reading.",
            tool_calls=[
                WireToolCall.split("call_a", "read", args_a, 5),
                WireToolCall.split("call_b", "bash", args_b, 4),
            ],
        )
    )
    chunks = await collect(model)
    check_stream_shape(chunks)
    deltas = [c for c in chunks if c["type"] == "tool-call-delta"]
    assert len(deltas) == 9
    # id and name arrive only on the first wire delta, but every harness delta carries them.
    assert all(d["id"] == "call_a" and d["name"] == "read" for d in deltas[:5])
    assert all(d["id"] == "call_b" and d["name"] == "bash" for d in deltas[5:])
    assert [c["index"] for c in chunks if c["type"] == "block-end"] == [0, 1, 2, 3]
    result = assemble(chunks)
    assert result.finish_kind == "tool-calls"
    assert result.tool_calls == [
        {"type": "tool-call", "id": "call_a", "name": "read", "arguments": args_a},
        {"type": "tool-call", "id": "call_b", "name": "bash", "arguments": args_b},
    ]


async def test_tool_call_id_arriving_late_is_empty_until_known(
    server: OpenAICompatServer, model: OpenAICompatModel
) -> None:
    def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        return {
            "id": "x",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
        }

    server.enqueue(
        raw_stream(
            [
                chunk({"tool_calls": [{"index": 3, "function": {"arguments": '{"a"'}}]}),
                chunk(
                    {
                        "tool_calls": [
                            {"index": 3, "id": "late", "function": {"name": "f", "arguments": ":1}"}}
                        ]
                    }
                ),
                chunk({}, "tool_calls"),
            ]
        )
    )
    chunks = await collect(model)
    assert chunks[:3] == [
        ck.block_start(0, "tool-call"),
        ck.tool_call_delta(0, "", None, '{"a"'),
        ck.tool_call_delta(0, "late", "f", ":1}"),
    ]
    assert assemble(chunks).tool_calls == [
        {"type": "tool-call", "id": "late", "name": "f", "arguments": '{"a":1}'}
    ]


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        (wire_usage(100, 20), {"inputTokens": 100, "outputTokens": 20}),
        (wire_usage(100, 20, cached=64), {"inputTokens": 36, "outputTokens": 20, "cacheReadTokens": 64}),
        (
            wire_usage(100, 20, cached=30, deepseek_cache_fields=True),
            {"inputTokens": 70, "outputTokens": 20, "cacheReadTokens": 30},
        ),
        (
            wire_usage(50, 40, cached=0, reasoning=25),
            {"inputTokens": 50, "outputTokens": 40, "cacheReadTokens": 0, "reasoningTokens": 25},
        ),
        (
            {
                "prompt_tokens": 80,
                "completion_tokens": 2,
                "prompt_tokens_details": {"cached_tokens": None},
                "prompt_cache_hit_tokens": 16,
            },
            {"inputTokens": 64, "outputTokens": 2, "cacheReadTokens": 16},
        ),
    ],
)
async def test_usage_mapping(
    server: OpenAICompatServer, model: OpenAICompatModel, wire: dict[str, Any], expected: Usage
) -> None:
    server.enqueue(stream_reply(text="ok", usage=wire))
    chunks = await collect(model)
    assert chunks[-2] == ck.usage_chunk(expected)
    assert assemble(chunks).usage == expected


async def test_no_usage_means_no_usage_chunk(server: OpenAICompatServer, model: OpenAICompatModel) -> None:
    server.enqueue(stream_reply(text="ok", usage=None))
    chunks = await collect(model)
    assert [c["type"] for c in chunks] == ["block-start", "text-delta", "block-end", "finish"]


async def test_latest_usage_wins(server: OpenAICompatServer, model: OpenAICompatModel) -> None:
    base = {"id": "x", "object": "chat.completion.chunk"}
    server.enqueue(
        raw_stream(
            [
                {**base, "choices": [{"index": 0, "delta": {"content": "a"}}], "usage": wire_usage(1, 1)},
                {
                    **base,
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    "usage": wire_usage(7, 2),
                },
            ]
        )
    )
    chunks = await collect(model)
    assert chunks[-2] == ck.usage_chunk({"inputTokens": 7, "outputTokens": 2})


@pytest.mark.parametrize(
    ("reason", "kind", "code"),
    [
        ("stop", "stop", None),
        ("tool_calls", "tool-calls", None),
        ("length", "max-tokens", None),
        ("content_filter", "error", "CONTENT_FILTER"),
        ("insufficient_system_resource", "error", "INSUFFICIENT_SYSTEM_RESOURCE"),
    ],
)
async def test_finish_reason_mapping(
    server: OpenAICompatServer, model: OpenAICompatModel, reason: str, kind: str, code: str | None
) -> None:
    server.enqueue(stream_reply(text="partial", finish_reason=reason))
    chunks = await collect(model)
    check_stream_shape(chunks)
    last = chunks[-1]
    assert last["type"] == "finish" and last["reason"]["kind"] == kind
    if code is not None:
        assert failure(chunks) == {"code": code, "message": f"model stopped: {reason}"}
    assert assemble(chunks).content == [{"type": "text", "text": "partial"}]


async def test_length_finish_drops_tool_calls_when_assembled(
    server: OpenAICompatServer, model: OpenAICompatModel
) -> None:
    server.enqueue(
        stream_reply(
            text="t", tool_calls=[WireToolCall.split("c", "read", '{"file_pa', 2)], finish_reason="length"
        )
    )
    result = assemble(await collect(model))
    assert result.finish_kind == "max-tokens"
    assert result.content == [{"type": "text", "text": "t"}]


@pytest.mark.parametrize("reason", ["stop", "tool_calls", "length"])
async def test_zero_blocks_is_empty_response(
    server: OpenAICompatServer, model: OpenAICompatModel, reason: str
) -> None:
    server.enqueue(stream_reply(text=["", ""], reasoning=[""], finish_reason=reason))
    chunks = await collect(model)
    assert [c["type"] for c in chunks] == ["usage", "finish"]
    assert failure(chunks)["code"] == "EMPTY_RESPONSE"


STYLES = {
    "deepseek": DEEPSEEK_STYLE,
    "crlf-multiline-fragmented": CRLF_STYLE,
    "cr-only": WireStyle(line_ending="\r", fragment=3),
    "finish-on-last-delta-usage-last": WireStyle(finish_on_last_delta=True, usage="last", null_usage=False),
    "keepalive-no-role-chunk": WireStyle(keepalive=True, role_chunk=False),
    "repeat-ids-multiline": WireStyle(repeat_tool_ids=True, multiline_data=True, fragment=1),
}


@pytest.mark.parametrize("style", STYLES.values(), ids=STYLES.keys())
async def test_wire_variants_yield_identical_chunks(
    server: OpenAICompatServer, model: OpenAICompatModel, style: WireStyle
) -> None:
    def reply(wire_style: WireStyle) -> Any:
        return stream_reply(
            reasoning=["r1", "r2"],
            text=["Ünïcødé ", "text\nwith lines"],
            tool_calls=[
                WireToolCall.split("c1", "edit", '{"file_path":"a.py","old_string":"x","new_string":"y"}', 4),
                WireToolCall.split("c2", "glob", '{"pattern":"**/*.py"}', 3),
            ],
            usage=wire_usage(40, 12, cached=8, reasoning=4),
            style=wire_style,
        )

    server.enqueue(reply(OPENAI_STYLE), reply(style))
    baseline = await collect(model)
    variant = await collect(model)
    check_stream_shape(variant)
    assert variant == baseline
    assert assemble(variant).finish_kind == "tool-calls"


async def test_reasoning_field_variant(server: OpenAICompatServer, model: OpenAICompatModel) -> None:
    # Some OpenAI-compatible servers (vLLM, OpenRouter) call it "reasoning".
    base = {"id": "x", "object": "chat.completion.chunk"}
    server.enqueue(
        raw_stream(
            [
                {**base, "choices": [{"index": 0, "delta": {"reasoning": "hmm"}}]},
                {**base, "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]},
            ]
        )
    )
    assert assemble(await collect(model)).content == [
        {"type": "reasoning", "text": "hmm"},
        {"type": "text", "text": "ok"},
    ]


def _no_nulls(value: Any, path: str = "body") -> None:
    assert value is not None, f"null at {path}"
    if isinstance(value, dict):
        for k, v in value.items():
            _no_nulls(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _no_nulls(v, f"{path}[{i}]")


async def test_history_mapping_in_the_request_body(
    server: OpenAICompatServer, model: OpenAICompatModel
) -> None:
    history: list[Message] = [
        user_message("read a.py"),
        assistant_message(
            [
                {"type": "reasoning", "text": "I should "},
                {"type": "reasoning", "text": "read it."},
                {"type": "tool-call", "id": "c1", "name": "read", "arguments": '{"file_path":"a.py"}'},
                {"type": "tool-call", "id": "c2", "name": "bash", "arguments": '{"command":"true"}'},
            ],
            provider="deepseek",
            model="deepseek-chat",
        ),
        tool_result_message("c1", [{"type": "text", "text": "print(1)"}], is_error=False),
        tool_result_message("c2", [], is_error=False),
        assistant_message([{"type": "reasoning", "text": "only thinking"}], provider="deepseek", model="m"),
        assistant_message(
            [{"type": "text", "text": "Done: "}, {"type": "text", "text": "1"}], provider="p", model="m"
        ),
        {
            "role": "user",
            "source": {"kind": "tool", "callId": "c3"},
            "id": "m-7",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "c3",
                    "content": [{"type": "text", "text": "Error: boom"}],
                    "isError": True,
                },
                {"type": "text", "text": "and also this"},
            ],
        },
    ]
    tools: list[dict[str, Any]] = [
        {
            "name": "read",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}},
        },
        {"name": "noargs", "description": "No arguments."},
    ]
    server.enqueue(stream_reply(text="ok"))
    await collect(model, request(history, system="You are terse.", tools=tools, max_tokens=512))
    body = server.requests[0].json
    _no_nulls(body)
    assert body["max_tokens"] == 512
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "read", "description": "Read a file.", "parameters": tools[0]["parameters"]},
        },
        {
            "type": "function",
            "function": {
                "name": "noargs",
                "description": "No arguments.",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "read a.py"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "I should read it.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"file_path":"a.py"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command":"true"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
        {"role": "tool", "tool_call_id": "c2", "content": "(no output)"},
        {"role": "assistant", "content": "", "reasoning_content": "only thinking"},
        {"role": "assistant", "content": "Done: 1"},
        {"role": "tool", "tool_call_id": "c3", "content": "Error: boom"},
        {"role": "user", "content": "and also this"},
    ]


async def test_extra_body_is_sent_but_cannot_override_core_fields(server: OpenAICompatServer) -> None:
    server.enqueue(stream_reply(text="ok"))
    async with OpenAICompatModel(
        base_url=server.base_url,
        api_key=KEY,
        extra_body={
            "thinking": {"type": "enabled"},
            "reasoning_effort": "high",
            "stream": False,
            "model": "x",
        },
    ) as m:
        chunks = await collect(m, request(model="deepseek-reasoner"))
    assert chunks[-1] == ck.finish("stop")
    body = server.requests[0].json
    assert body["thinking"] == {"type": "enabled"} and body["reasoning_effort"] == "high"
    assert body["stream"] is True and body["model"] == "deepseek-reasoner"


async def test_default_model_and_missing_model(server: OpenAICompatServer) -> None:
    server.enqueue(stream_reply(text="ok"))
    async with OpenAICompatModel(base_url=server.base_url, api_key=KEY, default_model="dflt") as m:
        await collect(m, request(model=""))
    assert server.requests[0].json["model"] == "dflt"
    async with OpenAICompatModel(base_url=server.base_url, api_key=KEY) as m:
        chunks = await collect(m, request(model=""))
    assert failure(chunks)["code"] == "BAD_REQUEST"
    assert len(server.requests) == 1


def test_missing_key_is_a_usage_error() -> None:
    with pytest.raises(MissingCredentialError, match="no API key"):
        OpenAICompatModel(base_url="http://127.0.0.1:9/v1", api_key="")


async def test_satisfies_the_model_protocol(model: OpenAICompatModel) -> None:
    assert isinstance(model, Model)
    assert model.provider == "deepseek"
