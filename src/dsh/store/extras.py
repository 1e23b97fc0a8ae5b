"""Unknown header fields: what an imported log's header holds beyond the fields dsh knows.

A log written by another tool (or a newer dsh) may carry header fields dsh does not use
(``title``, ``model``, ...). Import keeps them (``LoadedSession.header_extra``), every store
persists them beside the session, and export writes them back on the header line, after
the known fields, in their recorded order. A fork child does not inherit them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from dsh import jsonx
from dsh.errors import InvalidEventError
from dsh.events import SessionHeader
from dsh.store.codec import header_wire

KNOWN_HEADER_KEYS: Final = frozenset(
    {
        "type",
        "version",
        "id",
        "createdAt",
        "cwd",
        "parentSession",
        "isSeeded",
        "origin",
        "delegationDepth",
        "agentPreset",
        "seedLength",  # version 0: decoded into the cut, written as the tagged marker instead
    }
)
"""Header keys dsh reads (and so writes from the logical header, never from the extras)."""


def header_extra(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a raw header line that dsh does not know, in their recorded order."""
    return {k: v for k, v in raw.items() if k not in KNOWN_HEADER_KEYS}


def check_header_extra(extra: Mapping[str, Any], session_id: str) -> bytes | None:
    """Refuse extras that shadow a known key or are not lossless JSON; their JSON (``None`` if empty)."""
    if not extra:
        return None
    where = f"session {session_id} header"
    if not isinstance(extra, Mapping) or not all(isinstance(k, str) for k in extra):
        raise InvalidEventError(f"{where}: extra header fields must be an object with string keys")
    shadowed = sorted(k for k in extra if k in KNOWN_HEADER_KEYS)
    if shadowed:
        names = ", ".join(shadowed)
        raise InvalidEventError(f"{where}: extra header fields may not use dsh's keys ({names})")
    return jsonx.encode_checked(dict(extra), f"{where} (extra fields)")


def decode_extra(text: str | bytes | None, where: str) -> dict[str, Any]:
    """Extras as a store persisted them (JSON object text), or ``{}``."""
    if text is None:
        return {}
    value = orjson.loads(text)
    if not isinstance(value, dict):
        raise InvalidEventError(f"{where}: stored extra header fields are not an object")
    return value


def encode_header_with_extra(header: SessionHeader, extra: Mapping[str, Any]) -> bytes:
    """The newline-terminated version-2 header line: the known fields, then ``extra``."""
    wire = header_wire(header)
    wire.update(extra)
    return jsonx.encode_checked(wire, f"session {header.id} header") + b"\n"
