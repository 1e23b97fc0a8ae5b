"""Scripted responses for the test server: the Chat Completions streaming wire format and faults.

A :class:`Response` is a status line, headers and a list of :data:`Step` s the server plays
in order (write bytes, pause, stall, drop the connection, wait for concurrent requests or for
the test: :func:`held`).
The builders below produce the exact ``chat.completion.chunk`` SSE stream a provider sends
(:func:`stream_reply`, :func:`raw_stream`), JSON error replies (:func:`http_error`) and
the wire variants real providers differ in (:class:`WireStyle`), plus faults
(:class:`Faults`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Literal

from dsh import jsonx
from dsh.http1 import reason as reason_phrase


@dataclass(frozen=True, slots=True)
class Write:
    """Send these bytes (one HTTP chunk when the body is chunked)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait ``seconds`` before the next step."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Stall:
    """Send nothing for ``seconds`` (``None``: until the client closes; the server caps it)."""

    seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Drop:
    """Abort the connection here, without finishing the body."""


@dataclass(frozen=True, slots=True)
class AwaitInFlight:
    """Hold this response until ``count`` requests are in flight at once (bounded wait)."""

    count: int


@dataclass(frozen=True, slots=True)
class Hold:
    """Send nothing until the test sets ``release`` (bounded: the server's ``max_stall``), so
    a test sees what the client did with the bytes sent so far, without a sleep."""

    release: threading.Event


Step = Write | Pause | Stall | Drop | AwaitInFlight | Hold


def held(response: Response, after: int, release: threading.Event) -> Response:
    """``response`` holding (:class:`Hold`) after its first ``after`` writes."""
    steps = list(response.steps)
    writes = [i for i, step in enumerate(steps) if isinstance(step, Write)]
    steps.insert(writes[after - 1] + 1, Hold(release))
    return replace(response, steps=tuple(steps))


@dataclass(frozen=True, slots=True)
class Response:
    """One scripted HTTP response: what the server plays for one request."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    steps: tuple[Step, ...] = ()
    chunked: bool = True
    """Chunked transfer encoding (streams); otherwise a ``Content-Length`` body."""

    @property
    def reason(self) -> str:
        return reason_phrase(self.status)


@dataclass(frozen=True, slots=True)
class WireStyle:
    """How a provider frames an otherwise identical stream (the variants adapters must accept)."""

    line_ending: str = "\n"
    """``"\\n"``, ``"\\r\\n"`` or ``"\\r"``."""
    keepalive: bool = False
    """Send an SSE comment line (``: keep-alive``) before every event."""
    multiline_data: bool = False
    """Spread each chunk's JSON over several ``data:`` lines (joined with ``\\n`` by SSE)."""
    usage: Literal["trailing", "last"] = "trailing"
    """``trailing``: usage on an extra chunk with ``choices: []``; ``last``: on the final chunk."""
    finish_on_last_delta: bool = False
    """Put ``finish_reason`` on the chunk carrying the last delta instead of an empty-delta chunk."""
    repeat_tool_ids: bool = False
    """Repeat ``id``, ``type`` and ``function.name`` on every tool-call delta, not only the first."""
    null_usage: bool = True
    """Send ``"usage": null`` on chunks without usage (as OpenAI does)."""
    role_chunk: bool = True
    """Open with a ``{"role": "assistant", "content": ""}`` chunk."""
    fragment: int | None = None
    """Split every event's bytes into writes of at most this many bytes."""


OPENAI_STYLE = WireStyle()
DEEPSEEK_STYLE = WireStyle(usage="last", repeat_tool_ids=True, keepalive=True, null_usage=False)
"""DeepSeek: usage on the final chunk, id/name on every tool-call delta, keep-alive comments."""
CRLF_STYLE = WireStyle(line_ending="\r\n", multiline_data=True, finish_on_last_delta=True, fragment=7)


@dataclass(frozen=True, slots=True)
class Faults:
    """Faults injected into an otherwise well-formed stream (event numbers count from 0)."""

    drop_after: int | None = None
    """Abort the connection after this many SSE events."""
    malformed_at: int | None = None
    """Event number whose ``data:`` is replaced by invalid JSON."""
    stall_after: int | None = None
    """Stop sending after this many events ..."""
    stall_seconds: float | None = None
    """... for this long (``None``: until the client closes)."""
    omit_done: bool = False
    """End the body cleanly without the ``data: [DONE]`` sentinel."""
    keepalive_for: float | None = None
    """Before the first event, send only ``: keep-alive`` comments for this many seconds ..."""
    keepalive_every: float = 0.1
    """... one every this many seconds (bytes keep arriving, the answer does not)."""


@dataclass(frozen=True, slots=True)
class WireToolCall:
    """One streamed tool call: the arguments arrive in ``parts`` (one delta each)."""

    id: str
    name: str
    parts: tuple[str, ...] = ()

    @classmethod
    def split(cls, call_id: str, name: str, arguments: str, pieces: int = 3) -> WireToolCall:
        """The call with ``arguments`` cut into ``pieces`` roughly equal deltas."""
        return cls(call_id, name, tuple(split_text(arguments, pieces)))


DEFAULT_USAGE: Mapping[str, Any] = MappingProxyType({"prompt_tokens": 12, "completion_tokens": 5})


def wire_usage(
    prompt: int,
    completion: int,
    *,
    cached: int | None = None,
    reasoning: int | None = None,
    deepseek_cache_fields: bool = False,
) -> dict[str, Any]:
    """A wire ``usage`` object; DeepSeek reports cache hits as ``prompt_cache_hit_tokens``."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        if deepseek_cache_fields:
            usage["prompt_cache_hit_tokens"] = cached
            usage["prompt_cache_miss_tokens"] = prompt - cached
        else:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return usage


def split_text(text: str, pieces: int) -> list[str]:
    """Cut ``text`` into ``pieces`` consecutive non-empty parts (fewer if it is shorter)."""
    pieces = max(1, min(pieces, len(text)))
    if pieces <= 1:
        return [text]
    size, extra = divmod(len(text), pieces)
    out: list[str] = []
    pos = 0
    for i in range(pieces):
        end = pos + size + (1 if i < extra else 0)
        out.append(text[pos:end])
        pos = end
    return out


_AUTO = "auto"


def stream_reply(
    *,
    text: str | Sequence[str] = (),
    reasoning: str | Sequence[str] = (),
    tool_calls: Sequence[WireToolCall] = (),
    finish_reason: str | None = _AUTO,
    usage: Mapping[str, Any] | None = DEFAULT_USAGE,
    model: str = "test-model",
    style: WireStyle = OPENAI_STYLE,
    faults: Faults = Faults(),
    delay: float = 0.0,
    gate: int | None = None,
    completion_id: str = "chatcmpl-dsh-test",
) -> Response:
    """A streamed Chat Completions reply.

    Deltas come in provider order: a role chunk, reasoning, text, then each tool call
    (``id`` and ``name`` only on its first delta unless ``style.repeat_tool_ids``), then
    ``finish_reason`` (``"auto"``: ``tool_calls`` when there are calls, else ``stop``;
    ``None``: never sent), then usage, then ``[DONE]``.
    """
    texts = [text] if isinstance(text, str) else list(text)
    thoughts = [reasoning] if isinstance(reasoning, str) else list(reasoning)
    if finish_reason == _AUTO:
        finish_reason = "tool_calls" if tool_calls else "stop"
    deltas: list[dict[str, Any]] = []
    if style.role_chunk:
        if thoughts:
            deltas.append({"role": "assistant", "content": None, "reasoning_content": ""})
        else:
            deltas.append({"role": "assistant", "content": ""})
    deltas.extend({"reasoning_content": part} for part in thoughts)
    deltas.extend({"content": part} for part in texts)
    for index, call in enumerate(tool_calls):
        for n, part in enumerate(call.parts or ("",)):
            wire: dict[str, Any] = {"index": index}
            if n == 0 or style.repeat_tool_ids:
                wire.update({"id": call.id, "type": "function", "function": {"name": call.name}})
            wire.setdefault("function", {})["arguments"] = part
            deltas.append({"tool_calls": [wire]})

    def chunk(delta: dict[str, Any], reason: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": 1764470400,
            "model": model,
            "system_fingerprint": "fp_dsh_test",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}],
        }
        if style.null_usage:
            out["usage"] = None
        return out

    events: list[dict[str, Any]] = [chunk(d, None) for d in deltas]
    if finish_reason is not None:
        if style.finish_on_last_delta and events:
            events[-1]["choices"][0]["finish_reason"] = finish_reason
        else:
            events.append(chunk({}, finish_reason))
    if usage is not None:
        if style.usage == "last" and events:
            events[-1]["usage"] = dict(usage)
        else:
            trailing = chunk({}, None)
            trailing["choices"] = []
            trailing["usage"] = dict(usage)
            events.append(trailing)
    return raw_stream(events, style=style, faults=faults, delay=delay, gate=gate)


def raw_stream(
    events: Sequence[Mapping[str, Any] | str],
    *,
    style: WireStyle = OPENAI_STYLE,
    faults: Faults = Faults(),
    delay: float = 0.0,
    gate: int | None = None,
    status: int = 200,
    content_type: str = "text/event-stream; charset=utf-8",
) -> Response:
    """An SSE stream of arbitrary ``data:`` payloads (a mapping is sent as JSON, a str verbatim)."""
    eol = style.line_ending
    payloads: list[str] = [e if isinstance(e, str) else _dump(e, style) for e in events]
    if faults.malformed_at is not None and faults.malformed_at < len(payloads):
        payloads[faults.malformed_at] = '{"id": "chatcmpl-broken", "choices": [{"delta": {"content": "x"'
    if not faults.omit_done:
        payloads.append("[DONE]")
    steps: list[Step] = []
    if gate is not None:
        steps.append(AwaitInFlight(gate))
    if faults.keepalive_for is not None:
        beats = max(1, math.ceil(faults.keepalive_for / faults.keepalive_every))
        for _ in range(beats):
            steps += [Write(f": keep-alive{eol}{eol}".encode()), Pause(faults.keepalive_every)]
    for number, payload in enumerate(payloads):
        if faults.drop_after is not None and number == faults.drop_after:
            steps.append(Drop())
            break
        if faults.stall_after is not None and number == faults.stall_after:
            steps.append(Stall(faults.stall_seconds))
        if delay and number:
            steps.append(Pause(delay))
        event = "".join(f"data: {line}{eol}" for line in payload.split("\n")) + eol
        if style.keepalive:
            event = f": keep-alive{eol}{eol}" + event
        data = event.encode()
        size = style.fragment or len(data)
        steps.extend(Write(data[i : i + size]) for i in range(0, len(data), size))
    headers = (("Content-Type", content_type), ("Cache-Control", "no-cache"))
    return Response(status, headers, tuple(steps))


def _dump(event: Mapping[str, Any], style: WireStyle) -> str:
    if style.multiline_data:
        return jsonx.dumps_spaced_text(event, indent=1, ascii_only=False)
    return jsonx.dumps_compact_text(event)


def http_error(
    status: int,
    message: str = "scripted failure",
    *,
    error_type: str | None = None,
    code: str | None = None,
    retry_after: str | None = None,
    headers: Sequence[tuple[str, str]] = (),
    gate: int | None = None,
) -> Response:
    """A non-streamed JSON error reply ``{"error": {message, type, code, param}}``."""
    body = {"error": {"message": message, "type": error_type or "api_error", "code": code, "param": None}}
    extra = [*headers]
    if retry_after is not None:
        extra.append(("Retry-After", retry_after))
    return json_response(status, body, headers=extra, gate=gate)


def json_response(
    status: int,
    body: Any,
    *,
    headers: Sequence[tuple[str, str]] = (),
    gate: int | None = None,
) -> Response:
    """A plain ``application/json`` reply with a ``Content-Length`` body."""
    data = jsonx.dumps_spaced_text(body).encode()
    steps: list[Step] = [] if gate is None else [AwaitInFlight(gate)]
    steps.append(Write(data))
    all_headers = (("Content-Type", "application/json"), *headers)
    return Response(status, tuple(all_headers), tuple(steps), chunked=False)
