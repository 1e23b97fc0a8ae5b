"""SseDecoder and the failure classifiers, without a network."""

from __future__ import annotations

import email.utils
import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.model.failures import (
    classify_status,
    classify_stream_error,
    error_text,
    parse_retry_after,
    retry_after_ms,
    scrub,
    status_message,
)
from dsh.model.sse import SseDecoder, SseEvent

STREAM = (
    b": keep-alive\r\n\r\n"
    b'event: message\r\ndata: {"a":\r\ndata:  1}\r\nid: 7\r\nretry: 10\r\n\r\n'
    b"data:no-space\r\r"
    b"data: caf\xc3\xa9\n\n"
    b"data\n\n"
    b"data: [DONE]"
)
EXPECTED = [
    SseEvent('{"a":\n 1}', "message"),
    SseEvent("no-space"),
    SseEvent("café"),
    SseEvent(""),
    SseEvent("[DONE]"),
]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 1000])
def test_decoder_is_independent_of_read_boundaries(size: int) -> None:
    decoder = SseDecoder()
    events: list[SseEvent] = []
    for i in range(0, len(STREAM), size):
        events += decoder.feed(STREAM[i : i + size])
    events += decoder.close()
    assert events == EXPECTED
    assert decoder.comments == 1


def test_split_crlf_is_one_line_break() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: x\r") == []
    assert decoder.feed(b"\n\r") == []
    assert decoder.feed(b"\n") == [SseEvent("x")]
    assert decoder.close() == []


def test_comment_only_and_blank_lines_make_no_events() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"\n\n: ping\n\nevent: x\n\n") == []
    assert decoder.close() == []


def test_invalid_utf8_raises_value_error() -> None:
    with pytest.raises(ValueError):
        SseDecoder().feed(b"data: \xff\n")


@pytest.mark.parametrize(
    ("status", "text", "code"),
    [
        (401, "", "AUTH"),
        (403, "", "AUTH"),
        (429, "", "RATE_LIMIT"),
        (429, "insufficient_quota", "QUOTA"),
        (402, "Insufficient Balance", "QUOTA"),
        (402, "pay up", "HTTP_402"),
        (400, "context_length_exceeded", "CONTEXT_OVERFLOW"),
        (400, "Prompt is too long", "CONTEXT_OVERFLOW"),
        (400, "bad", "BAD_REQUEST"),
        (413, "", "BAD_REQUEST"),
        (422, "", "BAD_REQUEST"),
        (503, "", "OVERLOADED"),
        (529, "", "OVERLOADED"),
        (500, "", "SERVER"),
        (504, "", "SERVER"),
        (418, "", "HTTP_418"),
    ],
)
def test_classify_status(status: int, text: str, code: str) -> None:
    assert classify_status(status, text) == code


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ({"message": "x", "code": 429}, "RATE_LIMIT"),
        ({"message": "x", "status": 401}, "AUTH"),
        ({"message": "maximum context length exceeded"}, "CONTEXT_OVERFLOW"),
        ({"message": "You exceeded your current quota"}, "QUOTA"),
        ({"message": "server is overloaded"}, "OVERLOADED"),
        ({"message": "rate limit"}, "RATE_LIMIT"),
        ({"message": "boom", "code": "internal"}, "SERVER"),
        ({"message": "boom", "code": True}, "SERVER"),
    ],
)
def test_classify_stream_error(error: dict[str, object], code: str) -> None:
    assert classify_stream_error(error) == code


def test_error_text_shapes() -> None:
    assert error_text({"error": {"message": "m", "type": "t", "code": "c"}}) == "m (t, c)"
    assert error_text({"error": "plain"}) == "plain"
    assert error_text({"detail": "fastapi"}) == "fastapi"
    assert error_text({"weird": 1}) == '{"weird": 1}'
    assert error_text(b"bytes") == "bytes"
    assert error_text(None) == ""


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3000
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "3"}) == 1500
    assert parse_retry_after({"retry-after-ms": "x", "retry-after": "1"}) == 1000
    assert parse_retry_after({"retry-after": "0"}) is None
    assert parse_retry_after({"retry-after": "later"}) is None
    assert parse_retry_after({}) is None
    date = email.utils.formatdate(1_000_010, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=1_000_000) == 10_000


def test_status_message_hints_round_trip() -> None:
    message = status_message(429, "RATE_LIMIT", "slow", retry_ms=1234, request_id="r1")
    assert message == "HTTP 429: slow [retry-after-ms=1234] [request-id=r1]"
    assert retry_after_ms(message) == 1234
    assert retry_after_ms("HTTP 500: no hint") is None
    assert "(check the API key)" in status_message(401, "AUTH", "")


def test_scrub() -> None:
    assert scrub("key sk-1 and\nsk-1 again", ["sk-1", ""]) == "key *** and *** again"
    long = "sk-1" + "x" * 1000
    out = scrub(long, ["sk-1"], limit=50)
    assert len(out) == 50 and out.startswith("***") and out.endswith("…")


class _CountingBuffer(bytearray):
    """A decoder's buffer that counts the bytes its line-break searches look at."""

    searched = 0

    def find(self, sub: Any, start: Any = None, end: Any = None) -> int:
        _CountingBuffer.searched += (len(self) if end is None else end) - (start or 0)
        return super().find(sub, start, end)


def test_a_huge_event_in_small_reads_is_scanned_once() -> None:
    """1 MB in 256-byte reads: each byte is searched for a line break a bounded number of times
    (a decoder that rescans its buffer on every read searches ~2 GB). Counted, not timed; the
    time it takes is ``bench/sse_decode.py``'s."""
    payload = b"data: " + b"x" * 1_000_000 + b"\r\n\r\ndata: [DONE]\n\n"
    decoder = SseDecoder()
    decoder._buffer = _CountingBuffer()
    _CountingBuffer.searched = 0
    events: list[SseEvent] = []
    for i in range(0, len(payload), 256):
        events += decoder.feed(payload[i : i + 256])
    assert events == [SseEvent("x" * 1_000_000), SseEvent("[DONE]")]
    assert _CountingBuffer.searched < 4 * len(payload), f"{_CountingBuffer.searched:,} bytes searched"


def test_a_cr_split_at_the_end_of_every_read_is_one_line_break() -> None:
    decoder = SseDecoder()
    events: list[SseEvent] = []
    for piece in (b"data: a", b"\r", b"\n", b"data: b\r", b"\ndata: c\r", b"\r", b"\r\n"):
        events += decoder.feed(piece)
    assert events == [SseEvent("a\nb\nc")]
    assert decoder.close() == []


@given(st.lists(st.integers(0, len(STREAM)), max_size=12))
def test_any_read_boundaries_give_the_same_events(cuts: list[int]) -> None:
    decoder = SseDecoder()
    events: list[SseEvent] = []
    bounds = [0, *sorted(cuts), len(STREAM)]
    for a, b in itertools.pairwise(bounds):
        events += decoder.feed(STREAM[a:b])
    assert [*events, *decoder.close()] == EXPECTED
