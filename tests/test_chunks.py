"""The chunk union: constructors write the canonical wire, ``as_chunk`` reads it back."""

from __future__ import annotations

import pytest

from dsh import jsonx
from dsh.events import chunks as ck
from dsh.events.assembler import BlockAssembler
from dsh.events.chunks import Chunk, as_chunk, finish_failure


def wire(chunk: Chunk) -> str:
    return jsonx.dumps(chunk).decode()


def test_constructors_write_the_canonical_key_order() -> None:
    assert wire(ck.block_start(0, "text")) == '{"type":"block-start","index":0,"blockType":"text"}'
    assert wire(ck.tool_call_delta(1, "c1", "read", '{"a"')) == (
        '{"type":"tool-call-delta","index":1,"id":"c1","name":"read","argumentsDelta":"{\\"a\\""}'
    )
    assert wire(ck.tool_call_delta(1, "c1", None, "}")) == (
        '{"type":"tool-call-delta","index":1,"id":"c1","argumentsDelta":"}"}'
    )
    assert wire(ck.error_finish("SERVER", "boom")) == (
        '{"type":"finish","reason":{"kind":"error","failure":{"code":"SERVER","message":"boom"}}}'
    )
    assert wire(ck.finish("stop")) == '{"type":"finish","reason":{"kind":"stop"}}'
    usage: ck.Usage = {"inputTokens": 3, "outputTokens": 1}
    chunk = ck.usage_chunk(usage)
    assert wire(chunk) == '{"type":"usage","usage":{"inputTokens":3,"outputTokens":1}}'
    assert chunk["type"] == "usage" and chunk["usage"] is not usage  # a copy


def test_as_chunk_is_the_one_reader_of_recorded_chunks() -> None:
    recorded = {"type": "text-delta", "index": 0, "text": "hi", "providerMeta": {"x": 1}}
    assert as_chunk(recorded) is recorded  # recorded fields are kept as they are
    for bad in ({"type": "assistant/chunk"}, {"index": 0}, ["finish"], "finish", None):
        assert as_chunk(bad) is None, bad


@pytest.mark.parametrize(
    ("chunk", "expected"),
    [
        (ck.finish("stop"), None),
        (ck.text_delta(0, "x"), None),
        (ck.error_finish("RATE_LIMIT", "slow down"), {"code": "RATE_LIMIT", "message": "slow down"}),
        (
            {"type": "finish", "reason": {"kind": "aborted"}},
            {"code": "UNKNOWN", "message": "model call failed"},
        ),
    ],
)
def test_finish_failure(chunk: Chunk, expected: ck.Failure | None) -> None:
    assert finish_failure(chunk) == expected


def test_the_assembler_reads_each_member_of_the_union() -> None:
    assembler = BlockAssembler()
    stream = [
        ck.block_start(0, "reasoning"), ck.reasoning_delta(0, "think"),
        ck.text_delta(1, "an"), ck.text_delta(1, "swer"),
        ck.tool_call_delta(2, "c1", "read", '{"file_path":'), ck.tool_call_delta(2, "", None, '"a"}'),
        ck.block_end(1, {"type": "text", "text": "answer!"}), ck.text_delta(1, " ignored"),
        ck.usage_chunk({"inputTokens": 1}), ck.finish("tool-calls"), ck.error_finish("X", "late"),
    ]  # fmt: skip
    for chunk in stream:
        assembler.feed(chunk)
    result = assembler.result()
    assert result.content == [
        {"type": "reasoning", "text": "think"},
        {"type": "text", "text": "answer!"},
        {"type": "tool-call", "id": "c1", "name": "read", "arguments": '{"file_path":"a"}'},
    ]
    assert (result.usage, result.finish_kind, result.failure) == ({"inputTokens": 1}, "tool-calls", None)
