"""What a stdio server's stdout holds: lines (each at most :data:`MAX_LINE` bytes kept), and
what each line is — a message the SDK takes, an answer, a bad answer, or something ignored.

The judgement never raises and needs no state; which call a bad answer fails is
:mod:`dsh.mcp.answers`' rule. A line is **an attempt at an answer** when it is a JSON object
with ``id``, ``result``, ``error`` or ``jsonrpc`` and no ``method``, or when it is not JSON but
starts like an object or array and names one of those keys (``{"jsonrpc": "2.0", "id": 3, …``
cut short). Anything else that is not a message — log text, a JSON log line without those
keys, a bare value — is noise: ignored (and counted), never taken for an answer, so a server
that prints a banner or debug output on stdout keeps working as the SDK lets it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from pydantic import ValidationError

from dsh.jsonx import JSONDecodeError, loads
from dsh.mcp.complaints import Kind, sample
from mcp import types as mt

MAX_LINE: Final = 64 * 1024 * 1024
_MESSAGE_KEYS: Final = frozenset({"jsonrpc", "id", "method", "result", "error"})
_ANSWERISH = re.compile(rb'"(?:jsonrpc|id|result|error)"\s*:')
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,100}")')


@dataclass(frozen=True, slots=True)
class Message:
    """A well-formed request or notification of the server's."""

    message: mt.JSONRPCMessage


@dataclass(frozen=True, slots=True)
class Answer:
    """A well-formed response or error (``id`` as the SDK matches it)."""

    id: mt.RequestId
    message: mt.JSONRPCMessage


@dataclass(frozen=True, slots=True)
class BadAnswer:
    """An attempt at an answer that is not one (``id``: the id it names, when it can be read)."""

    id: mt.RequestId | None
    why: str


@dataclass(frozen=True, slots=True)
class Ignored:
    kind: Kind
    detail: str


Verdict = Message | Answer | BadAnswer | Ignored


class Lines:
    """Splits stdout's bytes into lines; a line over ``limit`` bytes is dropped as it comes
    (memory stays bounded) and reported as ``None``. A last line without a newline is no message."""

    def __init__(self, limit: int = MAX_LINE) -> None:
        self._buffer = bytearray()
        self._dropping = False
        self._limit = limit

    def feed(self, chunk: bytes) -> list[bytes | None]:
        self._buffer += chunk
        lines: list[bytes | None] = []
        start = 0
        while (end := self._buffer.find(b"\n", start)) >= 0:
            lines.append(None if self._dropping else bytes(self._buffer[start:end]))
            self._dropping, start = False, end + 1
        del self._buffer[:start]
        if len(self._buffer) > self._limit:
            self._buffer.clear()
            self._dropping = True
        return lines


def request_id(value: object) -> mt.RequestId | None:
    """An id as the SDK matches it (``"3"`` is 3); ``None`` when it cannot be one."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return value
    return value


def first_error(exc: ValidationError) -> str:
    """The first of a validation's errors, in one line (``where: what``)."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def _answerish(value: object) -> bool:
    return isinstance(value, dict) and "method" not in value and bool(value.keys() & _MESSAGE_KEYS)


def _unparsed(text: bytes) -> Verdict:
    if text[:1] in (b"{", b"[") and _ANSWERISH.search(text):
        found = _ID.search(text)
        return BadAnswer(request_id(loads(found.group(1))) if found else None, f"not JSON: {sample(text)}")
    return Ignored("noise", sample(text))


def judge(line: bytes) -> Verdict | None:
    """What ``line`` is (``None``: a blank line)."""
    text = line.strip()
    if not text:
        return None
    try:
        data = loads(text)
    except JSONDecodeError:  # invalid UTF-8 too
        return _unparsed(text)
    if isinstance(data, list) and any(_answerish(item) for item in data):
        return BadAnswer(None, "a batch of answers (MCP sends one message a line)")
    if not isinstance(data, dict) or not data.keys() & _MESSAGE_KEYS:
        return Ignored("noise", sample(text))
    rid = request_id(data.get("id"))
    try:
        message = mt.JSONRPCMessage.model_validate(data)
        root = message.root
        if isinstance(root, mt.JSONRPCRequest | mt.JSONRPCNotification):
            kind = mt.ServerRequest if isinstance(root, mt.JSONRPCRequest) else mt.ServerNotification
            kind.model_validate(root.model_dump(by_alias=True, mode="json", exclude_none=True))
            return Message(message)
    except ValidationError as exc:
        if "method" in data:
            return Ignored("unexpected", sample(text))
        if "result" in data and not isinstance(data["result"], dict):
            return BadAnswer(rid, "its result is not an object")
        return BadAnswer(rid, f"not a JSON-RPC answer ({first_error(exc)})")
    assert rid is not None  # a valid response or error has an id
    return Answer(rid, message)
