"""The typed payload readers of ``dsh.events.payloads``, over a log a real agent wrote."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import cast

import pytest

from dsh import Agent, Event, MemoryEventStore, ScriptedModel, jsonx, tool
from dsh.errors import DshError, EventShapeError
from dsh.events.chunks import StreamRecord, Usage
from dsh.events.envelope import encode_event
from dsh.events.messages import Message
from dsh.events.payloads import (
    approval_asked,
    approval_policy,
    approval_policy_of,
    assistant_attempt_data,
    assistant_blocks_of,
    assistant_message_data,
    blocks_of,
    failure_of,
    header_body,
    inbox_spliced,
    message_of,
    request_header_of,
    result_block,
    sandbox_mode,
    stream_of,
    tool_call_of,
    tool_result_data,
    tool_result_of,
    turn_end,
    turn_end_kind,
    turn_end_of,
    usage_of,
)
from dsh.loop import NO_DELAY, AgentConfig, Feed
from dsh.model.scripted import error_reply, hang_reply, text_reply, tool_call_reply
from dsh.store.codec import decode_event_line, decode_event_v2
from dsh.tools import ToolContext
from dsh.tools.approval import FixedApprover
from dsh.tools.sandbox import SandboxPolicy
from tests.patience import patience

_BARE: Message = {"role": "user", "content": []}

WRITTEN_BY_CONSTRUCTORS = ("turn/start", "step/start", "step/end", "tool/call", "turn/end")


@tool
def shout(word: str) -> str:
    """Upper-case a word."""
    return word.upper()


async def logged(tmp_path: Path) -> list[Event]:
    store = MemoryEventStore()
    model = ScriptedModel(
        [tool_call_reply("c1", "shout", {"word": "hi"}), error_reply("SERVER", "boom"), text_reply("HI")],
        model="m",
    )
    agent = await Agent.create(store, model=model, tools=[shout], standard_tools=False, cwd=tmp_path)
    await agent.run_turn("shout hi")
    return list((await store.load(agent.id)).events)


@tool
async def guarded(word: str, ctx: ToolContext) -> str:
    """Echo a word once the user allowed it."""
    assert ctx.approvals is not None
    return await ctx.approvals.request("guarded", ctx.call_id, f"say {word}", scope="tool:guarded")


def one(events: list[Event], etype: str) -> Event:
    [found] = [e for e in events if e.type == etype]
    return found


async def test_the_readers_see_what_the_loop_wrote(tmp_path: Path) -> None:
    events = await logged(tmp_path)
    call = tool_call_of(one(events, "tool/call"))
    assert call == {"turn": 1, "step": 1, "callId": "c1", "name": "shout", "arguments": '{"word":"hi"}'}
    result = tool_result_of(one(events, "tool/result"))
    assert result == {
        "type": "tool-result",
        "toolCallId": "c1",
        "content": [{"type": "text", "text": "HI"}],
        "isError": False,
    }
    answers = [b for e in events if (b := assistant_blocks_of(e)) is not None]
    assert answers[-1] == [{"type": "text", "text": "HI"}]
    assert [usage_of(e) for e in events if e.type == "assistant/message"] == [
        {"inputTokens": 10, "outputTokens": 5},
        {"inputTokens": 10, "outputTokens": 5},
    ]
    attempt = one(events, "assistant/attempt")
    assert failure_of(attempt) == {"code": "SERVER", "message": "boom"}
    streamed = [s for e in events if (s := stream_of(e)) is not None]
    assert [s["chunks"] for s in streamed] == [
        tool_call_reply("c1", "shout", {"word": "hi"}),
        error_reply("SERVER", "boom"),
        text_reply("HI"),
    ]
    assert all(len(s["dt"]) == len(s["chunks"]) - 1 for s in streamed), streamed  # the gaps between chunks
    end = one(events, "turn/end")
    assert turn_end_of(end) == turn_end(1, {"kind": "completed"}) and turn_end_kind(end) == "completed"
    # each reader answers None for an event of another type
    for event in events:
        if event.type != "turn/end":
            assert turn_end_of(event) is None and turn_end_kind(event) is None
        if event.type != "tool/call":
            assert tool_call_of(event) is None
        if event.type != "tool/result":
            assert tool_result_of(event) is None
        if event.type not in ("assistant/message", "tool/result"):
            assert message_of(event) is None


async def test_the_loop_writes_each_payload_in_its_logged_key_order(tmp_path: Path) -> None:
    events = await logged(tmp_path)
    lines = [f"{e.type} {jsonx.dumps(e.data).decode()}" for e in events if e.type in WRITTEN_BY_CONSTRUCTORS]
    assert lines == [
        'turn/start {"turn":1}',
        'step/start {"turn":1,"step":1}',
        'tool/call {"turn":1,"step":1,"callId":"c1","name":"shout","arguments":"{\\"word\\":\\"hi\\"}"}',
        'step/end {"turn":1,"step":1}',
        'step/start {"turn":1,"step":2}',
        'step/end {"turn":1,"step":2}',
        'turn/end {"turn":1,"reason":{"kind":"completed"}}',
    ]
    keys = [(e.type, list(e.data)) for e in events if e.type in ("request/header", "tool/result")]
    assert keys == [("request/header", ["header", "reason"]), ("tool/result", ["turn", "step", "message"])]
    failed = tool_result_data(1, 1, _BARE, error_code="TOOL_ERROR", meta={"k": 1})
    assert list(failed) == ["turn", "step", "message", "error", "meta"] and failed["error"] == {
        "code": "TOOL_ERROR"
    }
    assert list(tool_result_data(1, 1, _BARE, error_code="", meta=None)) == ["turn", "step", "message"]


async def test_every_turn_end_reason_is_logged_in_its_key_order(tmp_path: Path) -> None:
    """An error turn, a cancelled one and a completed one, as the store wrote them."""
    feed = Feed()
    hanging = asyncio.Event()
    feed.on_chunk(lambda sid, chunk: hanging.set() if chunk["type"] == "text-delta" else None)
    store = MemoryEventStore()
    model = ScriptedModel([error_reply("AUTH", "bad key"), hang_reply("part"), text_reply("ok")], model="m")
    agent = await Agent.create(store, model=model, standard_tools=False, cwd=tmp_path, feed=feed)
    failed = await agent.run_turn("one")
    assert failed.failure == {"code": "AUTH", "message": "bad key"} and not failed.ok
    task = asyncio.create_task(agent.run_turn("two"))
    await asyncio.wait_for(hanging.wait(), patience(30))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    done = await agent.run_turn("three")
    assert done.ok and done.failure is None and done.reason == {"kind": "completed"}
    ends = [jsonx.dumps(e.data).decode() for e in (await store.load(agent.id)).events if e.type == "turn/end"]
    assert ends == [
        '{"turn":1,"reason":{"kind":"error","failure":{"code":"AUTH","message":"bad key"}}}',
        '{"turn":2,"reason":{"kind":"aborted","reason":{"kind":"user"}}}',
        '{"turn":3,"reason":{"kind":"completed"}}',
    ]


async def test_model_calls_are_logged_in_their_key_order(tmp_path: Path) -> None:
    events = await logged(tmp_path)
    keys = [(e.type, list(e.data)) for e in events if e.type in ("assistant/message", "assistant/attempt")]
    assert keys == [
        ("assistant/message", ["turn", "step", "message", "usage", "stream"]),
        ("assistant/attempt", ["turn", "step", "failure", "stream"]),
        ("assistant/message", ["turn", "step", "message", "usage", "stream"]),
    ]
    usage: Usage = {"inputTokens": 1}
    stream: StreamRecord = {"chunks": [], "dt": []}
    cut = assistant_message_data(1, 2, _BARE, stream, interrupted=True)
    assert list(cut) == ["turn", "step", "message", "interrupted", "stream"] and cut["interrupted"] is True
    served = assistant_message_data(1, 2, _BARE, stream, usage=usage, wire_usage={"prompt_tokens": 1})
    assert list(served) == ["turn", "step", "message", "usage", "wireUsage", "stream"]
    failed = assistant_attempt_data(1, 2, {"code": "X", "message": "m"}, stream, usage=usage)
    assert list(failed) == ["turn", "step", "failure", "stream", "usage"]


def test_lenient_reading_of_partial_payloads() -> None:
    assert turn_end_of(Event("turn/end", 0, 0, {"turn": 2})) == {"turn": 2}
    assert turn_end_kind(Event("turn/end", 0, 0, {"turn": 2, "reason": {"kind": 7}})) is None
    message = cast(  # a recorded message, malformed: read leniently
        Message,
        {"content": [{"type": "text", "text": "x"}, "junk", {"type": "tool-result", "toolCallId": "c"}]},
    )
    assert result_block(message) == {
        "type": "tool-result",
        "toolCallId": "c",
        "content": [],
        "isError": False,
    }
    assert (
        result_block({"role": "user", "content": [{"type": "text", "text": "x"}]}) is None
        and result_block(None) is None
    )
    assert assistant_blocks_of(Event("assistant/message", 0, 0, {"message": None})) == []
    assert failure_of(Event("assistant/attempt", 0, 0, {"failure": "x"})) is None
    logged = [{"type": "text-delta", "index": 0, "text": "x"}]
    timed = Event("assistant/message", 0, 0, {"stream": {"chunks": logged, "dt": [3, "x"]}})
    read = stream_of(timed)
    assert read is not None and read["chunks"] is logged and read["dt"] == [3]  # no copy on the load path
    assert stream_of(Event("assistant/message", 0, 0, {"message": {}})) is None


def test_a_stream_with_a_chunk_that_is_not_one_never_reaches_the_readers() -> None:
    """``stream_of`` trusts the chunk shapes: they are the codec's rule, checked at decode."""
    line = {
        "type": "assistant/message",
        "seq": 3,
        "time": 0,
        "data": {"turn": 1, "step": 1, "message": {"role": "assistant", "content": []},
                 "stream": {"chunks": [{"type": "nope"}], "dt": []}},
    }  # fmt: skip
    with pytest.raises(DshError, match=r"nope|chunk"):
        decode_event_v2(line, "session.jsonl:4")


async def test_the_mode_inbox_and_approval_events_are_logged_in_their_key_order(tmp_path: Path) -> None:
    """A real agent under a file policy, asked for an approval, with a message queued for its step."""
    store = MemoryEventStore()
    model = ScriptedModel([tool_call_reply("c1", "guarded", {"word": "hi"}), text_reply("ok")], model="m")
    config = AgentConfig(
        model="m",
        retry=NO_DELAY,
        sandbox=SandboxPolicy(),
        approval_policy="ask",
        approver=FixedApprover("allowed-once"),
    )
    agent = await Agent.create(
        store, model=model, tools=[guarded], standard_tools=False, config=config, cwd=tmp_path
    )
    note: Message = {"role": "user", "content": [{"type": "text", "text": "note"}]}
    agent.deliver(note, "next-step")
    assert (await agent.run_turn("go")).ok
    kinds = ("sandbox/mode", "agent/inbox/spliced", "approval/asked", "approval/decided")
    events = [e for e in (await store.load(agent.id)).events if e.type in kinds]
    asked_id = next(e.data["id"] for e in events if e.type == "approval/asked")
    lines = [f"{e.type} {jsonx.dumps(e.data).decode().replace(asked_id, 'ID')}" for e in events]
    assert lines == [
        'agent/inbox/spliced {"target":"next-step","start":0,"inserted":[{"role":"user","content":'
        '[{"type":"text","text":"note"}]}]}',
        'sandbox/mode {"mode":"workspace-write"}',
        'agent/inbox/spliced {"target":"next-step","start":0,"removedCount":1,"inserted":[]}',
        'approval/asked {"id":"ID","toolName":"guarded","callId":"c1","reason":"say hi"}',
        'approval/decided {"id":"ID","outcome":"allowed-once"}',
    ]
    assert list(sandbox_mode("read-only", "delegation")) == ["mode", "source"]
    assert jsonx.dumps(approval_policy("never", "delegation")) == b'{"policy":"never","source":"delegation"}'
    assert approval_policy("ask") == {"policy": "ask"}
    assert approval_asked("i", "bash", None, None) == {"id": "i", "toolName": "bash"}
    assert list(approval_asked("i", "bash", None, "r")) == ["id", "toolName", "reason"]
    assert list(inbox_spliced("next-turn", 2, [note])) == ["target", "start", "inserted"]


def test_a_request_header_keeps_the_logged_key_order_and_reads_back() -> None:
    full = header_body("deepseek", "m", 512, "be terse", [{"name": "read"}])
    assert jsonx.dumps(full) == (
        b'{"config":{"provider":"deepseek","model":"m","maxTokens":512},"system":"be terse",'
        b'"tools":[{"name":"read"}]}'
    )
    assert header_body("p", "m", None, None, None) == {"config": {"provider": "p", "model": "m"}}
    line = (
        b'{"type":"request/header","seq":1,"time":1,"data":{"header":'
        + jsonx.dumps(full)
        + b',"reason":"initial"}}'
    )
    assert request_header_of(decode_event_line(line, "t")) == full
    assert request_header_of(Event(type="request/header", seq=1, time=1, data={"header": "x"})) is None
    assert request_header_of(Event(type="turn/start", seq=1, time=1, data={"turn": 1})) is None


def test_approval_policy_of_reads_the_original_line() -> None:
    line = b'{"type":"approval/policy","seq":2,"time":1,"data":{"policy":"never","source":"delegation"}}'
    event = decode_event_line(line, "t")
    assert approval_policy_of(event) == "never"
    with pytest.raises(EventShapeError, match=r"data\.policy must be a string"):  # its TypedDict's shape
        decode_event_line(b'{"type":"approval/policy","seq":2,"time":1,"data":{"policy":3}}', "t")
    odd = Event("approval/policy", 2, 1, {"policy": 3})
    assert approval_policy_of(odd) is None
    other = decode_event_line(b'{"type":"turn/start","seq":2,"time":1,"data":{"turn":1}}', "t")
    assert approval_policy_of(other) is None


_RECORDED = [
    b'{"type":"assistant/message","seq":3,"time":7,"data":{"turn":1,"step":1,"message":{"role":"assistant",'
    b'"content":[{"type":"citation","url":"https://x","n":1},{"type":"text","text":"hi","cache":true},'
    b'{"type":"tool-call","id":"c1","name":"read","arguments":"{}","x":[1]}],"source":{"kind":"model",'
    b'"provider":"p","model":"m","extra":1},"id":"m1","later":{"a":null}},"stream":{"chunks":[],"dt":[]}}}',
    b'{"type":"tool/result","seq":4,"time":8,"data":{"turn":1,"step":1,"message":{"source":{"kind":"tool",'
    b'"callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"audio","ref":"a"}],'
    b'"isError":false,"note":"kept"}],"role":"user","id":"m2","flag":true}}}',
]


def test_recorded_messages_with_unknown_keys_and_block_kinds_round_trip_byte_exact() -> None:
    """The typed readers keep what they do not know: a message rebuilt from ``message_of``
    and ``blocks_of`` and written by the payload writers encodes to the recorded bytes."""
    assistant, result = (decode_event_line(line, "recorded") for line in _RECORDED)
    said, answered = message_of(assistant), message_of(result)
    assert said is not None and answered is not None
    said = {**said, "content": blocks_of(said)}
    assert [b["type"] for b in blocks_of(said)] == ["citation", "text", "tool-call"]
    rebuilt = [
        Event(
            assistant.type,
            assistant.seq,
            assistant.time,
            assistant_message_data(1, 1, said, stream_of(assistant)),
        ),
        Event(result.type, result.seq, result.time, tool_result_data(1, 1, answered)),
    ]
    assert [encode_event(e) for e in rebuilt] == _RECORDED
