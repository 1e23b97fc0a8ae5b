"""Scripted upstreams for the Responses and Messages dialects: real HTTP servers on 127.0.0.1
(dsh serve's own HTTP layer) answering the way OpenAI's and Anthropic's APIs do.

Each upstream decides its reply from the request (a tool result last → the final text,
else a tool call when tools are offered, else text), streams it as the provider's named SSE
events (paced a little, so the recorded gaps are real) or returns it whole, and keeps every
request's headers and body so a test can see what reached it. ``cut`` makes the next
streamed reply stop half-way (no terminal event).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dsh.http1 import Request
from dsh.serve.http import HttpServer, Reply

Event = tuple[str, dict[str, Any]]


class Upstream:
    """A scripted provider; ``script(body) -> (events, whole_body)``."""

    def __init__(self, script: Callable[[dict[str, Any]], tuple[list[Event], dict[str, Any]]]) -> None:
        self.script = script
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.targets: list[str] = []
        """Each request's path and query, as received."""
        self.cut = False
        self.http = HttpServer(self._handle, name="scripted upstream")

    @property
    def base_url(self) -> str:
        return self.http.base_url

    async def start(self) -> None:
        await self.http.start()

    async def close(self) -> None:
        await self.http.close()

    async def __aenter__(self) -> Upstream:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def report(self) -> dict[str, Any]:
        return {"requests": len(self.requests)}

    async def _handle(self, request: Request) -> Reply:
        body = json.loads(request.body)
        self.requests.append((dict(request.headers), body))
        self.targets.append(request.path + (f"?{request.query}" if request.query else ""))
        events, whole = self.script(body)
        if not body.get("stream"):
            return Reply(200, json.dumps(whole).encode())
        if self.cut:
            self.cut = False
            events = events[: len(events) // 2]
        pieces = [(0.002, f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()) for name, data in events]
        return Reply(200, content_type="text/event-stream", paced=pieces)


# -- the OpenAI Responses API ----------------------------------------------------------------


def _response(rid: str, model: str, output: list[dict[str, Any]], status: str) -> dict[str, Any]:
    return {
        "id": rid,
        "object": "response",
        "created_at": 1764470400,
        "status": status,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 31,
            "input_tokens_details": {"cached_tokens": 4},
            "output_tokens": 9,
            "output_tokens_details": {"reasoning_tokens": 2},
            "total_tokens": 40,
        },
    }


def responses_script(body: dict[str, Any]) -> tuple[list[Event], dict[str, Any]]:
    """Reasoning, then a ``lookup_capital`` call when tools are offered and no result came
    back yet; else reasoning and a text answer. Response ids count the requests made."""
    items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
    n = sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output")
    rid = f"resp_{len(items)}_{n}_{'p' if body.get('previous_response_id') else 'x'}"
    model = body.get("model", "m")
    reasoning = {
        "id": f"rs_{rid}",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Thinking."}],
        "encrypted_content": "enc-abc",
    }
    last = items[-1] if items else {}
    if body.get("tools") and not (isinstance(last, dict) and last.get("type") == "function_call_output"):
        args = '{"country": "France"}'
        item: dict[str, Any] = {
            "id": f"fc_{rid}",
            "type": "function_call",
            "status": "completed",
            "call_id": f"call_{rid}",
            "name": "lookup_capital",
            "arguments": args,
        }
        deltas = ['{"country"', ': "France"}']
        middle: list[Event] = [
            (
                "response.output_item.added",
                {"output_index": 1, "item": {**item, "arguments": "", "status": "in_progress"}},
            ),
            *[
                (
                    "response.function_call_arguments.delta",
                    {"item_id": item["id"], "output_index": 1, "delta": d},
                )
                for d in deltas
            ],
            (
                "response.function_call_arguments.done",
                {"item_id": item["id"], "output_index": 1, "arguments": args},
            ),
            ("response.output_item.done", {"output_index": 1, "item": item}),
        ]
    else:
        text = ["The capital ", "of France ", "is Paris."]
        part: dict[str, Any] = {"type": "output_text", "text": "".join(text), "annotations": []}
        item = {
            "id": f"msg_{rid}",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [part],
        }
        where = {"item_id": item["id"], "output_index": 1, "content_index": 0}
        middle = [
            (
                "response.output_item.added",
                {"output_index": 1, "item": {**item, "content": [], "status": "in_progress"}},
            ),
            ("response.content_part.added", {**where, "part": {**part, "text": ""}}),
            *[("response.output_text.delta", {**where, "delta": t, "logprobs": []}) for t in text],
            ("response.output_text.done", {**where, "text": "".join(text), "logprobs": []}),
            ("response.content_part.done", {**where, "part": part}),
            ("response.output_item.done", {"output_index": 1, "item": item}),
        ]
    done = _response(rid, model, [reasoning, item], "completed")
    events: list[Event] = [
        ("response.created", {"response": _response(rid, model, [], "in_progress")}),
        ("response.in_progress", {"response": _response(rid, model, [], "in_progress")}),
        ("response.output_item.added", {"output_index": 0, "item": {**reasoning, "summary": []}}),
        ("response.output_item.done", {"output_index": 0, "item": reasoning}),
        *middle,
        ("response.completed", {"response": done}),
    ]
    return [
        (name, {"type": name, "sequence_number": i, **data}) for i, (name, data) in enumerate(events)
    ], done


# -- the Anthropic Messages API --------------------------------------------------------------


def messages_script(body: dict[str, Any]) -> tuple[list[Event], dict[str, Any]]:
    """A thinking block (with its signature), then a ``lookup_capital`` tool use when tools are
    offered and no tool result came back yet; else thinking and a text answer."""
    last = body["messages"][-1]
    content = last.get("content")
    answered = isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)
    mid = f"msg_{len(body['messages'])}"
    thinking = {"type": "thinking", "thinking": "Let me think.", "signature": "sig-XYZ=="}
    start = {
        "id": mid,
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "m"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1, "cache_read_input_tokens": 3},
    }
    events: list[Event] = [
        ("message_start", {"message": start}),
        (
            "content_block_start",
            {"index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        ),
        ("ping", {}),
        ("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "think."}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "signature_delta", "signature": "sig-XYZ=="}}),
        ("content_block_stop", {"index": 0}),
    ]
    if body.get("tools") and not answered:
        use = {
            "type": "tool_use",
            "id": f"toolu_{mid}",
            "name": "lookup_capital",
            "input": {"country": "France"},
        }
        events += [
            ("content_block_start", {"index": 1, "content_block": {**use, "input": {}}}),
            (
                "content_block_delta",
                {"index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"country"'}},
            ),
            (
                "content_block_delta",
                {"index": 1, "delta": {"type": "input_json_delta", "partial_json": ': "France"}'}},
            ),
            ("content_block_stop", {"index": 1}),
        ]
        final, stop = [thinking, use], "tool_use"
    else:
        text = ["The capital ", "of France ", "is Paris."]
        events += [
            ("content_block_start", {"index": 1, "content_block": {"type": "text", "text": ""}}),
            *[
                ("content_block_delta", {"index": 1, "delta": {"type": "text_delta", "text": t}})
                for t in text
            ],
            ("content_block_stop", {"index": 1}),
        ]
        final, stop = [thinking, {"type": "text", "text": "".join(text)}], "end_turn"
    events += [
        (
            "message_delta",
            {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 17}},
        ),
        ("message_stop", {}),
    ]
    whole = {**start, "content": final, "stop_reason": stop, "usage": {**start["usage"], "output_tokens": 17}}
    return [(name, {"type": name, **data}) for name, data in events], whole
