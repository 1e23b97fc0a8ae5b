"""The version-2 line codec: the header line, event lines, checked (lossless) encoding and the
shape every decoded event's data must have.

Encoding is canonical compact JSON (orjson, insertion key order, ``type`` first). Every
value we write is checked to be lossless JSON; the fast path serializes with orjson and
compares the parsed result with the input, and only on a mismatch falls back to the
slower walker in :mod:`dsh.jsonx` to name the offending value.

Decoding checks each event's ``data`` against what the projections, replay and
``--resume`` read (:func:`check_data_shape`): a log that would crash them later is refused
when it is read, with the field named.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import orjson

from dsh import jsonx
from dsh.errors import EventShapeError, InvalidEventError, UnsupportedFormatError
from dsh.events import FORMAT_VERSION, Event, SessionHeader, encode_event, event_from_wire, header_from_wire
from dsh.events.chunks import CHUNK_TYPES
from dsh.events.envelope import raise_partial
from dsh.events.shapes import PAYLOADS, json_fields
from dsh.events.vocabulary import (
    ASSISTANT_ATTEMPT,
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    COMPACTION_SUMMARY,
    KNOWN_TYPES,
    REQUEST_HEADER,
    SESSION_END_SEED,
    SESSION_TITLE,
    STEP_END,
    STEP_START,
    SUBAGENT_DESCRIPTOR,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
)

HEADER_TYPE: Final = "session"
"""The ``type`` of a log file's first line."""

_MAX_INT: Final = 2**63 - 1


def encode_data_checked(event: Event, where: str) -> bytes:
    """The canonical encoding of ``event.data``, reusing the one made (and checked) on append."""
    if event.partial:
        raise_partial(event)
    if event.data_json is not None:
        return event.data_json
    return jsonx.encode_checked(event.data, where)


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
    """Canonical compact JSON of one event (no newline): :func:`dsh.events.encode_event`."""
    return encode_event(event)


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
    return jsonx.encode_checked(header_wire(header), f"session {header.id} header") + b"\n"


def encode_log_bytes(header: SessionHeader, events: Sequence[Event]) -> bytes:
    """A self-contained version-2 JSONL log: header line, then one line per event."""
    return encode_header_line(header) + encode_event_lines(events)


def decode_header_v2(raw: dict[str, Any], where: str) -> SessionHeader:
    """Decode a version-2 header dict (``version`` already checked by the caller)."""
    if raw.get("type") != HEADER_TYPE:
        raise InvalidEventError(f"{where}: the first line is not a session header")
    return header_from_wire(raw, where)


def decode_event_v2(obj: object, where: str, *, shapes: bool = True) -> Event:
    """Decode one version-2 event; an unknown type refuses the load unless ignorable.

    ``shapes=False`` skips the payload shape checks (:func:`check_data_shape`), for a store's
    own files: their events were checked when appended or imported."""
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
                if shapes:
                    check_data_shape(etype, seq, obj["data"], where)
                return Event(etype, seq, time, obj["data"])
            if size == 5 and "surfaceOp" in obj:
                event = Event(etype, seq, time, obj["data"], obj["surfaceOp"])
                if shapes:
                    check_event_shape(event, where)
                return event
    event = event_from_wire(obj, where)
    if event.type not in KNOWN_TYPES and not event.ignorable:
        raise UnsupportedFormatError(
            f"{where}: unknown event type {event.type!r} that is not ignorable "
            "(written by a newer dsh? upgrade dsh)"
        )
    if shapes:
        check_event_shape(event, where)
    return event


def decode_event_line(line: bytes, where: str, *, shapes: bool = True) -> Event:
    """Parse and decode one canonical version-2 event line. ``shapes=False`` for an in-memory
    copy's own line (``dsh.store.memory``: an event the store encoded when it was appended,
    so, like a SQLite row, its payload's shape is not checked again)."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise InvalidEventError(f"{where}: not valid JSON ({exc})") from exc
    return decode_event_v2(obj, where, shapes=shapes)


# -- the shape of decoded event data --------------------------------------------------------------

MAX_DATA_DEPTH: Final = 64
"""The deepest nesting of arrays and objects accepted in an event's ``data`` or ``surfaceOp``
(``data`` itself is level 1). Recorded logs nest at most 8 deep; orjson cannot write more
than 255 levels, and the readers' recursion (copies, the ACP frames) must stay bounded."""

_MISSING: Final = object()


class _Bad(Exception):
    """A shape problem at ``path`` (internal: :func:`check_data_shape` names the event).

    Paths are built only on failure: a loop that catches it prepends the element's index.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(path, problem)
        self.path = path
        self.problem = problem

    def under(self, prefix: str) -> _Bad:
        self.path = prefix + self.path
        return self


_KINDS: Final[dict[type, str]] = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "an array",
    dict: "an object",
}


def _kind(value: object) -> str:
    return "null" if value is None else _KINDS.get(type(value), type(value).__name__)


def _get(obj: dict[str, Any], key: str, want: type, path: str, required: bool = False) -> Any:
    """``obj[key]`` if it is exactly of JSON type ``want``; ``None`` when absent and optional."""
    value = obj.get(key, _MISSING)
    if value is _MISSING:
        if required:
            raise _Bad(f"{path}.{key}", "is missing")
        return None
    if type(value) is not want:
        raise _Bad(f"{path}.{key}", f"must be {_KINDS[want]} (got {_kind(value)})")
    return value


def _obj(value: object, path: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise _Bad(path, f"must be an object (got {_kind(value)})")
    return value


_CONTAINERS: Final = frozenset({dict, list})


def _nests(value: dict[str, Any] | list[Any]) -> bool:
    """Whether an object or array holds an object or array, in one C pass; an array of
    numbers (a stream's ``dt``) is proven flat by summing it (only numbers add up)."""
    if isinstance(value, dict):
        return not _CONTAINERS.isdisjoint(map(type, value.values()))
    try:
        sum(value)
    except TypeError:
        return not _CONTAINERS.isdisjoint(map(type, value))
    return False


def _depth(value: object, path: str, level: int = 1) -> None:
    """Refuse arrays/objects nested deeper than :data:`MAX_DATA_DEPTH`; ``value`` sits at ``level``.

    Breadth-first over containers only (no recursion, so any depth orjson parsed is safe).
    """
    if type(value) is dict:
        if _CONTAINERS.isdisjoint(map(type, value.values())):
            return
    elif type(value) is not list or _CONTAINERS.isdisjoint(map(type, value)):
        return
    containers: list[Any] = [value]
    depth = level
    while True:
        if depth > MAX_DATA_DEPTH:
            raise _Bad(path, f"is nested deeper than {MAX_DATA_DEPTH} levels")
        below: list[Any] = []
        for container in containers:
            for item in container.values() if type(container) is dict else container:
                kind = type(item)
                if kind is dict or kind is list:
                    below.append(item)
        if not below:
            return
        containers = below
        depth += 1


_TEXT_BLOCKS: Final = frozenset({"text", "reasoning"})


def _block(block: object, path: str = "") -> None:
    """One content block: ``type`` a string; text, tool-call and tool-result fields typed."""
    b = _obj(block, path)
    kind = _get(b, "type", str, path, required=True)
    if kind in _TEXT_BLOCKS:
        _get(b, "text", str, path, required=True)
    elif kind == "tool-call":
        _get(b, "id", str, path, required=True)
        _get(b, "name", str, path, required=True)
        _get(b, "arguments", str, path)
    elif kind == "tool-result":
        _get(b, "toolCallId", str, path, required=True)
        _blocks(_get(b, "content", list, path), f"{path}.content")
        _get(b, "isError", bool, path)


def _blocks(blocks: list[Any] | None, path: str) -> None:
    for i, block in enumerate(blocks or ()):
        try:
            _block(block)
        except _Bad as bad:
            raise bad.under(f"{path}[{i}]") from None


def _message(value: object, path: str, *, content_required: bool = False) -> dict[str, Any]:
    """A logged message: ``content`` an array of blocks; ``role``, ``id`` strings; ``source`` an object."""
    if type(value) is dict and _plain_message(value, content_required):
        return value
    message = _obj(value, path)
    _blocks(_get(message, "content", list, path, required=content_required), f"{path}.content")
    _get(message, "role", str, path)
    _get(message, "id", str, path)
    source = _get(message, "source", dict, path)
    if source is not None:
        _get(source, "kind", str, f"{path}.source")
    return message


def _plain_message(message: dict[str, Any], content_required: bool) -> bool:
    """The fast path of :func:`_message`: well-typed fields and only text/reasoning blocks."""
    content = message.get("content", _MISSING)
    if content is _MISSING:
        if content_required:
            return False
        content = ()
    elif type(content) is not list:
        return False
    if type(message.get("role", "")) is not str or type(message.get("id", "")) is not str:
        return False
    source = message.get("source", _MISSING)
    if source is not _MISSING and (type(source) is not dict or type(source.get("kind", "")) is not str):
        return False
    for block in content:
        if type(block) is not dict:
            return False
        kind = block.get("type")
        if (kind != "text" and kind != "reasoning") or type(block.get("text")) is not str:
            return False
    return True


def _flat_message(message: dict[str, Any], content_required: bool) -> bool:
    """:func:`_plain_message`, and nothing nested below a block's or the source's own fields:
    ``True`` also proves the message nests at most two levels below itself (no depth walk)."""
    if not _plain_message(message, content_required):
        return False
    for key, value in message.items():
        kind = type(value)
        if kind is list:
            if key != "content":
                return False
            for block in value:  # dicts with string "type" and "text" (_plain_message)
                if len(block) != 2 and _nests(block):
                    return False
        elif kind is dict and (key != "source" or _nests(value)):
            return False
    return True


def _chunk(value: object, path: str = "") -> None:
    """One stream chunk: a known ``type`` and the fields the assembler and replay read."""
    chunk = _obj(value, path)
    kind = _get(chunk, "type", str, path, required=True)
    if kind not in CHUNK_TYPES:
        raise _Bad(f"{path}.type", f"{kind!r} is not a stream chunk type")
    if kind == "text-delta" or kind == "reasoning-delta":
        _get(chunk, "index", int, path, required=True)
        _get(chunk, "text", str, path, required=True)
    elif kind == "tool-call-delta":
        _get(chunk, "index", int, path, required=True)
        _get(chunk, "id", str, path)
        _get(chunk, "name", str, path)
        _get(chunk, "argumentsDelta", str, path)
    elif kind == "block-start":
        _get(chunk, "index", int, path, required=True)
        _get(chunk, "blockType", str, path, required=True)
    elif kind == "block-end":
        _get(chunk, "index", int, path, required=True)
        _block(_get(chunk, "block", dict, path, required=True), f"{path}.block")
    elif kind == "usage":
        _get(chunk, "usage", dict, path, required=True)
    else:  # finish
        reason = _get(chunk, "reason", dict, path, required=True)
        _get(reason, "kind", str, f"{path}.reason", required=True)
        _get(reason, "failure", dict, f"{path}.reason")


_TOOL_DELTA_KEYS: Final = frozenset({"type", "index", "id", "name", "argumentsDelta"})


def _flat_chunk(chunk: object) -> bool:
    """The fast path of :func:`_chunk`: a chunk with exactly its own, well-typed, flat fields.

    ``True`` proves the chunk valid and at most three levels deep; ``False`` only means "check
    it precisely" (a tool-call ``block-end``, extra fields, or a real problem).
    """
    if type(chunk) is not dict:
        return False
    ctype = chunk.get("type")
    if ctype == "text-delta" or ctype == "reasoning-delta":
        return len(chunk) == 3 and type(chunk.get("index")) is int and type(chunk.get("text")) is str
    if ctype == "tool-call-delta":
        return (
            chunk.keys() <= _TOOL_DELTA_KEYS
            and type(chunk.get("index")) is int
            and type(chunk.get("id", "")) is str
            and type(chunk.get("name", "")) is str
            and type(chunk.get("argumentsDelta", "")) is str
        )
    if ctype == "block-start":
        return len(chunk) == 3 and type(chunk.get("index")) is int and type(chunk.get("blockType")) is str
    if ctype == "block-end":
        block = chunk.get("block")
        return (
            len(chunk) == 3
            and type(chunk.get("index")) is int
            and type(block) is dict
            and len(block) == 2
            and (block.get("type") == "text" or block.get("type") == "reasoning")
            and type(block.get("text")) is str
        )
    if ctype == "usage":
        usage = chunk.get("usage")
        return len(chunk) == 2 and type(usage) is dict and _CONTAINERS.isdisjoint(map(type, usage.values()))
    if ctype == "finish":
        reason = chunk.get("reason")
        return (
            len(chunk) == 2 and type(reason) is dict and len(reason) == 1 and type(reason.get("kind")) is str
        )
    return False


def _all_flat(chunks: list[Any]) -> bool:
    """Whether every chunk passes :func:`_flat_chunk`, in one pass that checks text and
    reasoning deltas (nearly every chunk of a stream) inline, with no call per delta.

    The same rule as :func:`_flat_chunk` (exactly ``type``, an int ``index`` and a string
    ``text``); a missing key among three is only ``False`` ("check it precisely")."""
    try:
        for chunk in chunks:
            if type(chunk) is dict and len(chunk) == 3:
                kind = chunk["type"]
                if (
                    (kind == "text-delta" or kind == "reasoning-delta")
                    and type(chunk["index"]) is int
                    and type(chunk["text"]) is str
                ):
                    continue
            if not _flat_chunk(chunk):
                return False
    except KeyError:
        return False
    return True


def _stream_chunks(chunks: list[Any], level: int) -> None:
    """Every chunk of a settlement's stream, nesting included (chunks sit at ``level``)."""
    if _all_flat(chunks):
        return
    for i, chunk in enumerate(chunks):
        if _flat_chunk(chunk):
            continue
        try:
            _chunk(chunk)
            _depth(chunk, "", level)
        except _Bad as bad:
            raise bad.under(f"[{i}]") from None


def _turn_step(data: dict[str, Any], required: bool) -> None:
    if required:
        if type(data.get("turn")) is int and type(data.get("step")) is int:
            return
    elif type(data.get("turn", 0)) is int and type(data.get("step", 0)) is int:
        return
    _get(data, "turn", int, "", required)
    _get(data, "step", int, "", required)


def _settlement(data: dict[str, Any]) -> None:
    """``assistant/message`` and ``assistant/attempt``; checks its own nesting (the hot path)."""
    message_checked = False
    for key, value in data.items():
        kind = type(value)
        if key == "stream" or (kind is not dict and kind is not list) or not _nests(value):
            continue
        if key == "message" and kind is dict and _flat_message(value, False):
            message_checked = True
            continue
        _depth(value, f".{key}", 2)
    _turn_step(data, False)
    if "message" in data and not message_checked:
        _message(data["message"], ".message")
    _get(data, "usage", dict, "")
    _get(data, "wireUsage", dict, "")
    _get(data, "wire", dict, "")
    _get(data, "interrupted", bool, "")
    stream = _get(data, "stream", dict, "")
    if stream is not None:
        for key, value in stream.items():
            kind = type(value)
            if key != "chunks" and (kind is dict or kind is list) and _nests(value):
                _depth(value, f".stream.{key}", 3)
        chunks = _get(stream, "chunks", list, ".stream", required=True)
        try:
            _stream_chunks(chunks, 4)
        except _Bad as bad:
            raise bad.under(".stream.chunks") from None
        _get(stream, "dt", list, ".stream")
    failure = _get(data, "failure", dict, "")
    if failure is not None:
        _get(failure, "code", str, ".failure")
        _get(failure, "message", str, ".failure")


def _turn_start(data: dict[str, Any]) -> None:
    if type(data.get("turn")) is not int:
        _get(data, "turn", int, "", required=True)


def _turn_end(data: dict[str, Any]) -> None:
    _get(data, "turn", int, "")
    reason = _get(data, "reason", dict, "")
    if reason is not None:
        _get(reason, "kind", str, ".reason", required=True)


def _step(data: dict[str, Any]) -> None:
    _turn_step(data, True)


def _step_end(data: dict[str, Any]) -> None:
    _turn_step(data, False)


def _user_message(data: dict[str, Any]) -> None:
    """``user/message``; checks its own nesting (a plain message needs no depth walk)."""
    if _flat_message(data, True):
        return
    _depth(data, "")
    _message(data, "", content_required=True)


def _tool_call(data: dict[str, Any]) -> None:
    _turn_step(data, True)
    _get(data, "callId", str, "", required=True)
    _get(data, "name", str, "", required=True)
    _get(data, "arguments", str, "")


def _tool_result(data: dict[str, Any]) -> None:
    _turn_step(data, False)
    message = _message(_get(data, "message", dict, "", required=True), ".message", content_required=True)
    if not message["content"]:
        raise _Bad(".message.content", "is empty (a tool result holds its tool-result block)")
    _get(data, "error", dict, "")
    _get(data, "meta", dict, "")


def _request_header(data: dict[str, Any]) -> None:
    header = _get(data, "header", dict, "")
    if header is not None:
        _get(header, "system", str, ".header")
        tools = header.get("tools")
        if tools is not None and type(tools) is not list and type(tools) is not str:
            raise _Bad(".header.tools", f"must be an array or a string (got {_kind(tools)})")
    _get(data, "reason", str, "")


def _descriptor(data: dict[str, Any]) -> None:
    for key in ("mode", "provider", "label"):
        _get(data, key, str, "")
    delegation = _get(data, "delegation", dict, "")
    if delegation is not None:
        _get(delegation, "parentSession", str, ".delegation")
        _get(delegation, "callId", str, ".delegation")


def _end_seed(data: dict[str, Any]) -> None:
    _get(data, "inherited", bool, "")


def _title(data: dict[str, Any]) -> None:
    _get(data, "title", str, "")


def _assistant_chunk(data: dict[str, Any]) -> None:
    """A version-0 chunk event; checks its own nesting (the hot path of version-0 logs)."""
    for key, value in data.items():
        kind = type(value)
        if key != "chunk" and (kind is dict or kind is list):
            _depth(value, f".{key}", 2)
    _turn_step(data, True)
    chunk = _get(data, "chunk", dict, "", required=True)
    if not _flat_chunk(chunk):
        _chunk(chunk, ".chunk")
        _depth(chunk, ".chunk", 2)


def _compaction_summary(data: dict[str, Any]) -> None:
    _SUMMARY_FIELDS(data)
    _blocks(_get(data, "rawOutput", list, ""), ".rawOutput")
    _blocks(_get(data, "summary", list, ""), ".summary")


def _derived(typed: Any) -> Callable[[dict[str, Any]], None]:
    """The checker of a payload whose shape is only its TypedDict (:mod:`dsh.events.shapes`):
    each required key present, each key's value of its declared JSON type."""
    fields = json_fields(typed)

    def check(data: dict[str, Any]) -> None:
        for field in fields:
            value = data.get(field.key, _MISSING)
            if value is _MISSING:
                if field.required:
                    raise _Bad(f".{field.key}", "is missing")
            elif field.types is not None and type(value) not in field.types:
                wanted = " or ".join(_KINDS[t] for t in field.types)
                raise _Bad(f".{field.key}", f"must be {wanted} (got {_kind(value)})")

    return check


_SUMMARY_FIELDS: Final = _derived(PAYLOADS[COMPACTION_SUMMARY])

READ_LENIENT: Final[dict[str, frozenset[str]]] = {
    STEP_END: frozenset({"turn", "step"}),
    USER_MESSAGE: frozenset({"role"}),
    REQUEST_HEADER: frozenset({"header", "reason"}),
    ASSISTANT_MESSAGE: frozenset({"turn", "step", "message"}),
    ASSISTANT_ATTEMPT: frozenset({"turn", "step", "failure", "stream"}),
    TOOL_CALL: frozenset({"arguments"}),
    TOOL_RESULT: frozenset({"turn", "step"}),
    TURN_END: frozenset({"turn"}),
}
"""Required keys of a payload's TypedDict (:data:`dsh.events.shapes.PAYLOADS`) that a log may
lack and still be read: the original's version-0 logs and older dsh logs omit them, and their
readers default them (``dsh.events.payloads``). Every other key is checked as its TypedDict
states it (``tests/test_payload_shapes.py`` holds the hand-written checkers to that)."""

_SHAPES: Final[dict[str, Any]] = {
    **{etype: _derived(typed) for etype, typed in PAYLOADS.items()},
    TURN_START: _turn_start,
    TURN_END: _turn_end,
    STEP_START: _step,
    STEP_END: _step_end,
    USER_MESSAGE: _user_message,
    REQUEST_HEADER: _request_header,
    ASSISTANT_MESSAGE: _settlement,
    ASSISTANT_ATTEMPT: _settlement,
    TOOL_CALL: _tool_call,
    TOOL_RESULT: _tool_result,
    SUBAGENT_DESCRIPTOR: _descriptor,
    SESSION_END_SEED: _end_seed,
    SESSION_TITLE: _title,
    ASSISTANT_CHUNK: _assistant_chunk,
    COMPACTION_SUMMARY: _compaction_summary,
}
"""Per event type, the fields something reads: required ones must be there; any present must
have the JSON type its readers use. A written type without a hand-written checker (the hot
paths and the lenient reads keep theirs) is checked as derived from its TypedDict; other
fields (and other legacy types' fields) stay opaque."""


def check_data_shape(etype: str, seq: int, data: object, where: str) -> None:
    """Refuse ``data`` that a projection, replay or ``--resume`` could not read.

    Every known type's ``data`` is an object nested at most :data:`MAX_DATA_DEPTH` deep, with
    the fields listed in ``_SHAPES`` typed; an ignorable unknown type is only depth-checked.
    Raises :class:`~dsh.errors.EventShapeError` naming the event and the field.
    """
    try:
        if type(data) is dict:
            shape = _SHAPES.get(etype)
            if shape is _settlement or shape is _assistant_chunk or shape is _user_message:
                shape(data)  # checks its own nesting, in the same pass
                return
            for value in data.values():
                kind = type(value)
                if kind is dict or kind is list:
                    _depth(data, "")
                    break
            if shape is not None:
                shape(data)
            return
        if etype in KNOWN_TYPES:
            raise _Bad("", f"must be an object (got {_kind(data)})")
        _depth(data, "")
    except _Bad as bad:
        raise EventShapeError(f"{where}: {etype} seq {seq}: data{bad.path} {bad.problem}") from None


def check_event_shape(event: Event, where: str) -> None:
    """:func:`check_data_shape` of the event's data, and its ``surfaceOp`` nesting."""
    check_data_shape(event.type, event.seq, event.data, where)
    if event.surface_op is None or type(event.surface_op) is str:
        return
    try:
        _depth(event.surface_op, "")
    except _Bad as bad:
        raise EventShapeError(f"{where}: {event.type} seq {event.seq}: surfaceOp {bad.problem}") from None
