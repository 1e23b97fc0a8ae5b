"""The version-2 line codec: the header line, event lines and checked (lossless) encoding.

Encoding is canonical compact JSON (orjson, insertion key order, ``type`` first). Every
value we write is checked to be lossless JSON; the fast path serializes with orjson and
compares the parsed result with the input, and only on a mismatch falls back to the
slower walker in :mod:`dsh.jsonx` to name the offending value.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

import orjson

from dsh import jsonx
from dsh.errors import InvalidEventError, UnsupportedFormatError
from dsh.events import FORMAT_VERSION, Event, SessionHeader, event_from_wire, header_from_wire
from dsh.events.vocabulary import KNOWN_TYPES

HEADER_TYPE: Final = "session"
"""The ``type`` of a log file's first line."""

_MAX_INT: Final = 2**63 - 1


def encode_data_checked(event: Event, where: str) -> bytes:
    """The canonical encoding of ``event.data``, reusing the one made (and checked) on append."""
    if event.data_json is not None:
        return event.data_json
    return encode_json_checked(event.data, where)


def encode_json_checked(value: object, where: str) -> bytes:
    """Serialize ``value`` compactly; refuse anything that would not round-trip exactly."""
    try:
        encoded = orjson.dumps(value)
    except TypeError:
        jsonx.check_json(value, where)
        raise InvalidEventError(f"refusing non-JSON data at {where}") from None
    if orjson.loads(encoded) != value:
        jsonx.check_json(value, where)
        raise InvalidEventError(f"refusing data at {where}: it does not survive a JSON round trip")
    return encoded


def check_envelope(event: Event, where: str) -> None:
    """Refuse an event object whose envelope fields are not what the wire form allows."""
    if type(event.type) is not str or not event.type:
        raise InvalidEventError(f"{where}: 'type' must be a non-empty string")
    if type(event.seq) is not int or not 0 <= event.seq <= _MAX_INT:
        raise InvalidEventError(f"{where}: 'seq' must be a non-negative 64-bit integer")
    if type(event.time) is not int or not -_MAX_INT - 1 <= event.time <= _MAX_INT:
        raise InvalidEventError(f"{where}: 'time' must be a 64-bit integer")
    if event.ignorable is not True and event.ignorable is not False:
        raise InvalidEventError(f"{where}: 'ignorable' must be a bool")
    seqs = event.source_event_seqs
    if seqs is not None and not all(type(s) is int and 0 <= s < event.seq for s in seqs):
        raise InvalidEventError(f"{where}: 'sourceEventSeqs' must list earlier seqs")
    if event.type not in KNOWN_TYPES and not event.ignorable:
        raise InvalidEventError(
            f"{where}: unknown event type {event.type!r}; only known types or ignorable events are stored"
        )


def encode_event_checked(event: Event) -> bytes:
    """Canonical compact JSON of one event (no newline), refusing non-lossless data."""
    if event.line_json is not None:
        return event.line_json
    where = f"{event.type}#{event.seq}"
    wire = event.to_wire()
    if event.data_json is not None and (event.surface_op is None or type(event.surface_op) is str):
        # The data was encoded and checked once, on append; the envelope (ints, strings,
        # a list of ints) was checked by check_envelope and cannot be lossy.
        wire["data"] = jsonx.Fragment(event.data_json)
        line = orjson.dumps(wire)
        event.remember_line(line)
        return line
    return encode_json_checked(wire, f"event {where}")


def encode_event_lines(events: Iterable[Event]) -> bytes:
    """Newline-terminated canonical lines for ``events`` (checked)."""
    parts = [encode_event_checked(e) for e in events]
    if not parts:
        return b""
    parts.append(b"")
    return b"\n".join(parts)


def header_wire(header: SessionHeader) -> dict[str, Any]:
    """The version-2 header line as a dict: ``type``, ``version``, then the logical fields."""
    out: dict[str, Any] = {"type": HEADER_TYPE, "version": FORMAT_VERSION}
    out.update(header.to_wire())
    return out


def encode_header_line(header: SessionHeader) -> bytes:
    """The newline-terminated version-2 header line."""
    return encode_json_checked(header_wire(header), f"session {header.id} header") + b"\n"


def encode_log_bytes(header: SessionHeader, events: Sequence[Event]) -> bytes:
    """A self-contained version-2 JSONL log: header line, then one line per event."""
    return encode_header_line(header) + encode_event_lines(events)


def decode_header_v2(raw: dict[str, Any], where: str) -> SessionHeader:
    """Decode a version-2 header dict (``version`` already checked by the caller)."""
    if raw.get("type") != HEADER_TYPE:
        raise InvalidEventError(f"{where}: the first line is not a session header")
    return header_from_wire(raw, where)


def decode_event_v2(obj: object, where: str) -> Event:
    """Decode one version-2 event; an unknown type refuses the load unless ignorable."""
    if type(obj) is dict:  # fast path: the common envelopes, same checks as event_from_wire
        etype = obj.get("type")
        seq = obj.get("seq")
        time = obj.get("time")
        if (
            type(etype) is str
            and etype in KNOWN_TYPES
            and type(seq) is int
            and seq >= 0
            and type(time) is int
            and "data" in obj
        ):
            size = len(obj)
            if size == 4:
                return Event(etype, seq, time, obj["data"])
            if size == 5 and "surfaceOp" in obj:
                return Event(etype, seq, time, obj["data"], obj["surfaceOp"])
    event = event_from_wire(obj, where)
    if event.type not in KNOWN_TYPES and not event.ignorable:
        raise UnsupportedFormatError(
            f"{where}: unknown event type {event.type!r} that is not ignorable "
            "(written by a newer dsh? upgrade dsh)"
        )
    return event


def decode_event_line(line: bytes, where: str) -> Event:
    """Parse and decode one canonical version-2 event line (used for in-memory copies)."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise InvalidEventError(f"{where}: not valid JSON ({exc})") from exc
    return decode_event_v2(obj, where)
