"""What a surface read leaves out: the one rule for partial events.

Resuming a session needs its model-visible history (messages, settlements, results) and its
small bookkeeping events, not every delta of every stream. A store read with
``streams=False`` may therefore hand back *partial* events (``Event.partial``):

- a settlement (``assistant/message``, ``assistant/attempt``) without its trailing
  :data:`DEFERRED_KEYS` (``stream``, ``wire``): the timed chunks and the exact wire reply;
- a version-0 ``assistant/chunk`` with ``data`` ``None``.

Stores keep those bytes apart (:func:`split_tail` at write, :func:`join_tail` at a full read),
so a surface read neither reads nor decodes them (SQLite does not even build a packed run's
partial chunks until they are read: :mod:`dsh.events.sparse`). A partial event can never be written
(``encode_event`` refuses it), so a stream cannot be lost by copying one.
"""

from __future__ import annotations

from typing import Any, Final

from dsh import jsonx
from dsh.events.vocabulary import ASSISTANT_ATTEMPT, ASSISTANT_CHUNK, ASSISTANT_MESSAGE

DEFERRED_KEYS: Final = frozenset({"stream", "wire"})
"""Top-level settlement keys a surface read leaves out, when they end the payload."""

SPLIT_TYPES: Final = frozenset({ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT})
"""Event types whose payload tail (:data:`DEFERRED_KEYS`) is stored apart."""

OPAQUE_TYPES: Final = frozenset({ASSISTANT_CHUNK})
"""Event types whose whole payload a surface read leaves out (``data`` ``None``)."""

SPLIT_MIN: Final = 512
"""Payloads shorter than this stay whole: a split saves nothing worth a second column."""


def split_tail(event_type: str, data: Any, encoded: bytes) -> tuple[bytes, bytes] | None:
    """``(head, tail)`` of a settlement's canonical ``encoded`` data, or ``None`` (keep it whole).

    ``head`` is the JSON object without its trailing deferred members; ``tail`` the bytes from
    the comma before the first of them through the closing brace, so that
    ``join_tail(head, tail) == encoded``. Only a payload whose deferred keys all come after
    every other key is split (what dsh writes; an import in another key order stays whole).
    """
    if event_type not in SPLIT_TYPES or type(data) is not dict or len(encoded) < SPLIT_MIN:
        return None
    keys = list(data)
    first = next((i for i, k in enumerate(keys) if k in DEFERRED_KEYS), None)
    if not first or not all(k in DEFERRED_KEYS for k in keys[first:]):
        return None  # none deferred, nothing before them, or a kept key after them
    head = jsonx.dumps_unchecked({k: data[k] for k in keys[:first]})
    cut = len(head) - 1  # where the head's closing brace is
    if encoded[cut : cut + 1] != b"," or encoded[:cut] != head[:cut]:
        return None  # not the canonical encoding of data: keep the bytes as they are
    return head, encoded[cut:]


def join_tail(head: bytes | str, tail: bytes) -> bytes:
    """The whole payload back from :func:`split_tail`'s halves."""
    raw = head.encode() if isinstance(head, str) else head
    return raw[:-1] + tail
