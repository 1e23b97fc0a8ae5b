"""The version-2 file codec: header line, version policy, torn tails, cut rules, zstd."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard
from bench import mutated_logs
from hypothesis import given
from hypothesis import strategies as st

from dsh.errors import CorruptLogError, EventShapeError, InvalidEventError, StoreError, UnsupportedFormatError
from dsh.events import Event, SessionHeader
from dsh.events.vocabulary import KNOWN_TYPES, SESSION_END_SEED
from dsh.store import LoadedSession, decode_log, encode_log, read_log_file, write_log_file
from dsh.store.codec import encode_event_checked, encode_header_line
from dsh.store.samples import completed_turns, varied_events

HEADER = SessionHeader(id="s1", created_at=7, cwd="/w", is_seeded=False)


def log_bytes(events: list[Event], header: SessionHeader = HEADER) -> bytes:
    return encode_log(LoadedSession(header, 0, events))


def test_header_line_is_canonical() -> None:
    header = SessionHeader(
        id="c",
        created_at=3,
        cwd="/w",
        parent_session="p",
        origin="subagent",
        delegation_depth=1,
        agent_preset="coder",
        is_seeded=True,
    )
    assert encode_header_line(header) == (
        b'{"type":"session","version":2,"id":"c","createdAt":3,"cwd":"/w","parentSession":"p",'
        b'"isSeeded":true,"origin":"subagent","delegationDepth":1,"agentPreset":"coder"}\n'
    )
    assert encode_header_line(SessionHeader(id="t", created_at=0)) == (
        b'{"type":"session","version":2,"id":"t","createdAt":0,"isSeeded":false,"delegationDepth":0}\n'
    )


def test_round_trip_of_a_whole_log() -> None:
    events = [*completed_turns(2), *varied_events(12)]
    data = log_bytes(events)
    decoded = decode_log(data, "x.jsonl")
    assert decoded.version == 2 and decoded.warnings == ()
    assert decoded.as_loaded() == LoadedSession(HEADER, 0, events)
    assert decoded.for_import() == decoded.as_loaded()
    assert decoded.raw_header["type"] == "session"
    assert encode_log(decoded.as_loaded()) == data


@pytest.mark.parametrize("version", [3, 17, 10**6])
def test_future_version_is_refused_as_newer(version: int) -> None:
    data = orjson.dumps({"version": version, "anything": "else"}) + b"\n{garbage\n"
    with pytest.raises(
        UnsupportedFormatError, match=rf"^new\.jsonl: log format version {version} is newer.*upgrade dsh"
    ):
        decode_log(data, "new.jsonl")


@pytest.mark.parametrize("version", [1, -1, "2", None, 2.0, True])
def test_unknown_version_is_refused(version: Any) -> None:
    data = orjson.dumps({"type": "session", "version": version, "id": "x", "createdAt": 0}) + b"\n"
    with pytest.raises(UnsupportedFormatError, match=r"^odd\.jsonl: unknown format version"):
        decode_log(data, "odd.jsonl")


def test_missing_version_is_unknown() -> None:
    with pytest.raises(UnsupportedFormatError, match="unknown format version None"):
        decode_log(b'{"type":"session","id":"x"}\n', "m.jsonl")


def test_unknown_type_refuses_the_load_unless_ignorable() -> None:
    ok = log_bytes([Event("future/thing", 0, 0, {}, ignorable=True)])
    assert decode_log(ok, "ok.jsonl").events[0].ignorable
    bad = log_bytes([]) + b'{"type":"future/thing","seq":0,"time":0,"data":{}}\n'
    with pytest.raises(UnsupportedFormatError, match=r"bad\.jsonl, line 2: .*'future/thing'.*upgrade dsh"):
        decode_log(bad, "bad.jsonl")


MINIMAL_DATA: dict[str, dict[str, Any]] = {
    "turn/start": {"turn": 1},
    "step/start": {"turn": 1, "step": 1},
    "user/message": {"content": []},
    "tool/call": {"turn": 1, "step": 1, "callId": "c", "name": "bash"},
    "tool/result": {"message": {"content": [{"type": "tool-result", "toolCallId": "c", "content": []}]}},
    "assistant/chunk": {"turn": 1, "step": 1, "chunk": {"type": "usage", "usage": {}}},
    "sandbox/mode": {"mode": "read-only"},
    "approval/policy": {"policy": "ask"},
    "approval/asked": {"id": "a", "toolName": "bash"},
    "approval/decided": {"id": "a", "outcome": "rejected"},
    "agent/inbox/spliced": {"target": "next-turn", "start": 0, "inserted": []},
    "todo/write": {"todos": []},
    "compaction/start": {"compactionId": "c", "turn": None},
    "compaction/end": {"compactionId": "c", "turn": 1},
    "compaction/summary": {
        "compactionId": "c",
        "summary": [],
        "rawOutput": [],
        "shadowedRange": {"start": 0, "end": 0},
        "shadowedSeqs": [0],
        "shadowedTokenCount": 1,
        "provider": "p",
        "model": "m",
    },
}
"""The least ``data`` each type needs (types not listed need only an object)."""


def minimal(etype: str) -> dict[str, Any]:
    return dict(MINIMAL_DATA.get(etype, {}))


def test_every_known_type_is_accepted() -> None:
    events = [Event(t, i, 0, minimal(t)) for i, t in enumerate(sorted(KNOWN_TYPES - {SESSION_END_SEED}))]
    assert decode_log(log_bytes(events), "k.jsonl").events == events


@pytest.mark.parametrize(
    ("body", "line", "problem"),
    [
        (b"{nope\n" + b'{"type":"turn/end","seq":0,"time":0,"data":{}}\n', 2, "not valid JSON"),
        (b'{"type":"turn/start","seq":1,"time":0,"data":{"turn":1}}\n', 2, "expected seq 0, found 1"),
        (b'{"type":"turn/start","seq":0,"time":0}\n', 2, "'data' is required"),
        (b'{"type":"turn/start","seq":0,"time":0,"data":{},"x":1}\n', 2, "unknown envelope key"),
        (b'{"type":"turn/start","seq":0,"time":"0","data":{}}\n', 2, "'time' must be an integer"),
        (
            b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}\n\n{"type":"turn/end","seq":1,"time":0,"data":{}}\n',
            3,
            "",
        ),
        (b"[1]\n" + b"{}\n", 2, "must be a JSON object"),
    ],
)
def test_corruption_before_the_tail_is_fatal_with_path_and_line(body: bytes, line: int, problem: str) -> None:
    with pytest.raises(CorruptLogError, match=rf"^c\.jsonl, line {line}: .*{problem}"):
        decode_log(log_bytes([]) + body, "c.jsonl")


def test_bad_header_lines_are_corrupt() -> None:
    with pytest.raises(CorruptLogError, match="empty file"):
        decode_log(b"", "e.jsonl")
    with pytest.raises(CorruptLogError, match="line 1: the session header line is incomplete"):
        decode_log(b'{"type":"session","version":2', "e.jsonl")
    with pytest.raises(CorruptLogError, match="line 1: the session header is not valid JSON"):
        decode_log(b"hello\n", "e.jsonl")
    with pytest.raises(CorruptLogError, match="line 1: the first line is not a session header object"):
        decode_log(b"[2]\n", "e.jsonl")
    with pytest.raises(CorruptLogError, match="line 1: the first line is not a session header"):
        decode_log(b'{"type":"event","version":2,"id":"x","createdAt":0,"isSeeded":false}\n', "e.jsonl")
    with pytest.raises(CorruptLogError, match="isSeeded"):
        decode_log(b'{"type":"session","version":2,"id":"x","createdAt":0}\n', "e.jsonl")


@pytest.mark.parametrize("tail", [b'{"type":"turn/start","se', b"\x00\x00\x00", b'{"type":"turn/start"}'])
def test_a_torn_last_line_after_the_last_turn_end_is_dropped(tail: bytes) -> None:
    events = completed_turns(1)
    decoded = decode_log(log_bytes(events) + tail, "t.jsonl")
    assert decoded.events == events
    assert len(decoded.warnings) == 1 and "t.jsonl" in decoded.warnings[0] and "line 8" in decoded.warnings[0]


def test_an_invalid_last_line_with_newline_is_corruption_not_a_torn_tail() -> None:
    """A complete line (its newline written) is never a write cut short (#36 item 9)."""
    events = completed_turns(1)
    with pytest.raises(CorruptLogError, match=r"^t\.jsonl, line 8: not valid JSON$"):
        decode_log(log_bytes(events) + b'{"type":"turn/st\n', "t.jsonl")


def test_a_valid_line_without_newline_is_still_torn() -> None:
    events = completed_turns(1)
    whole = log_bytes(events)
    decoded = decode_log(whole[:-1], "t.jsonl")
    assert decoded.events == events[:-1] and decoded.warnings


def test_a_torn_line_that_is_not_last_is_fatal() -> None:
    events = completed_turns(1)
    data = log_bytes(events[:3]) + b'{"type":"turn/en\n' + log_bytes(events)[len(log_bytes(events[:3])) :]
    with pytest.raises(CorruptLogError, match=r"t\.jsonl, line 5: not valid JSON"):
        decode_log(data, "t.jsonl")


def test_the_cut_is_the_last_tagged_marker() -> None:
    prefix = completed_turns(1)
    old = Event(SESSION_END_SEED, 6, 0, {"inherited": True})
    plain = Event(SESSION_END_SEED, 7, 0, {})
    new = Event(SESSION_END_SEED, 8, 0, {"inherited": True})
    seeded = HEADER.evolve(is_seeded=True)
    data = encode_log(LoadedSession(seeded, 8, [*prefix, old, plain, new]))
    assert decode_log(data, "f.jsonl").inherited_event_count == 8


def test_seeded_without_marker_and_marker_without_seeded_are_corrupt() -> None:
    events = completed_turns(1)
    marker = Event(SESSION_END_SEED, 6, 0, {"inherited": True})
    seeded_line = encode_header_line(HEADER.evolve(is_seeded=True))
    plain_line = encode_header_line(HEADER)
    body = b"".join(encode_event_checked(e) + b"\n" for e in events)
    with pytest.raises(CorruptLogError, match="isSeeded but no session/end-seed"):
        decode_log(seeded_line + body, "a.jsonl")
    with pytest.raises(CorruptLogError, match="marker at seq 6 but header says not seeded"):
        decode_log(plain_line + body + encode_event_checked(marker) + b"\n", "b.jsonl")


def test_encode_log_refuses_an_inconsistent_session() -> None:
    events = completed_turns(1)
    with pytest.raises(InvalidEventError):
        encode_log(LoadedSession(HEADER.evolve(is_seeded=True), 0, events))
    with pytest.raises(InvalidEventError):
        encode_log(LoadedSession(HEADER, 0, events[1:]))
    with pytest.raises(InvalidEventError, match="not a JSON value"):
        encode_log(LoadedSession(HEADER, 0, [Event("turn/start", 0, 0, {"x": {1, 2}})]))


async def test_files_round_trip_plain_and_zstd(tmp_path: Path) -> None:
    session = LoadedSession(HEADER, 0, completed_turns(2))
    for name in ("log.jsonl", "log.jsonl.zst"):
        path = tmp_path / "sub" / name
        await write_log_file(path, session)
        decoded = await read_log_file(path)
        assert decoded.as_loaded() == session and decoded.source == str(path)
    assert (tmp_path / "sub" / "log.jsonl.zst").read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["log.jsonl", "log.jsonl.zst"]


def test_zstd_logs_may_hold_several_frames_and_a_torn_last_frame() -> None:
    events = completed_turns(2)
    data = log_bytes(events)
    cut = len(log_bytes(events[:6]))
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    frames = cctx.compress(data[:cut]) + cctx.compress(data[cut:])
    assert decode_log(frames, "z.jsonl.zst").events == events
    torn = decode_log(frames[:-7], "z.jsonl.zst")
    assert torn.events[:6] == events[:6] and any("zstd frame is incomplete" in w for w in torn.warnings)
    damaged = bytearray(frames)
    damaged[len(frames) // 3] ^= 0xFF
    with pytest.raises(CorruptLogError, match=r"z\.jsonl\.zst"):
        decode_log(bytes(damaged), "z.jsonl.zst")


async def test_missing_and_unreadable_files_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"^log file .*nope\.jsonl does not exist$"):
        await read_log_file(tmp_path / "nope.jsonl")
    with pytest.raises(StoreError, match=r"^cannot read log file .*"):
        await read_log_file(tmp_path)


# -- encode → decode is identity (Hypothesis) -----------------------------------------------

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
_types = st.sampled_from(sorted(KNOWN_TYPES - {SESSION_END_SEED}))


@st.composite
def logs(draw: st.DrawFn) -> LoadedSession:
    events: list[Event] = []
    for seq in range(draw(st.integers(0, 8))):
        ignorable = draw(st.booleans())
        etype = draw(st.sampled_from(["future/x", "y"]) if ignorable else _types)
        surface = draw(st.sampled_from([None, "append", {"op": "replace", "start": 0, "end": 0}]))
        cites = draw(st.none() | st.lists(st.integers(0, seq - 1), max_size=3)) if seq else None
        time = draw(st.integers(-(2**63), 2**63 - 1))
        source = tuple(cites) if cites is not None else None
        if ignorable:
            data = draw(_json)
        else:  # a known type: what its readers need, plus arbitrary extra fields
            extra = draw(st.dictionaries(st.text(max_size=6).map(lambda k: f"x-{k}"), _json, max_size=3))
            data = {**extra, **minimal(etype)}
        events.append(Event(etype, seq, time, data, surface, source, ignorable))
    cut = 0
    seeded = draw(st.booleans())
    if seeded:
        cut = draw(st.integers(0, len(events)))
        marker = Event(SESSION_END_SEED, cut, 0, {"inherited": True})
        events = [*events[:cut], marker, *(e.with_seq(e.seq + 1) for e in events[cut:])]
    header = SessionHeader(
        id=draw(st.text(min_size=1, max_size=10)),
        created_at=draw(st.integers(0, 2**53)),
        cwd=draw(st.none() | st.just("/tmp/w")),
        parent_session=draw(st.none() | st.text(min_size=1, max_size=5)),
        origin=draw(st.none() | st.just("subagent")),
        delegation_depth=draw(st.integers(0, 5)),
        agent_preset=draw(st.none() | st.text(max_size=5)),
        is_seeded=seeded,
    )
    return LoadedSession(header, cut, events)


@given(logs())
def test_encode_then_decode_is_identity(session: LoadedSession) -> None:
    data = encode_log(session)
    decoded = decode_log(data, "prop.jsonl")
    assert decoded.as_loaded() == session
    assert encode_log(decoded.as_loaded()) == data


# -- event shape: what projections, replay and --resume read is refused at decode ------------------


def _line(etype: str, data: Any, seq: int = 0, **extra: Any) -> bytes:
    return orjson.dumps({"type": etype, "seq": seq, "time": 0, "data": data, **extra}) + b"\n"


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (_line("turn/start", []), r"turn/start seq 0: data must be an object \(got an array\)"),
        (_line("turn/start", "x"), r"data must be an object \(got a string\)"),
        (_line("turn/start", {}), r"data\.turn is missing"),
        (_line("turn/start", {"turn": "2"}), r"data\.turn must be an integer \(got a string\)"),
        (_line("turn/start", {"turn": True}), r"data\.turn must be an integer \(got a boolean\)"),
        (_line("step/start", {"turn": 1, "step": None}), r"data\.step must be an integer \(got null\)"),
        (_line("turn/end", {"turn": 1, "reason": "done"}), r"data\.reason must be an object"),
        (_line("user/message", {"role": "user", "content": "hi"}), r"data\.content must be an array"),
        (
            _line("user/message", {"content": [{"type": 7, "text": "x"}]}),
            r"data\.content\[0\]\.type must be a string",
        ),
        (_line("user/message", {"content": [1]}), r"data\.content\[0\] must be an object"),
        (
            _line(
                "assistant/message",
                {"turn": 1, "step": 1, "message": {"content": [{"type": "text", "text": 3}]}},
            ),
            r"data\.message\.content\[0\]\.text must be a string",
        ),
        (
            _line("assistant/message", {"turn": 1, "step": 1, "stream": {"chunks": [{"type": 3}]}}),
            r"data\.stream\.chunks\[0\]\.type must be a string",
        ),
        (
            _line(
                "assistant/message",
                {"turn": 1, "step": 1, "stream": {"chunks": [{"type": "text-delta", "index": 0}]}},
            ),
            r"data\.stream\.chunks\[0\]\.text is missing",
        ),
        (
            _line("assistant/message", {"turn": 1, "step": 1, "stream": {"chunks": [{"type": "nope"}]}}),
            r"data\.stream\.chunks\[0\]\.type 'nope' is not a stream chunk type",
        ),
        (
            _line("tool/call", {"turn": 1, "step": 1, "callId": ["c"], "name": "bash"}),
            r"data\.callId must be a string",
        ),
        (
            _line("tool/result", {"turn": 1, "step": 1, "message": {"content": []}}),
            r"data\.message\.content is empty",
        ),
        (
            _line(
                "tool/result",
                {"turn": 1, "step": 1, "message": {"content": [{"type": "tool-result", "toolCallId": {}}]}},
            ),
            r"toolCallId must be a string",
        ),
        (
            _line(
                "assistant/chunk",
                {"turn": 1, "step": [1], "chunk": {"type": "finish", "reason": {"kind": "stop"}}},
            ),
            r"data\.step must be an integer",
        ),
        (
            _line(
                "assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "finish", "reason": {"kind": 1}}}
            ),
            r"data\.chunk\.reason\.kind must be a string",
        ),
        (_line("session/title", 5), r"data must be an object"),
        (_line("turn/start", {"turn": 1, "x": _nested(65)}), r"data is nested deeper than 64 levels"),
        (_line("future/x", _nested(70), ignorable=True), r"data is nested deeper than 64 levels"),
        (
            _line("turn/start", {"turn": 1}, surfaceOp=_nested(70)),
            r"surfaceOp is nested deeper than 64 levels",
        ),
    ],
)
def test_malformed_event_data_is_refused_with_path_and_line(line: bytes, problem: str) -> None:
    with pytest.raises(CorruptLogError, match=rf"^c\.jsonl, line 2: .*{problem}") as info:
        decode_log(log_bytes([]) + line, "c.jsonl")
    assert isinstance(info.value.__cause__, EventShapeError)
    assert "\n" not in str(info.value)


def test_nesting_up_to_the_limit_is_kept() -> None:
    events = [Event("turn/start", 0, 0, {"turn": 1, "x": _nested(62)})]
    assert decode_log(log_bytes(events), "deep.jsonl").events == events


def test_the_recorded_header_tools_may_be_a_string() -> None:
    """The original writes ``request/header.header.tools`` as a string (a digest) in some logs."""
    data = {"header": {"system": "s", "tools": "sha:abc", "config": {}}, "reason": "initial"}
    events = [Event("request/header", 0, 0, data)]
    assert decode_log(log_bytes(events), "h.jsonl").events == events


V0_HEADER = {"type": "session", "version": 0, "id": "s0", "createdAt": 5, "cwd": "/w", "delegationDepth": 0}


def v0_log(*records: Any) -> bytes:
    return b"\n".join(orjson.dumps(r) for r in [V0_HEADER, *records]) + b"\n"


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ({"type": ["text-chunks"], "seq": 0, "time": 0, "data": {}}, "'type' must be a non-empty string"),
        ({"type": {"a": 1}, "seq0": 0, "time0": 0, "data": {}}, "unknown envelope key"),
        ({"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": "x"}}, r"data\.turn must be an int"),
        ({"type": "approval/policy", "seq": 0, "time": 0, "data": [1]}, "data must be an object"),
        (
            {"type": "text-chunks", "seq0": 0, "time0": 0,
             "data": {"turn": 1.5, "step": 1, "index": 0, "dt": [], "texts": ["a"]}},
            "must be integers",
        ),
        (
            {"type": "assistant/chunk", "seq": 0, "time": 0,
             "data": {"turn": 1, "step": 1, "chunk": {"type": "block-end", "index": 0, "block": []}}},
            r"data\.chunk\.block must be an object",
        ),
    ],
)  # fmt: skip
def test_malformed_version_0_records_are_refused_with_path_and_line(record: Any, problem: str) -> None:
    with pytest.raises(CorruptLogError, match=rf"^v0\.jsonl, line 2: .*{problem}"):
        decode_log(v0_log(record), "v0.jsonl")


def test_sampled_mutated_logs_fail_with_one_line_and_no_traceback() -> None:
    """A sample of ``bench/mutated_logs.py`` (which runs 3,000): inspect, import, show, export."""
    outcomes, _ = mutated_logs.run(count=150, seed=7, jobs=1, resume=False)
    summary = mutated_logs.summarize(outcomes)
    assert summary["bad"] == []
    verdicts = summary["verdicts"]
    assert verdicts[("sessions import", "error")] > 50 and verdicts[("sessions import", "ok")] > 20
