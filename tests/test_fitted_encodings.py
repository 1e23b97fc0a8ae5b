"""What dsh keeps of an encoding costs its length, not the encoder's working buffer.

orjson (3.12 on) hands back its bytes in the buffer it wrote them into — at least 4 KiB,
rounded up to a power of two — and never shrinks it. ``Session.append`` keeps each event's
checked encoding (``Event.data_json``) and the stores and exports memoize whole lines, for the
life of the session: kept as orjson returns them, a session of small events held about 4 KiB
an event (a 5,000-call replay peaked at 656 MB for a 20 MB recording). ``dsh.jsonx`` returns
them right-sized. Measured with ``tracemalloc`` (what the allocator handed out), not timed.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest

from dsh import jsonx
from dsh.events import SessionHeader
from dsh.events.envelope import encode_event
from dsh.session import Session

N = 500


def _held(build: Callable[[], list[bytes]]) -> tuple[int, int]:
    """(bytes allocated and still held by what ``build`` returns, their total length)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return held, sum(len(b) for b in kept)


@pytest.mark.parametrize(
    "encode",
    [jsonx.dumps, jsonx.encode_checked, jsonx.dumps_kept],
    ids=["dumps", "encode_checked", "dumps_kept"],
)
def test_an_encoding_holds_about_its_length(encode: Callable[[object], bytes]) -> None:
    values = [{"turn": i, "text": "w" * (i % 300)} for i in range(N)]
    held, length = _held(lambda: [encode(v) for v in values])
    # a bytes object's header is 33 bytes; the list of N pointers 8 N: 2x the payload covers both
    assert held < 2 * length + 64 * N, f"{held} bytes held for {length} bytes of JSON"


def test_an_appended_session_holds_about_its_encoded_size() -> None:
    """The session's kept encodings (``data_json``, the memoized line) of small events."""
    session = Session(SessionHeader(id="s", created_at=1, cwd="/work"))

    def append() -> list[bytes]:
        kept: list[bytes] = []
        for i in range(N):
            session.append("turn/start", {"turn": i + 1})
            event = session.events[-1]
            kept.append(encode_event(event))
            assert event.data_json is not None
            kept.append(event.data_json)
        return kept

    held, length = _held(append)
    # an Event object (~120 B), its data dict (~200 B), two bytes objects: well under 1 KiB an
    # event; orjson's buffers held 8 KiB (two of at least 4 KiB)
    assert held < N * 1024, f"{held / N:.0f} bytes held an event for {length / N:.0f} bytes of JSON"
