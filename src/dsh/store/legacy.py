"""The version-0 reader: the original's header, its packed chunk rows and the import rewrite.

Version-0 logs (written by the original harness) are read, never written. Their header
carries an optional numeric ``seedLength``; model calls are ``assistant/chunk`` events,
runs of which may be stored as one packed row (``text-chunks``, ``reasoning-chunks``,
``tool-call-chunks``) that expands to consecutive chunk events. Every other event is kept
opaque (type, data, surfaceOp, sourceEventSeqs exactly as recorded), once its data has the
shape its readers need (:func:`dsh.store.codec.check_event_shape`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from dsh.errors import InvalidEventError, UnsupportedFormatError
from dsh.events import Event, SessionHeader, decode_cut, event_from_wire, header_from_wire
from dsh.events.vocabulary import ASSISTANT_CHUNK, KNOWN_TYPES, SESSION_END_SEED
from dsh.store.codec import check_event_shape

MAX_SAFE: Final = 2**53 - 1
"""Largest integer the original (JavaScript) writes exactly."""

PACKED_DELTA_TYPES: Final = {
    "text-chunks": "text-delta",
    "reasoning-chunks": "reasoning-delta",
    "tool-call-chunks": "tool-call-delta",
}
"""Packed row tag → the chunk type of each member."""

_ROW_KEYS: Final = frozenset({"type", "seq0", "time0", "data"})
_TEXT_KEYS: Final = frozenset({"turn", "step", "index", "dt", "texts"})
_TOOL_KEYS: Final = frozenset({"turn", "step", "index", "dt", "id", "args"})
_TOOL_KEYS_NAMED: Final = _TOOL_KEYS | {"name"}


def _is_safe_int(value: object) -> bool:
    return type(value) is int and -MAX_SAFE <= value <= MAX_SAFE


def expand_packed_row(row: dict[str, Any], where: str) -> list[Event]:
    """Expand one packed row into its ``assistant/chunk`` events (strictly validated).

    Member ``k`` becomes seq ``seq0 + k`` at time ``time0 + dt[0] + ... + dt[k-1]``; token
    boundaries are kept (members are never joined).
    """
    tag = row.get("type")
    delta_type = PACKED_DELTA_TYPES.get(tag) if isinstance(tag, str) else None
    if delta_type is None:
        raise InvalidEventError(f"{where}: {tag!r} is not a packed chunk row")
    if row.keys() != _ROW_KEYS:
        raise InvalidEventError(f"{where}: packed row keys must be exactly {sorted(_ROW_KEYS)}")
    seq0 = row["seq0"]
    time0 = row["time0"]
    data = row["data"]
    if not _is_safe_int(seq0) or seq0 < 0:
        raise InvalidEventError(f"{where}: packed row 'seq0' must be a non-negative safe integer")
    if not _is_safe_int(time0):
        raise InvalidEventError(f"{where}: packed row 'time0' must be a safe integer")
    if not isinstance(data, dict):
        raise InvalidEventError(f"{where}: packed row 'data' must be an object")
    is_tool = delta_type == "tool-call-delta"
    keys = data.keys()
    if is_tool:
        if keys != _TOOL_KEYS and keys != _TOOL_KEYS_NAMED:
            raise InvalidEventError(f"{where}: tool-call-chunks data keys are not {sorted(_TOOL_KEYS)}")
    elif keys != _TEXT_KEYS:
        raise InvalidEventError(f"{where}: {tag} data keys must be exactly {sorted(_TEXT_KEYS)}")
    turn, step, index, dt = data["turn"], data["step"], data["index"], data["dt"]
    if not (_is_safe_int(turn) and _is_safe_int(step) and _is_safe_int(index)):
        raise InvalidEventError(f"{where}: packed row 'turn', 'step' and 'index' must be integers")
    members = data["args"] if is_tool else data["texts"]
    if not isinstance(members, list) or not members or not all(type(m) is str for m in members):
        raise InvalidEventError(f"{where}: packed row members must be a non-empty list of strings")
    n = len(members)
    if not isinstance(dt, list) or len(dt) != n - 1 or not all(_is_safe_int(d) for d in dt):
        raise InvalidEventError(f"{where}: packed row 'dt' must hold {n - 1} safe integer gaps")
    if seq0 + n - 1 > MAX_SAFE:
        raise InvalidEventError(f"{where}: packed row seqs leave the safe integer range")
    call_id: Any = None
    name: Any = None
    has_name = False
    if is_tool:
        call_id = data["id"]
        if type(call_id) is not str:
            raise InvalidEventError(f"{where}: tool-call-chunks 'id' must be a string")
        has_name = "name" in data
        name = data.get("name")
        if has_name and type(name) is not str:
            raise InvalidEventError(f"{where}: tool-call-chunks 'name' must be a string")
    events: list[Event] = []
    time = time0
    for k, member in enumerate(members):
        if k:
            time += dt[k - 1]
            if not -MAX_SAFE <= time <= MAX_SAFE:
                raise InvalidEventError(f"{where}: packed row times leave the safe integer range")
        chunk: dict[str, Any]
        if is_tool:
            chunk = {"type": delta_type, "index": index, "id": call_id}
            if has_name:
                chunk["name"] = name
            chunk["argumentsDelta"] = member
        else:
            chunk = {"type": delta_type, "index": index, "text": member}
        events.append(Event(ASSISTANT_CHUNK, seq0 + k, time, {"turn": turn, "step": step, "chunk": chunk}))
    return events


def decode_row_v0(obj: object, where: str) -> list[Event]:
    """Decode one version-0 body line: a packed row, or one event kept opaque."""
    if isinstance(obj, dict):
        tag = obj.get("type")
        if type(tag) is str and tag in PACKED_DELTA_TYPES and "seq" not in obj:
            return expand_packed_row(obj, where)
    event = event_from_wire(obj, where)
    if event.type not in KNOWN_TYPES and not event.ignorable:
        raise UnsupportedFormatError(
            f"{where}: unknown event type {event.type!r} that is not ignorable "
            "(a newer version-0 writer? dsh cannot read it)"
        )
    check_event_shape(event, where)
    return [event]


def decode_header_v0(raw: dict[str, Any], where: str) -> tuple[SessionHeader, int | None]:
    """Decode a version-0 header: ``isSeeded = "seedLength" in header``; returns the seedLength."""
    if raw.get("type") != "session":
        raise InvalidEventError(f"{where}: the first line is not a session header")
    seed_length: int | None = None
    if "seedLength" in raw:
        value = raw["seedLength"]
        if not _is_safe_int(value) or value < 0:
            raise InvalidEventError(f"{where}: header 'seedLength' must be a non-negative safe integer")
        seed_length = value
    return header_from_wire(raw, where, is_seeded=seed_length is not None), seed_length


def import_problem(events: Sequence[Event], seed_length: int | None) -> str | None:
    """Why a version-0 log cannot be imported (``None`` when it can)."""
    if seed_length is None:
        return None
    if seed_length >= len(events) or events[seed_length].type != SESSION_END_SEED:
        return f"its seedLength {seed_length} does not point at a session/end-seed event"
    if not isinstance(events[seed_length].data, dict):
        return f"the session/end-seed at seq {seed_length} has non-object data"
    return None


def import_events(events: Sequence[Event], seed_length: int | None, where: str) -> list[Event]:
    """The events of a version-0 log as version 2 stores them.

    The one rewrite: the ``session/end-seed`` at seq ``seedLength`` gets ``"inherited": true``
    so the log carries the tagged marker at the cut. Raises ``UnsupportedFormatError`` with
    the reason when the log cannot be imported.
    """
    problem = import_problem(events, seed_length)
    if problem is not None:
        raise UnsupportedFormatError(f"{where}: cannot import this version-0 log: {problem}")
    out = list(events)
    if seed_length is not None:
        marker = out[seed_length]
        out[seed_length] = Event(
            marker.type,
            marker.seq,
            marker.time,
            {**marker.data, "inherited": True},
            marker.surface_op,
            marker.source_event_seqs,
            marker.ignorable,
        )
    try:
        cut = decode_cut(seed_length is not None, out, where)
    except InvalidEventError as exc:
        raise UnsupportedFormatError(f"{where}: cannot import this version-0 log: {exc}") from exc
    if seed_length is not None and cut != seed_length:
        raise UnsupportedFormatError(
            f"{where}: cannot import this version-0 log: a later tagged session/end-seed "
            f"at seq {cut} would move the cut from {seed_length}"
        )
    return out
