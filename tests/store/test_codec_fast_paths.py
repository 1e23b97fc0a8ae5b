"""The decode's fast shape checks refuse exactly what the precise checks refuse.

A stream's chunks are checked in one pass and a plain message without a depth walk
(``dsh.store.codec``); these properties hold them to the precise rules, read through the
public decoder: a settlement's stream is refused exactly when one of its chunks, logged alone
as a version-0 ``assistant/chunk``, is refused; a message nested past the limit anywhere is
refused whichever path checks it.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.errors import CorruptLogError
from dsh.events import SessionHeader
from dsh.store import LoadedSession, decode_log, encode_log

HEADER = SessionHeader(id="s1", created_at=7, cwd="/w", is_seeded=False)
PREFIX = encode_log(LoadedSession(HEADER, 0, []))


def _line(etype: str, data: Any) -> bytes:
    return orjson.dumps({"type": etype, "seq": 0, "time": 0, "data": data}) + b"\n"


def _refused(line: bytes) -> str | None:
    """The one-line refusal of a log holding ``line`` as its only event, or ``None``."""
    try:
        decode_log(PREFIX + line, "p.jsonl")
    except CorruptLogError as exc:
        return str(exc)
    return None


_scalar = (
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-1, 1) | st.sampled_from(["", "x", "text"])
)
_shallow = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=2), max_leaves=3)
_text_block = st.fixed_dictionaries({"type": st.sampled_from(["text", "reasoning"]), "text": st.just("t")})
_tool_block = st.fixed_dictionaries(
    {"type": st.just("tool-call"), "id": st.just("c1"), "name": st.just("bash"), "arguments": st.just("{}")}
)

_VALID_CHUNKS = [
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["text-delta", "reasoning-delta"]),
            "index": st.integers(0, 3),
            "text": st.text(max_size=3),
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("tool-call-delta"), "index": st.integers(0, 3)},
        optional={"id": st.just("c1"), "name": st.just("bash"), "argumentsDelta": st.just("{")},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("block-start"),
            "index": st.integers(0, 3),
            "blockType": st.sampled_from(["text", "tool-call"]),
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("block-end"), "index": st.integers(0, 3), "block": _text_block | _tool_block}
    ),
    st.fixed_dictionaries({"type": st.just("usage"), "usage": st.just({"inputTokens": 1})}),
    st.fixed_dictionaries({"type": st.just("finish"), "reason": st.just({"kind": "stop"})}),
]


@st.composite
def _chunk(draw: st.DrawFn) -> Any:
    """A valid chunk, or one with a field dropped, retyped or added, or no object at all."""
    drawn: Any = draw(st.one_of(_VALID_CHUNKS))
    chunk: Any = dict(drawn)
    mutation = draw(st.sampled_from(["none", "none", "drop", "retype", "extra", "not-an-object"]))
    if mutation == "drop":
        chunk.pop(draw(st.sampled_from(sorted(chunk))))
    elif mutation == "retype":
        chunk[draw(st.sampled_from(sorted(chunk)))] = draw(_shallow)
    elif mutation == "extra":
        chunk[draw(st.sampled_from(["extra", "text", "index", "id"]))] = draw(_shallow)
    elif mutation == "not-an-object":
        chunk = draw(_shallow)
    return chunk


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # no timing
@given(st.lists(_chunk(), max_size=6))
def test_a_stream_is_refused_exactly_when_one_of_its_chunks_is(chunks: list[Any]) -> None:
    alone = [_refused(_line("assistant/chunk", {"turn": 1, "step": 1, "chunk": c})) for c in chunks]
    settlement = {"turn": 1, "step": 1, "stream": {"chunks": chunks, "dt": [0] * len(chunks)}}
    refused = _refused(_line("assistant/message", settlement))
    first_bad = next((i for i, why in enumerate(alone) if why is not None), None)
    if first_bad is None:
        assert refused is None
    else:
        assert refused is not None
        assert f"data.stream.chunks[{first_bad}]" in refused


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def _message(where: str, levels: int) -> dict[str, Any]:
    """A plain message with a value ``levels`` deep in a block, the source or the message."""
    block: dict[str, Any] = {"type": "text", "text": "hi"}
    source: dict[str, Any] = {"kind": "user"}
    message: dict[str, Any] = {"content": [block], "source": source, "role": "user", "id": "m1"}
    {"block": block, "source": source, "message": message}[where]["x"] = _deep(levels)
    return message


@pytest.mark.parametrize("where", ["block", "source", "message"])
def test_a_plain_message_nested_past_the_limit_is_refused(where: str) -> None:
    # user/message data sits at level 1, its message too; a settlement's message at level 2
    user_ok, user_deep = _message(where, 60), _message(where, 64)
    assert _refused(_line("user/message", user_ok)) is None
    assert "nested deeper than 64 levels" in (_refused(_line("user/message", user_deep)) or "")
    settled_ok, settled_deep = _message(where, 59), _message(where, 63)
    assert _refused(_line("assistant/message", {"turn": 1, "step": 1, "message": settled_ok})) is None
    refused = _refused(_line("assistant/message", {"turn": 1, "step": 1, "message": settled_deep}))
    assert "nested deeper than 64 levels" in (refused or "")
