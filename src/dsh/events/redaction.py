"""An event with its secrets replaced: the one rule (:mod:`dsh.redact`) over an event's data.

A settlement's deltas are redacted as the text they make per run (``Redactor.pieces``: a
secret streamed across deltas becomes one replacement in the delta where it started, the
rest cut), so a replay serving them assembles exactly the redacted message: dsh's own
``stream`` chunks and the Responses / Messages ``wire`` events ``dsh serve`` recorded
(:mod:`dsh.redact.streams` says where their pieces are). A clean event is passed through
after one scan of its JSON (``Redactor.may_hold``).
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import Any

from dsh import jsonx
from dsh.events.envelope import Event
from dsh.redact import Redactor
from dsh.redact.streams import DELTA_FIELDS, WirePiece, chunk_runs, parsed_wire_events


def json_value(value: Any, redactor: Redactor) -> Any:
    """``value`` redacted, walked only when its JSON may hold a secret (:meth:`Redactor.may_hold`)."""
    return redactor.value(value) if redactor.may_hold(jsonx.dumps_unchecked(value).decode()) else value


def _stream(stream: Any, redactor: Redactor) -> Any:
    """A stream record with each block's deltas redacted as the text they make (recut; only a
    delta that changes is copied), the other chunks walked as values."""
    chunks = stream.get("chunks") if isinstance(stream, dict) else None
    if not isinstance(chunks, list):
        return json_value(stream, redactor)
    runs = chunk_runs(chunks)
    in_runs = {i for at in runs.values() for i in at}
    out = [chunk if i in in_runs else redactor.value(chunk) for i, chunk in enumerate(chunks)]
    for (field, _), at in runs.items():
        texts = [chunks[i][field] for i in at]
        for i, text, piece in zip(at, texts, redactor.pieces(texts), strict=True):
            if piece is not text:  # the rest of a delta: its type, index, call id, name
                out[i] = {**chunks[i], field: piece}
    if all(map(operator.is_, out, chunks)):
        return stream
    return {**stream, "chunks": out}


def _wire(wire: Any, redactor: Redactor) -> Any:
    """A ``wire`` record with every event redacted as raw text, and each run of delta events
    redacted as the text its deltas make (a changed delta event is written again)."""
    redacted = json_value(wire, redactor)
    events = wire.get("events") if isinstance(wire, dict) else None
    if not isinstance(events, list):
        return redacted
    runs: dict[Hashable, list[tuple[int, dict[str, Any], WirePiece]]] = {}
    for i, parsed, piece in parsed_wire_events(events):
        runs.setdefault(piece.run, []).append((i, parsed, piece))
    out = list(redacted["events"]) if isinstance(redacted, dict) else list(events)
    changed = False
    for run in runs.values():
        texts = [piece.get(parsed) for _, parsed, piece in run]
        if not redactor.may_hold("".join(texts)):
            continue
        for (i, parsed, piece), text in zip(run, redactor.pieces(texts), strict=True):
            if text != piece.get(parsed):
                rewritten = json_value(piece.put(parsed, text), redactor)  # its other fields too
                out[i] = [events[i][0], jsonx.dumps(rewritten).decode()]
                changed = True
    if not changed:
        return redacted
    return {**(redacted if isinstance(redacted, dict) else wire), "events": out}


_RECORDS = {"stream": _stream, "wire": _wire}


def redact_chunk(chunk: Any, redactor: Redactor) -> Any:
    """One streamed delta with the secrets *wholly inside it* replaced (a value split across
    deltas is only found by :func:`redact_data` over the stream); other chunks as they are."""
    field = DELTA_FIELDS.get(str(chunk.get("type"))) if isinstance(chunk, dict) else None
    piece = chunk.get(field) if field is not None else None
    if not isinstance(piece, str) or not redactor.may_hold(piece):
        return chunk
    return {**chunk, field: redactor.text(piece)}


def _walked(data: Any, redactor: Redactor) -> Any:
    """``data`` whose JSON may hold a secret, redacted (a settlement's records recut): walked
    at once, its JSON having been tested already (each string still is, by ``findings``)."""
    if isinstance(data, dict) and any(k in data for k in _RECORDS):
        return {k: _RECORDS[k](v, redactor) if k in _RECORDS else redactor.value(v) for k, v in data.items()}
    return redactor.value(data)


def redact_data(data: Any, redactor: Redactor) -> Any:
    """An event's ``data`` with every secret replaced (a settlement's deltas recut); ``data``
    itself when it holds none."""
    if not redactor.may_hold(jsonx.dumps_unchecked(data).decode()):  # most events: one scan, no walk
        return data
    return _walked(data, redactor)


def _evolved(event: Event, redacted: Any) -> Event:
    if redacted is event.data or redacted == event.data:
        return event
    return replace(event, data=redacted, data_json=None, line_json=None)


def redact_event(event: Event, redactor: Redactor) -> Event:
    """``event`` with every secret in its data replaced (a settlement's deltas recut)."""
    return _evolved(event, redact_data(event.data, redactor))


def redact_events(events: Sequence[Event], redactor: Redactor) -> list[Event]:
    """``[redact_event(e, redactor) for e in events]``, the cheap test made over all their
    JSON at once (:meth:`Redactor.holding`): only the events it finds a literal in are walked."""
    return _redacted(events, redactor.holding_values([e.data for e in events]), redactor)


def redact_encoded(events: Sequence[Event], lines: Sequence[bytes], redactor: Redactor) -> list[Event]:
    """:func:`redact_events` of events given with their lines (``encode_event``, made by the
    writer anyway): the cheap test scans those lines, not a fresh encoding of each event's data
    (a literal only in an envelope walks its event for nothing)."""
    return _redacted(events, redactor.holding_utf8(lines), redactor)


def _redacted(events: Sequence[Event], held: Sequence[bool], redactor: Redactor) -> list[Event]:
    """Each event the cheap test ``held`` walked and redacted, the others as they are."""
    return [_evolved(e, _walked(e.data, redactor)) if h else e for e, h in zip(events, held, strict=True)]


def json_values(values: Sequence[Any], redactor: Redactor) -> list[Any]:
    """``[json_value(v, redactor) for v in values]``, the cheap test made over them all at once."""
    held = redactor.holding_values(values)
    return [redactor.value(v) if h else v for v, h in zip(values, held, strict=True)]
