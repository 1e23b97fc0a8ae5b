"""A version-0 chunk packer (test helper): the original's writer rule, reference §1.6.

dsh never writes version 0; this exists so property tests can check that expanding packed
rows exactly inverts packing.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from dsh.events import Event

TAG_BY_DELTA = {
    "text-delta": "text-chunks",
    "reasoning-delta": "reasoning-chunks",
    "tool-call-delta": "tool-call-chunks",
}
MIN_RUN = 3


def _packable(event: Event) -> dict[str, Any] | None:
    """The chunk of an exactly-whitelisted delta event, else ``None``."""
    if event.type != "assistant/chunk" or event.surface_op is not None or event.source_event_seqs is not None:
        return None
    if event.ignorable or not isinstance(event.data, dict) or list(event.data) != ["turn", "step", "chunk"]:
        return None
    chunk = event.data["chunk"]
    if not isinstance(chunk, dict):
        return None
    keys = list(chunk)
    if chunk.get("type") in ("text-delta", "reasoning-delta") and keys == ["type", "index", "text"]:
        return chunk
    if chunk.get("type") == "tool-call-delta" and keys in (
        ["type", "index", "id", "argumentsDelta"],
        ["type", "index", "id", "name", "argumentsDelta"],
    ):
        return chunk
    return None


def _run_key(event: Event, chunk: dict[str, Any]) -> tuple[Any, ...]:
    return (
        chunk["type"],
        event.data["turn"],
        event.data["step"],
        chunk["index"],
        chunk.get("id"),
        "name" in chunk,
        chunk.get("name"),
    )


def _row(run: list[Event]) -> dict[str, Any]:
    first = run[0]
    chunks = [e.data["chunk"] for e in run]
    kind = chunks[0]["type"]
    data: dict[str, Any] = {
        "turn": first.data["turn"],
        "step": first.data["step"],
        "index": chunks[0]["index"],
        "dt": [b.time - a.time for a, b in pairwise(run)],
    }
    if kind == "tool-call-delta":
        data["id"] = chunks[0]["id"]
        if "name" in chunks[0]:
            data["name"] = chunks[0]["name"]
        data["args"] = [c["argumentsDelta"] for c in chunks]
    else:
        data["texts"] = [c["text"] for c in chunks]
    return {"type": TAG_BY_DELTA[kind], "seq0": first.seq, "time0": first.time, "data": data}


def pack(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Physical version-0 records for ``events``: runs of >= 3 packable deltas become one row."""
    records: list[dict[str, Any]] = []
    run: list[Event] = []
    key: tuple[Any, ...] | None = None

    def close_run() -> None:
        if len(run) >= MIN_RUN:
            records.append(_row(run))
        else:
            records.extend(e.to_wire() for e in run)
        run.clear()

    for event in events:
        chunk = _packable(event)
        if chunk is None:
            close_run()
            key = None
            records.append(event.to_wire())
            continue
        k = _run_key(event, chunk)
        if run and (k != key or event.seq != run[-1].seq + 1):
            close_run()
        run.append(event)
        key = k
    close_run()
    return records
