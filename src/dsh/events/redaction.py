"""An event with its secrets replaced: the one rule (:mod:`dsh.redact`) over an event's data.

A stream record's deltas are redacted as the text they make per block (``Redactor.pieces``: a
secret the model streamed across chunks becomes one placeholder in the chunk where it
started), so a replay serving the chunks assembles exactly the redacted message. A clean
event is passed through after one scan of its JSON (``Redactor.may_hold``).
"""

from __future__ import annotations

import operator
from dataclasses import replace
from typing import Any, Final

from dsh import jsonx
from dsh.events.envelope import Event
from dsh.redact import Redactor

DELTA_FIELDS: Final = {"text-delta": "text", "reasoning-delta": "text", "tool-call-delta": "argumentsDelta"}
"""A streamed delta's type → the field that holds its piece of text."""


def json_value(value: Any, redactor: Redactor) -> Any:
    """``value`` redacted, walked only when its JSON may hold a secret (:meth:`Redactor.may_hold`)."""
    return redactor.value(value) if redactor.may_hold(jsonx.dumps_unchecked(value).decode()) else value


def _stream(stream: Any, redactor: Redactor) -> Any:
    """A stream record with each block's deltas redacted as the text they make (recut), the
    other chunks as values; each run and chunk is looked at once, through the cheap test."""
    chunks = stream.get("chunks") if isinstance(stream, dict) else None
    if not isinstance(chunks, list):
        return json_value(stream, redactor)
    runs: dict[tuple[str, Any], list[int]] = {}
    for i, chunk in enumerate(chunks):
        field = DELTA_FIELDS.get(str(chunk.get("type"))) if isinstance(chunk, dict) else None
        if field is not None and isinstance(chunk.get(field), str):
            runs.setdefault((field, chunk.get("index")), []).append(i)
    in_runs = {i for at in runs.values() for i in at}
    out = [chunk if i in in_runs else json_value(chunk, redactor) for i, chunk in enumerate(chunks)]
    for (field, _), at in runs.items():
        texts = [chunks[i][field] for i in at]
        if not redactor.may_hold("".join(texts)):
            continue
        for i, piece in zip(at, redactor.pieces(texts), strict=True):
            out[i] = {**chunks[i], field: piece}  # the rest of a delta: its type, index, call id, name
    if all(map(operator.is_, out, chunks)):
        return stream
    return {**stream, "chunks": out}


def redact_chunk(chunk: Any, redactor: Redactor) -> Any:
    """One streamed delta with the secrets *wholly inside it* replaced (a value split across
    deltas is only found by :func:`redact_data` over the stream); other chunks as they are."""
    field = DELTA_FIELDS.get(str(chunk.get("type"))) if isinstance(chunk, dict) else None
    piece = chunk.get(field) if field is not None else None
    if not isinstance(piece, str) or not redactor.may_hold(piece):
        return chunk
    return {**chunk, field: redactor.text(piece)}


def redact_data(data: Any, redactor: Redactor) -> Any:
    """An event's ``data`` with every secret replaced (a stream's deltas recut); ``data``
    itself when it holds none."""
    if not redactor.may_hold(jsonx.dumps_unchecked(data).decode()):  # most events: one scan, no walk
        return data
    if isinstance(data, dict) and "stream" in data:
        rest = json_value({k: v for k, v in data.items() if k != "stream"}, redactor)
        return {k: _stream(v, redactor) if k == "stream" else rest[k] for k, v in data.items()}
    return json_value(data, redactor)


def redact_event(event: Event, redactor: Redactor) -> Event:
    """``event`` with every secret in its data replaced (a stream's deltas recut)."""
    data = event.data
    redacted = redact_data(data, redactor)
    if redacted is data or redacted == data:
        return event
    return replace(event, data=redacted, data_json=None, line_json=None)
