"""Events: the envelope, the vocabulary, stream chunks, messages and the session header.

Names load on first use (:mod:`dsh.lazy`): ``from dsh.events import Event`` loads the
envelope alone, not the block assembler or the fork rule (what a listing never needs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh.lazy import exports

_HOMES = {
    "Assembled": "dsh.events.assembler",
    "BlockAssembler": "dsh.events.assembler",
    "Event": "dsh.events.envelope",
    "JsonObject": "dsh.events.envelope",
    "check_event": "dsh.events.envelope",
    "encode_event": "dsh.events.envelope",
    "event_from_wire": "dsh.events.envelope",
    "read_event": "dsh.events.envelope",
    "ForkSeed": "dsh.events.fork",
    "fork_cut": "dsh.events.fork",
    "fork_seed": "dsh.events.fork",
    "FORMAT_VERSION": "dsh.events.header",
    "LEGACY_VERSION": "dsh.events.header",
    "SessionHeader": "dsh.events.header",
    "check_contiguous": "dsh.events.header",
    "check_cut": "dsh.events.header",
    "decode_cut": "dsh.events.header",
    "header_from_wire": "dsh.events.header",
    "is_cut_marker": "dsh.events.header",
}

__all__ = [
    "FORMAT_VERSION",
    "LEGACY_VERSION",
    "Assembled",
    "BlockAssembler",
    "Event",
    "ForkSeed",
    "JsonObject",
    "SessionHeader",
    "check_contiguous",
    "check_cut",
    "check_event",
    "decode_cut",
    "encode_event",
    "event_from_wire",
    "fork_cut",
    "fork_seed",
    "header_from_wire",
    "is_cut_marker",
    "read_event",
]

__getattr__, __dir__ = exports(__name__, _HOMES)

if TYPE_CHECKING:
    from dsh.events.assembler import Assembled, BlockAssembler
    from dsh.events.envelope import Event, JsonObject, check_event, encode_event, event_from_wire, read_event
    from dsh.events.fork import ForkSeed, fork_cut, fork_seed
    from dsh.events.header import (
        FORMAT_VERSION,
        LEGACY_VERSION,
        SessionHeader,
        check_contiguous,
        check_cut,
        decode_cut,
        header_from_wire,
        is_cut_marker,
    )
