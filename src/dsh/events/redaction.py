"""An event with its secrets replaced: the one rule (:mod:`dsh.redact`) over an event's data.

A stream record's deltas are redacted as the text they make per block (``Redactor.pieces``: a
secret the model streamed across chunks becomes one placeholder in the chunk where it
started), so a replay serving the chunks assembles exactly the redacted message. A clean
event is passed through after one scan of its JSON (``Redactor.may_hold``).
"""

from __future__ import annotations

import operator
from dataclasses import replace
from typing import Any

from dsh import jsonx
from dsh.events.envelope import Event
from dsh.redact import Redactor

_DELTA_FIELDS = {"text-delta": "text", "reasoning-delta": "text", "tool-call-delta": "argumentsDelta"}


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
        field = _DELTA_FIELDS.get(str(chunk.get("type"))) if isinstance(chunk, dict) else None
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


def redact_event(event: Event, redactor: Redactor) -> Event:
    """``event`` with every secret in its data replaced (a stream's deltas recut)."""
    data = event.data
    if not redactor.may_hold(jsonx.dumps_unchecked(data).decode()):  # most events: one scan, no walk
        return event
    if isinstance(data, dict) and "stream" in data:
        rest = json_value({k: v for k, v in data.items() if k != "stream"}, redactor)
        redacted = {k: _stream(v, redactor) if k == "stream" else rest[k] for k, v in data.items()}
    else:
        redacted = json_value(data, redactor)
    if redacted is data or redacted == data:
        return event
    return replace(event, data=redacted, data_json=None, line_json=None)
