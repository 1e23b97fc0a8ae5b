"""ScriptedModel: a ``Model`` that serves scripted chunk lists per call and records requests.

Scripts are lists of chunks (see ``dsh.events.chunks``) plus two markers: :class:`Pause`
(sleep before the next chunk) and :data:`HANG` (stop and wait until the caller cancels).
The builders at the bottom produce the canonical chunk lists an adapter would yield for
common replies.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dsh import jsonx
from dsh.errors import ScriptExhaustedError
from dsh.events import chunks as ck
from dsh.events.chunks import Chunk, Usage
from dsh.events.messages import Block
from dsh.model.base import ModelRequest


@dataclass(frozen=True, slots=True)
class Pause:
    """Sleep ``seconds`` before the next chunk."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Hang:
    """Stop yielding and wait until the consuming task is cancelled."""


HANG: Final = Hang()

ScriptEntry = Chunk | Pause | Hang
Script = Sequence[ScriptEntry]
ScriptSource = Sequence[Script] | Callable[[ModelRequest, int], Script]
"""A list of scripts (one per call, in order) or ``(request, call_index) -> script``."""

DEFAULT_USAGE: Final[Usage] = {"inputTokens": 10, "outputTokens": 5}


class ScriptedModel:
    """Serves one script per ``stream`` call; ``requests`` records every request received.

    ``delay`` sleeps before every chunk. Chunks are deep-copied as they are yielded, so a
    consumer may mutate them. A call beyond the last script raises
    :class:`~dsh.errors.ScriptExhaustedError`.
    """

    def __init__(
        self,
        scripts: ScriptSource,
        *,
        provider: str = "scripted",
        delay: float = 0.0,
        model: str | None = None,
    ) -> None:
        self._model_name = model
        self._scripts = scripts if callable(scripts) else [list(s) for s in scripts]
        self._provider = provider
        self._delay = delay
        self.requests: list[ModelRequest] = []

    @property
    def provider(self) -> str:
        return self._provider

    async def aclose(self) -> None:
        """Nothing to release."""

    @property
    def model_name(self) -> str | None:
        """The model id an agent uses when its config names none (``model=``)."""
        return self._model_name

    @property
    def calls(self) -> int:
        """How many ``stream`` calls have started."""
        return len(self.requests)

    @property
    def remaining(self) -> int | None:
        """Scripts not served yet (``None`` for a callable source)."""
        if callable(self._scripts):
            return None
        return max(0, len(self._scripts) - self.calls)

    def __repr__(self) -> str:
        return f"ScriptedModel(provider={self._provider!r}, calls={self.calls}, remaining={self.remaining})"

    def _script(self, request: ModelRequest, index: int) -> Script:
        if callable(self._scripts):
            return self._scripts(request, index)
        if index >= len(self._scripts):
            raise ScriptExhaustedError(
                f"ScriptedModel: call #{index + 1} (session {request.session_id}) but only "
                f"{len(self._scripts)} script(s) were given; add a script for this call"
            )
        return self._scripts[index]

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        index = len(self.requests)
        self.requests.append(request)
        for entry in self._script(request, index):
            if isinstance(entry, Hang):
                await asyncio.Event().wait()
            elif isinstance(entry, Pause):
                await asyncio.sleep(entry.seconds)
            else:
                if self._delay:
                    await asyncio.sleep(self._delay)
                yield copy.deepcopy(entry)


def _pieces(text: str, count: int) -> list[str]:
    count = max(1, min(count, len(text)))
    size, extra = divmod(len(text), count)
    out, pos = [], 0
    for i in range(count):
        end = pos + size + (1 if i < extra else 0)
        out.append(text[pos:end])
        pos = end
    return out


def _tail(usage: Usage | None, finish: Chunk) -> list[Chunk]:
    tail: list[Chunk] = [] if usage is None else [ck.usage_chunk(usage)]
    return [*tail, finish]


def text_reply(
    text: str, *, deltas: int = 1, reasoning: str | None = None, usage: Usage | None = DEFAULT_USAGE
) -> list[Chunk]:
    """A text answer (``deltas`` pieces), optionally after a reasoning block, ending ``stop``."""
    out: list[Chunk] = []
    blocks: list[Block] = []
    if reasoning is not None:
        out += [ck.block_start(0, "reasoning"), ck.reasoning_delta(0, reasoning)]
        blocks.append({"type": "reasoning", "text": reasoning})
    index = len(blocks)
    out.append(ck.block_start(index, "text"))
    out += [ck.text_delta(index, piece) for piece in _pieces(text, deltas)]
    blocks.append({"type": "text", "text": text})
    out += [ck.block_end(i, b) for i, b in enumerate(blocks)]
    return out + _tail(usage, ck.finish("stop"))


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call for :func:`tool_calls_reply`; ``arguments`` is raw JSON or a dict."""

    call_id: str
    name: str
    arguments: str | dict[str, Any]

    @property
    def raw_arguments(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return jsonx.dumps_compact_text(self.arguments)


def tool_calls_reply(
    calls: Sequence[Call], *, text: str | None = None, split: int = 1, usage: Usage | None = DEFAULT_USAGE
) -> list[Chunk]:
    """Optional text, then each call's arguments in ``split`` deltas, ending ``tool-calls``."""
    out: list[Chunk] = []
    ends: list[Chunk] = []
    if text is not None:
        out += [ck.block_start(0, "text"), ck.text_delta(0, text)]
        ends.append(ck.block_end(0, {"type": "text", "text": text}))
    for call in calls:
        index = len(ends)
        raw = call.raw_arguments
        out.append(ck.block_start(index, "tool-call"))
        out += [ck.tool_call_delta(index, call.call_id, call.name, part) for part in _pieces(raw, split)]
        block: Block = {"type": "tool-call", "id": call.call_id, "name": call.name, "arguments": raw}
        ends.append(ck.block_end(index, block))
    return out + ends + _tail(usage, ck.finish("tool-calls"))


def tool_call_reply(
    call_id: str,
    name: str,
    arguments: str | dict[str, Any],
    *,
    split: int = 1,
    usage: Usage | None = DEFAULT_USAGE,
) -> list[Chunk]:
    """One tool call whose arguments arrive in ``split`` deltas, ending ``tool-calls``."""
    return tool_calls_reply([Call(call_id, name, arguments)], split=split, usage=usage)


def error_reply(code: str, message: str, *, partial_text: str | None = None) -> list[Chunk]:
    """An optional partial text block (no ``block-end``), then an error ``finish``."""
    out: list[Chunk] = []
    if partial_text is not None:
        out += [ck.block_start(0, "text"), ck.text_delta(0, partial_text)]
    return [*out, ck.error_finish(code, message)]


def hang_reply(partial_text: str = "") -> list[ScriptEntry]:
    """A partial text block, then :data:`HANG` (the call only ends by cancellation)."""
    out: list[ScriptEntry] = []
    if partial_text:
        out += [ck.block_start(0, "text"), ck.text_delta(0, partial_text)]
    return [*out, HANG]
