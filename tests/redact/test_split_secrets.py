"""A secret an upstream streams split across two SSE deltas (Responses or Messages) is not
kept in ``dsh serve record``'s files, not even as two halves, and the recording still
replays; ``dsh scenario scan`` joins a stream's deltas and flags a planted split secret."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from dsh.redact.scan import scan
from dsh.serve.record import RecordServer
from dsh.serve.replay import ReplayServer
from tests.serve.dialect_upstreams import Event, Upstream

TOKEN = "ghp_" + "S1p2l3i4t5A6c7r8o9s0s1D2e3l4t5a6s7X8"
HALVES = (TOKEN[:12], TOKEN[12:])
TEXT = ["Stored ", HALVES[0], HALVES[1], " safely."]


def _responses(body: dict[str, Any]) -> tuple[list[Event], dict[str, Any]]:
    """Reasoning summary, text and a function call's arguments, each with the token split."""
    args = ['{"token": "', HALVES[0], HALVES[1], '"}']
    text = {"type": "output_text", "text": "".join(TEXT), "annotations": []}
    message = {
        "id": "msg_1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [text],
    }
    call = {
        "id": "fc_1",
        "type": "function_call",
        "status": "completed",
        "call_id": "call_1",
        "name": "store",
        "arguments": "".join(args),
    }
    summary = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "".join(TEXT)}],
    }
    done = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "m",
        "output": [summary, message, call],
        "usage": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8},
    }
    where = {"item_id": "msg_1", "output_index": 1, "content_index": 0}
    events: list[Event] = [
        ("response.created", {"response": {**done, "status": "in_progress", "output": []}}),
        ("response.output_item.added", {"output_index": 0, "item": {**summary, "summary": []}}),
        *[
            (
                "response.reasoning_summary_text.delta",
                {"item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": t},
            )
            for t in TEXT
        ],
        ("response.output_item.done", {"output_index": 0, "item": summary}),
        ("response.output_item.added", {"output_index": 1, "item": {**message, "content": []}}),
        *[("response.output_text.delta", {**where, "delta": t}) for t in TEXT],
        ("response.output_text.done", {**where, "text": "".join(TEXT)}),
        ("response.output_item.done", {"output_index": 1, "item": message}),
        ("response.output_item.added", {"output_index": 2, "item": {**call, "arguments": ""}}),
        *[
            ("response.function_call_arguments.delta", {"item_id": "fc_1", "output_index": 2, "delta": d})
            for d in args
        ],
        ("response.output_item.done", {"output_index": 2, "item": call}),
        ("response.completed", {"response": done}),
    ]
    return [(n, {"type": n, "sequence_number": i, **d}) for i, (n, d) in enumerate(events)], done


def _messages(body: dict[str, Any]) -> tuple[list[Event], dict[str, Any]]:
    """Thinking, text and a tool use's input JSON, each with the token split."""
    start: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    parts = ['{"token": "', HALVES[0], HALVES[1], '"}']

    def deltas(index: int, kind: str, field: str, pieces: list[str]) -> list[Event]:
        return [("content_block_delta", {"index": index, "delta": {"type": kind, field: p}}) for p in pieces]

    use = {"type": "tool_use", "id": "toolu_1", "name": "store", "input": {"token": TOKEN}}
    events: list[Event] = [
        ("message_start", {"message": start}),
        ("content_block_start", {"index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        *deltas(0, "thinking_delta", "thinking", TEXT),
        ("content_block_stop", {"index": 0}),
        ("content_block_start", {"index": 1, "content_block": {"type": "text", "text": ""}}),
        *deltas(1, "text_delta", "text", TEXT),
        ("content_block_stop", {"index": 1}),
        ("content_block_start", {"index": 2, "content_block": {**use, "input": {}}}),
        *deltas(2, "input_json_delta", "partial_json", parts),
        ("content_block_stop", {"index": 2}),
        ("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        ("message_stop", {}),
    ]
    whole = {**start, "content": [{"type": "text", "text": "".join(TEXT)}, use], "stop_reason": "tool_use"}
    return [(n, {"type": n, **d}) for n, d in events], whole


DIALECTS = {
    "responses": (_responses, "/responses", {"model": "m", "input": "Store it.", "stream": True}),
    "messages": (
        _messages,
        "/messages",
        {
            "model": "m",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "Store it."}],
            "stream": True,
        },
    ),
}


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
async def test_a_secret_split_across_sse_deltas_leaves_no_half_in_the_recording(
    dialect: str, tmp_path: Path
) -> None:
    script, path, body = DIALECTS[dialect]
    directory = tmp_path / "rec"
    async with (
        Upstream(script) as upstream,
        RecordServer(upstream.base_url, directory) as proxy,
        httpx.AsyncClient(timeout=30) as client,
    ):
        live = await client.post(proxy.base_url + path, json=body, headers={"x-api-key": "k"})
    assert live.status_code == 200 and HALVES[0] in live.text  # the client got the stream as sent
    kept = "".join(p.read_text() for p in directory.iterdir())
    assert "<secret:github-token:" in kept
    for half in HALVES:
        assert half not in kept
    assert scan([directory], environ={}) == []
    async with ReplayServer(directory) as server:  # the redacted stream still replays
        async with httpx.AsyncClient(timeout=30) as client:
            again = await client.post(server.base_url + path, json=body)
        assert server.report()["ok"], server.report()
    assert again.status_code == 200 and "<secret:github-token:" in again.text


def _planted(path: Path) -> None:
    """A recording line whose stream (dsh chunks) and wire (SSE events) split the token."""
    chunks = [{"type": "text-delta", "index": 0, "text": t} for t in TEXT]
    wire = [
        [
            "content_block_delta",
            json.dumps(
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
            ),
        ]
        for t in TEXT
    ]
    data = {
        "turn": 1,
        "step": 1,
        "message": {"role": "assistant", "content": []},
        "stream": {"chunks": chunks, "dt": [0, 0, 0]},
        "wire": {"events": wire, "dt": [0, 0, 0]},
    }
    line = {"type": "assistant/message", "seq": 3, "time": 1, "data": data}
    path.write_text("\n".join(["{}", json.dumps(line), ""]))


def test_scan_joins_a_streams_deltas_and_flags_a_split_secret(tmp_path: Path) -> None:
    _planted(tmp_path / "session.jsonl")
    hits = scan([tmp_path], environ={})
    assert [(h.path.name, h.line, h.kind) for h in hits] == [("session.jsonl", 2, "github-token")] * 2
