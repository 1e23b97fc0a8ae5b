"""Where a logged model reply holds its text in pieces: the deltas of its streams.

A secret a model (or an upstream) streams split across two deltas is whole only in the
text the deltas make, so the redaction (:mod:`dsh.events.redaction`) and ``dsh scenario
scan`` join them first. Two records of a settlement carry deltas:

- ``stream.chunks``, dsh's own: ``text-delta`` / ``reasoning-delta`` (``text``) and
  ``tool-call-delta`` (``argumentsDelta``), one run per kind and block ``index``;
- ``wire.events`` (``[name, raw JSON]``, what ``dsh serve`` recorded of a Responses or
  Messages reply): a Responses ``response.*.delta`` event's ``delta`` (one run per event
  name and item / output / content / summary index), a Messages ``content_block_delta``'s
  ``delta.text`` / ``thinking`` / ``partial_json`` / ``signature`` (one run per block index
  and delta type).

This module is the one home of those shapes.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dsh import jsonx

DELTA_FIELDS: Final = {"text-delta": "text", "reasoning-delta": "text", "tool-call-delta": "argumentsDelta"}
"""A dsh stream delta's type → the field that holds its piece of text."""

MESSAGES_DELTA_FIELDS: Final = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "input_json_delta": "partial_json",
    "signature_delta": "signature",
}
"""A Messages ``content_block_delta``'s ``delta.type`` → the field that holds its text."""

_RESPONSES_RUN_KEYS: Final = ("item_id", "output_index", "content_index", "summary_index")


@dataclass(frozen=True, slots=True)
class WirePiece:
    """Where one wire event's piece of text is: its run and the keys down to the string."""

    run: Hashable
    path: tuple[str, ...]

    def get(self, data: dict[str, Any]) -> str:
        value: Any = data
        for key in self.path:
            value = value[key]
        return str(value)

    def put(self, data: dict[str, Any], text: str) -> dict[str, Any]:
        """A copy of ``data`` with the piece replaced."""
        if len(self.path) == 1:
            return {**data, self.path[0]: text}
        outer, inner = self.path
        return {**data, outer: {**data[outer], inner: text}}


def chunk_runs(chunks: Sequence[Any]) -> dict[tuple[str, Any], list[int]]:
    """The positions of a dsh stream's deltas, per (field, block index), in order."""
    runs: dict[tuple[str, Any], list[int]] = {}
    for i, chunk in enumerate(chunks):
        if not isinstance(chunk, dict):
            continue
        kind = chunk.get("type")
        field = DELTA_FIELDS.get(kind) if isinstance(kind, str) else None
        if field is not None and isinstance(chunk.get(field), str):
            runs.setdefault((field, chunk.get("index")), []).append(i)
    return runs


def wire_piece(name: str, data: Any) -> WirePiece | None:
    """Where the piece of text of one wire event is (``None``: not a delta event)."""
    if not isinstance(data, dict):
        return None
    if name == "content_block_delta":
        delta = data.get("delta")
        field = MESSAGES_DELTA_FIELDS.get(str(delta.get("type"))) if isinstance(delta, dict) else None
        if field is None or not isinstance(delta, dict) or not isinstance(delta.get(field), str):
            return None
        return WirePiece((name, data.get("index"), delta.get("type")), ("delta", field))
    if name.startswith("response.") and name.endswith(".delta") and isinstance(data.get("delta"), str):
        return WirePiece((name, *(data.get(k) for k in _RESPONSES_RUN_KEYS)), ("delta",))
    return None


def parsed_wire_events(events: Sequence[Any]) -> Iterator[tuple[int, dict[str, Any], WirePiece]]:
    """Each delta event of a ``wire.events`` list: its position, its parsed data, its piece."""
    for i, event in enumerate(events):
        if not (isinstance(event, list | tuple) and len(event) == 2 and isinstance(event[1], str)):
            continue
        name, raw = event
        if not (name == "content_block_delta" or str(name).endswith(".delta")):
            continue
        try:
            data = jsonx.loads(raw)
        except ValueError:
            continue
        piece = wire_piece(str(name), data)
        if piece is not None:
            yield i, data, piece


def split_texts(record: Any) -> Iterator[list[str]]:
    """The pieces of every run of deltas in a settlement's ``stream`` and ``wire`` records
    (``record``: an event, or its data), for a reader that matches on the whole they make."""
    data = record.get("data", record) if isinstance(record, dict) else None
    if not isinstance(data, dict):
        return
    stream, wire = data.get("stream"), data.get("wire")
    chunks = stream.get("chunks") if isinstance(stream, dict) else None
    if isinstance(chunks, list):
        for (field, _), at in chunk_runs(chunks).items():
            yield [chunks[i][field] for i in at]
    events = wire.get("events") if isinstance(wire, dict) else None
    if isinstance(events, list):
        runs: dict[Hashable, list[str]] = {}
        for _, parsed, piece in parsed_wire_events(events):
            runs.setdefault(piece.run, []).append(piece.get(parsed))
        yield from runs.values()
