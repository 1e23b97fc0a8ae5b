"""Script derivation: one entry per recorded model call, from a session's own events."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dsh.errors import ReplayError
from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.events.vocabulary import ASSISTANT_ATTEMPT, ASSISTANT_CHUNK, ASSISTANT_MESSAGE
from dsh.replay.entries import Entry


def _has_finish(chunks: Sequence[Chunk]) -> bool:
    return bool(chunks) and chunks[-1].get("type") == "finish"


def _summary_call(data: dict[str, Any], where: str) -> Entry:
    raw = data.get("rawOutput")
    if not isinstance(raw, list):
        raise ReplayError(f"{where}: compaction/summary with llmStreamCall has no rawOutput")
    chunks: list[Chunk] = []
    for i, block in enumerate(raw):
        chunks.append({"type": "block-start", "index": i, "blockType": block.get("type")})
        chunks.append({"type": "block-end", "index": i, "block": block})
    if data.get("usage") is not None:
        chunks.append({"type": "usage", "usage": data["usage"]})
    chunks.append({"type": "finish", "reason": {"kind": "stop"}})
    return Entry("chunks", tuple(chunks))


def derive_script(events: Sequence[Event], where: str) -> list[Entry]:
    """Derive the replay script of ``events`` — already sliced at the inherited cut.

    Version 2: each settlement with a ``stream`` is one entry; an attempt whose stream has
    no ``finish`` becomes a ``throw`` with its recorded failure; an interrupted message
    (cancelled mid-stream) becomes a ``hang`` serving its partial chunks. Version 0:
    ``assistant/chunk`` events grouped by ``(turn, step)``, a group closing at its
    ``finish`` or when the key changes (a group without ``finish`` is an error). Both
    kinds may appear in one log; each is one call, in log order.
    """
    script: list[Entry] = []
    group: list[Chunk] = []
    key: tuple[Any, Any] | None = None

    def close() -> None:
        nonlocal group, key
        if group:
            if not _has_finish(group):
                raise ReplayError(
                    f"{where}: model call turn {key[0] if key else '?'} step "
                    f"{key[1] if key else '?'} ended without a finish chunk; it needs a "
                    "replay.override.json sidecar"
                )
            script.append(Entry("chunks", tuple(group)))
        group = []
        key = None

    for event in events:
        etype = event.type
        if etype == ASSISTANT_CHUNK:
            data = event.data
            k = (data.get("turn"), data.get("step"))
            if group and k != key:
                close()
            key = k
            group.append(data["chunk"])
            if data["chunk"].get("type") == "finish":
                close()
        elif etype in (ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT):
            stream = event.data.get("stream")
            if not isinstance(stream, dict):
                continue  # a v0 message: its chunks already made the call
            close()
            chunks = tuple(stream.get("chunks", ()))
            if _has_finish(chunks):
                script.append(Entry("chunks", chunks))
            elif etype == ASSISTANT_MESSAGE and event.data.get("interrupted"):
                script.append(Entry("hang", chunks))
            else:
                failure = event.data.get("failure") or {}
                script.append(
                    Entry(
                        "throw",
                        chunks,
                        code=str(failure.get("code", "UNKNOWN")),
                        message=str(failure.get("message", "recorded failure")),
                    )
                )
        elif etype == "compaction/summary":
            close()
            if isinstance(event.data, dict) and event.data.get("llmStreamCall") is True:
                script.append(_summary_call(event.data, where))
    close()
    return script
