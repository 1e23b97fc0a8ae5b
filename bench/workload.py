"""The dsh side of the workloads: chunk lists a model adapter yields, turn events, a lean model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from bench.common import Conversation
from dsh.events import chunks as ck
from dsh.events.chunks import Chunk
from dsh.events.messages import assistant_message, user_message
from dsh.events.vocabulary import (
    ASSISTANT_MESSAGE,
    REQUEST_HEADER,
    STEP_END,
    STEP_START,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
)
from dsh.model import ModelRequest
from dsh.session import Session

MODEL = "bench-model"
PROVIDER = "bench"
USAGE: dict[str, int] = {"inputTokens": 120, "outputTokens": 80}


def reply_chunks(deltas: Sequence[str]) -> list[Chunk]:
    """What an adapter yields for one text reply: block-start, the deltas, block-end, usage, finish."""
    text = "".join(deltas)
    return [
        ck.block_start(0, "text"),
        *(ck.text_delta(0, d) for d in deltas),
        ck.block_end(0, {"type": "text", "text": text}),
        ck.usage_chunk(USAGE),  # type: ignore[arg-type]
        ck.finish("stop"),
    ]


def all_reply_chunks(conv: Conversation) -> list[list[Chunk]]:
    return [reply_chunks(d) for d in conv.deltas]


def append_turn(session: Session, conv: Conversation, i: int, chunks: list[Chunk]) -> None:
    """Append turn ``i`` exactly as the loop logs it (one step, one settlement with its stream)."""
    turn = i + 1
    session.append(TURN_START, {"turn": turn})
    session.append(STEP_START, {"turn": turn, "step": 1})
    session.append(USER_MESSAGE, user_message(conv.users[i]))
    if i == 0:
        header = {"config": {"provider": PROVIDER, "model": MODEL}, "system": "You are a benchmark."}
        session.append(REQUEST_HEADER, {"header": header, "reason": "initial"})
    message = assistant_message([chunks[-3]["block"]], provider=PROVIDER, model=MODEL)
    data: dict[str, Any] = {"turn": turn, "step": 1, "message": message, "usage": USAGE}
    data["stream"] = {"chunks": chunks, "dt": conv.gaps[i]}
    session.append(ASSISTANT_MESSAGE, data)
    session.append(STEP_END, {"turn": turn, "step": 1})
    session.append(TURN_END, {"turn": turn, "reason": {"kind": "completed"}})


class LeanModel:
    """A ``Model`` that yields pre-built chunk dicts, one list per call (what an adapter does).

    Unlike ``ScriptedModel`` it does not deep-copy each chunk, so the bench measures the loop,
    not the test double.
    """

    def __init__(self, scripts: Sequence[Sequence[Chunk]], provider: str = PROVIDER) -> None:
        self._scripts = scripts
        self._provider = provider
        self.calls = 0

    @property
    def provider(self) -> str:
        return self._provider

    async def aclose(self) -> None:
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        script = self._scripts[self.calls]
        self.calls += 1
        for chunk in script:
            yield chunk
