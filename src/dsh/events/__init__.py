"""Events: the envelope, the vocabulary, stream chunks, messages and the session header."""

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
