"""Every JSON dsh writes: canonical compact JSON with the lossless-JSON rule, and the few
other forms a wire or a screen needs, each named for its exact bytes.

``dumps`` / ``encode_checked`` write compact UTF-8 JSON with dict keys in insertion order
(so an event keeps ``type`` first). orjson silently writes NaN and Infinity as ``null``; we
refuse them, and any other value that would not round-trip (non-str keys, non-JSON types,
subclasses, integers outside the 64-bit range), with :class:`~dsh.errors.InvalidEventError`.
``dumps_unchecked`` is the same bytes for a value already known to be lossless, used at once;
``dumps_kept`` the same, right-sized, for an encoding kept (a memo). The
``*_text`` forms are the standard library's (other separators, ASCII escapes, float
spelling) for the wires that were recorded with them; ``dumps_pretty`` is for people.
No other module calls ``orjson.dumps`` or ``json.dumps`` (``tests/test_one_json_home.py``).
"""

from __future__ import annotations

import json
import marshal
import math
from typing import Any, Final

import orjson

from dsh.errors import InvalidEventError

JsonValue = Any
"""A JSON value: ``None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]``."""

_MAX_INT = 2**63 - 1


def _find_non_json(value: object, path: str) -> str | None:
    """Return a description of the first non-round-trippable value, or ``None``."""
    stack: list[tuple[object, str]] = [(value, path)]
    while stack:
        v, p = stack.pop()
        t = type(v)
        if t is str or t is bool or v is None:
            continue
        if t is int:
            if not -_MAX_INT - 1 <= v <= _MAX_INT:  # type: ignore[operator]
                return f"{p}: integer {v} is out of range"
            continue
        if t is float:
            if not math.isfinite(v):  # type: ignore[arg-type]
                return f"{p}: {v} is not valid JSON"
            continue
        if t is dict:
            for k, item in v.items():  # type: ignore[attr-defined]
                if type(k) is not str:
                    return f"{p}: key {k!r} is not a string"
                stack.append((item, f"{p}.{k}"))
            continue
        if t is list:
            for i, item in enumerate(v):  # type: ignore[arg-type]
                stack.append((item, f"{p}[{i}]"))
            continue
        return f"{p}: {t.__name__} is not a JSON value"
    return None


_STRICT: Final = orjson.OPT_STRICT_INTEGER


def _proven_encoding(value: object) -> bytes | None:
    """The canonical encoding of ``value`` if a fast, conservative test proves it lossless.

    ``marshal`` (C) accepts only exact builtin types (no subclasses, enums or other
    objects), so what is left to rule out is what orjson would write lossily: tuples
    (written as lists) and NaN/Infinity (written as ``null``) make the round trip differ;
    non-string keys, sets, bytes and integers beyond 53 bits make orjson refuse. ``None``
    only means "not proven": the walker then decides.
    """
    try:
        marshal.dumps(value)  # type: ignore[arg-type]  # any object: a refusal is the answer
        encoded = orjson.dumps(value, option=_STRICT)
        return encoded if orjson.loads(encoded) == value else None
    except (TypeError, ValueError):
        return None


def _fitted(encoded: bytes) -> bytes:
    """``encoded`` in an allocation of its own length.

    orjson (3.12 on) returns its bytes in the buffer it wrote them into — at least 4 KiB,
    rounded up to a power of two — and never shrinks it. What dsh keeps is kept for a
    session's life (``Event.data_json``, memoized lines, a memory store's log): as returned,
    a small event's encoding held 4 KiB (``tests/test_fitted_encodings.py``). A two-part join
    copies into an exact allocation (~0.25 us): paid by the checked encodings (what events
    keep) and :func:`dumps_kept`, not by an encoding used at once (a request body, a stream
    chunk served, a redaction scan)."""
    return b"".join((encoded, b""))


def encode_checked(value: object, what: str = "value") -> bytes:
    """Canonical compact JSON of ``value``; :class:`InvalidEventError` unless it is lossless."""
    encoded = _proven_encoding(value)
    if encoded is not None:
        return _fitted(encoded)
    problem = _find_non_json(value, what)
    if problem is not None:
        raise InvalidEventError(f"refusing non-JSON data at {problem}")
    return _fitted(orjson.dumps(value))


def check_json(value: object, what: str = "value") -> None:
    """Raise :class:`InvalidEventError` unless ``value`` is lossless JSON."""
    encode_checked(value, what)


def dumps(value: object) -> bytes:
    """Serialize ``value`` compactly after checking it is lossless JSON."""
    return encode_checked(value)


def dumps_unchecked(value: object) -> bytes:
    """Serialize ``value`` that is already known to be lossless JSON (e.g. just decoded), for
    use at once (written, sent, scanned, joined): in orjson's own buffer (:func:`_fitted`)."""
    return orjson.dumps(value)


def dumps_kept(value: object) -> bytes:
    """:func:`dumps_unchecked` for an encoding kept beyond the call (a memo), right-sized."""
    return _fitted(orjson.dumps(value))


def dumps_sorted(value: object) -> str:
    """Compact JSON text with sorted keys, for comparing values (not for writing logs)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def dumps_pretty(value: object) -> str:
    """``value`` indented by two spaces, keys in insertion order (for showing, not storing)."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode("utf-8", errors="replace")


def dumps_compact_text(value: object, *, ascii_only: bool = False, lenient: bool = False) -> str:
    """The standard library's compact form (``","`` / ``":"``): non-ASCII kept unless
    ``ascii_only``; ``lenient`` writes an unknown object as its ``str``."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=ascii_only, default=str if lenient else None)


def dumps_spaced_text(
    value: object, *, indent: int | None = None, ascii_only: bool = True, lenient: bool = False
) -> str:
    """The standard library's default form (``", "`` / ``": "``, or ``indent`` lines)."""
    return json.dumps(value, indent=indent, ensure_ascii=ascii_only, default=str if lenient else None)


def loads(data: bytes | str) -> JsonValue:
    """Parse JSON text; raises ``orjson.JSONDecodeError`` (a ``ValueError``) on bad input."""
    return orjson.loads(data)


JSONDecodeError = orjson.JSONDecodeError
Fragment = orjson.Fragment
"""Already-encoded JSON that ``orjson.dumps`` embeds verbatim."""
