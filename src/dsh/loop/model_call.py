"""One model call: stream it, time every chunk, and settle it in the log."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from dsh.errors import DshError, StopRunError
from dsh.events import Assembled, BlockAssembler, Event
from dsh.events.chunks import Chunk, Failure, StreamRecord
from dsh.events.messages import assistant_message
from dsh.events.payloads import assistant_attempt_data, assistant_message_data
from dsh.events.vocabulary import ASSISTANT_ATTEMPT, ASSISTANT_MESSAGE
from dsh.model import Model, ModelRequest
from dsh.redact.streams import DELTA_FIELDS
from dsh.tools.redaction import Redaction

Append = Callable[[str, Any], Event]
"""``(type, data) -> Event``: appends to the session and publishes on the feed."""


@dataclass(frozen=True, slots=True)
class Settlement:
    """The outcome of one model call, already appended to the log."""

    assembled: Assembled
    event: Event
    failure: Failure | None


def _failure_from_exception(exc: Exception) -> Failure:
    code = getattr(exc, "code", None)
    if not isinstance(code, str):
        code = "REPLAY" if isinstance(exc, DshError) else "UNKNOWN"
    message = getattr(exc, "failure_message", None)
    if not isinstance(message, str):
        message = str(exc) or type(exc).__name__
    return {"code": code, "message": message}


async def settle_model_call(
    model: Model,
    request: ModelRequest,
    *,
    turn: int,
    step: int,
    append: Append,
    on_chunk: Callable[[Chunk], None],
    redaction: Redaction,
) -> Settlement:
    """Run one call and append exactly one settlement, the agent's secret values masked in it
    (``redaction``: the answer, the reasoning, the tool-call arguments and the deltas they were
    assembled from; each delta on its own before ``on_chunk`` shows it live).

    Success → ``assistant/message`` with the exact timed ``stream``. An error finish, or an
    exception out of the model → ``assistant/attempt`` with its failure and partial stream.
    Cancellation → ``assistant/message {interrupted: true}`` when non-blank text or
    reasoning arrived (no tool calls), else ``assistant/attempt`` (``ABORTED``); then the
    ``CancelledError`` propagates. A :class:`~dsh.errors.StopRunError` is settled as an
    ``assistant/attempt`` too, then propagates (the turn ends ``error`` and it reaches the caller).
    """
    chunks: list[Chunk] = []
    dt: list[int] = []
    assembler = BlockAssembler()
    last = 0

    def settle(kind: str, data: Any) -> Event:
        return append(kind, redaction.event_data(data))

    stream = model.stream(request)
    try:
        async for chunk in stream:
            now = time.monotonic_ns()
            if chunks:
                dt.append((now - last) // 1_000_000)
            last = now
            chunks.append(chunk)
            assembler.feed(chunk)
            on_chunk(redaction.chunk(chunk) if chunk["type"] in DELTA_FIELDS else chunk)
            if chunk["type"] == "finish":
                break
    except asyncio.CancelledError:
        record: StreamRecord = {"chunks": chunks, "dt": dt}
        blocks = assembler.interrupted_blocks()
        if blocks:
            message = assistant_message(blocks, provider=model.provider, model=request.model)
            settle(ASSISTANT_MESSAGE, assistant_message_data(turn, step, message, record, interrupted=True))
        else:
            failure: Failure = {"code": "ABORTED", "message": "model call cancelled"}
            settle(ASSISTANT_ATTEMPT, assistant_attempt_data(turn, step, failure, record))
        raise
    except StopRunError as exc:  # the run stops here: the call is settled, the error goes on up
        failure = _failure_from_exception(exc)
        settle(ASSISTANT_ATTEMPT, assistant_attempt_data(turn, step, failure, {"chunks": chunks, "dt": dt}))
        raise
    except Exception as exc:
        failure = _failure_from_exception(exc)
        event = settle(
            ASSISTANT_ATTEMPT, assistant_attempt_data(turn, step, failure, {"chunks": chunks, "dt": dt})
        )
        return Settlement(_masked(assembler.result(), redaction), event, failure)
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    assembled = _masked(assembler.result(), redaction)
    record = {"chunks": chunks, "dt": dt}
    if assembled.failure is not None:
        data = assistant_attempt_data(turn, step, assembled.failure, record, usage=assembled.usage)
        return Settlement(assembled, settle(ASSISTANT_ATTEMPT, data), assembled.failure)
    message = assistant_message(assembled.content, provider=model.provider, model=request.model)
    logged = assistant_message_data(turn, step, message, record, usage=assembled.usage)
    return Settlement(assembled, settle(ASSISTANT_MESSAGE, logged), None)


def _masked(assembled: Assembled, redaction: Redaction) -> Assembled:
    """What the call produced with the secret values masked: what the tools run with."""
    return replace(assembled, content=redaction.blocks(assembled.content)) if redaction else assembled
