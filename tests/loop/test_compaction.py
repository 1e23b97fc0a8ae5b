"""Compaction through the public API: a ScriptedModel, a real SQLite store, real tools."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from dsh.events.compaction import CLOSE_TAG, INSTRUCTION, OPEN_TAG
from dsh.events.history import history_messages
from dsh.events.messages import user_message
from dsh.events.spans import balanced_cuts
from dsh.events.tokens import header_price, message_price
from dsh.loop import NO_DELAY, Agent, AgentConfig, CompactionPolicy
from dsh.model.base import ModelRequest
from dsh.model.scripted import HANG, ScriptedModel, error_reply, text_reply, tool_call_reply
from dsh.snapshot import run_scenario
from dsh.snapshot.save import save_scenario
from dsh.store.memory import MemoryEventStore, MemorySpace
from dsh.store.sqlite import SqliteEventStore
from dsh.subagents import standard_tools
from dsh.tools import ToolContext, ToolOutput
from dsh.tools.function import tool
from dsh.tools.registry import ToolRegistry, builtin_registry
from tests.invariants import check_log_invariants
from tests.patience import until

PROMPT = "Note these facts for later: " + "the sky is blue, water is wet. " * 30


def _config(**kw: Any) -> AgentConfig:
    return AgentConfig(model="test-model", retry=NO_DELAY, **kw)


async def _agent(tmp_path: Path, model: ScriptedModel, **kw: Any) -> Agent:
    (tmp_path / "w").mkdir(exist_ok=True)
    store = SqliteEventStore(tmp_path / "s.db")
    config = _config(**kw)
    return await Agent.create(store, model=model, tools=builtin_registry(), config=config, cwd=tmp_path / "w")


def _types(agent: Agent) -> list[str]:
    return [e.type for e in agent.session.events]


def _texts(request: ModelRequest) -> list[str]:
    return [" ".join(str(b.get("text", b.get("type"))) for b in m["content"]) for m in request.messages]


async def test_an_overflow_compacts_the_head_and_retries_the_step_once(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_call_reply("call_1", "bash", '{"command": "echo alpha"}'),
            error_reply("CONTEXT_OVERFLOW", "the request exceeds the model's context length"),
            text_reply("## Primary Request and Intent\n- note the facts"),
            text_reply("COMPACTION RECOVERED"),
        ]
    )
    agent = await _agent(tmp_path, model)
    result = await agent.run_turn(PROMPT)
    assert result.ok and result.text == "COMPACTION RECOVERED"
    types = _types(agent)
    start = types.index("compaction/start")
    four = ["compaction/start", "compaction/summary", "user/message", "compaction/end"]
    assert types[start : start + 4] == four
    assert types[start - 1] == "assistant/attempt"  # the failed call, in the same step
    assert types.count("step/start") == 2 and types[start + 4] == "assistant/message"
    events = agent.session.events
    summary, checkpoint, end = events[start + 1], events[start + 2], events[start + 3]
    prompt_seq = next(e.seq for e in events if e.type == "user/message")
    assert summary.data["shadowedSeqs"] == [prompt_seq] and summary.data["llmStreamCall"] is True
    assert summary.data["shadowedTokenCount"] == message_price(events[prompt_seq].data)
    assert checkpoint.surface_op == {"op": "replace", "start": prompt_seq, "end": prompt_seq}
    assert checkpoint.source_event_seqs == (start, start + 1, prompt_seq)
    assert checkpoint.data["source"]["plugin"] == "compact"
    assert "error" not in end.data and end.data["turn"] == 1 == events[start].data["turn"]
    # the summary request: the conversation's head and the replaced prompt, then the instruction
    ask, retried = model.requests[2], model.requests[3]
    assert ask.system == model.requests[1].system and list(ask.tools) == list(model.requests[1].tools)
    assert ask.messages[0] is model.requests[1].messages[0]
    assert _texts(ask)[1] == INSTRUCTION and len(ask.messages) == 2
    # the retried request: the checkpoint, then the call and its result
    texts = _texts(retried)
    assert texts[0].endswith(CLOSE_TAG) and OPEN_TAG in texts[0] and "note the facts" in texts[0]
    assert PROMPT not in " ".join(texts) and len(retried.messages) == 3
    # the originals stay in the log
    assert events[prompt_seq].data["content"][0]["text"] == PROMPT
    check_log_invariants(agent.session.events)
    await agent.aclose()


async def test_a_second_overflow_in_the_step_is_not_compacted_again(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_call_reply("call_1", "bash", '{"command": "echo alpha"}'),
            error_reply("CONTEXT_OVERFLOW", "too long"),
            text_reply("short summary"),
            error_reply("CONTEXT_OVERFLOW", "too long"),
        ]
    )
    agent = await _agent(tmp_path, model)
    result = await agent.run_turn(PROMPT)
    assert result.reason == {"kind": "error", "failure": {"code": "CONTEXT_OVERFLOW", "message": "too long"}}
    assert _types(agent).count("compaction/start") == 1 and len(model.requests) == 4
    await agent.aclose()


async def test_an_empty_summary_leaves_the_history_unchanged_and_says_so(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_call_reply("call_1", "bash", '{"command": "echo alpha"}'),
            error_reply("CONTEXT_OVERFLOW", "too long"),
            text_reply("   "),
        ]
    )
    agent = await _agent(tmp_path, model)
    result = await agent.run_turn(PROMPT)
    assert not result.ok and result.reason["kind"] == "error"
    end = next(e for e in agent.session.events if e.type == "compaction/end")
    assert end.data["error"] == "the summary was empty"
    assert "compaction/summary" not in _types(agent)
    assert not any(isinstance(e.surface_op, dict) for e in agent.session.events)
    assert history_messages(agent.session.events)[0].text == PROMPT
    await agent.aclose()


async def test_manual_compaction_between_turns_and_resume_reads_the_surface(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            text_reply("first answer"),
            text_reply("second answer"),
            text_reply("## Current Work\n- the two answers"),
            text_reply("third answer"),
        ]
    )
    agent = await _agent(tmp_path, model)
    await agent.run_turn(PROMPT)
    await agent.run_turn("and again " * 40)
    done = await agent.compact()
    assert done.ok and done.replaced == 3 and done.tokens_after < done.tokens_before
    start = next(e for e in agent.session.events if e.type == "compaction/start")
    assert start.data["turn"] is None
    assert [m.role for m in history_messages(agent.session.events)] == ["user", "assistant"]
    await agent.aclose()
    resumed = await Agent.resume(
        SqliteEventStore(tmp_path / "s.db"), agent.id, model=model, tools=builtin_registry(), config=_config()
    )
    await resumed.run_turn("third")
    last = model.requests[-1]
    assert "the two answers" in _texts(last)[0] and _texts(last)[1:] == ["second answer", "third"]
    await resumed.aclose()


async def test_nothing_to_compact_changes_nothing(tmp_path: Path) -> None:
    agent = await _agent(tmp_path, ScriptedModel([text_reply("hi")]))
    await agent.run_turn("hello")
    before = len(agent.session.events)
    done = await agent.compact()
    assert not done.ok and done.error == "nothing to compact yet" and len(agent.session.events) == before
    await agent.aclose()


def _replies(request: ModelRequest, index: int) -> list[Any]:
    if request.messages and request.messages[-1].get("source", {}).get("plugin") == "dsh-compaction-basic":
        return text_reply("## Current Work\n- a long conversation, condensed")
    return text_reply(f"answer {index} " + "words " * 60)


async def test_a_long_session_stays_under_its_window(tmp_path: Path) -> None:
    window = 16_000
    model = ScriptedModel(_replies)
    agent = await _agent(tmp_path, model, compaction=CompactionPolicy(context_window=window))
    for turn in range(300):
        result = await agent.run_turn(f"turn {turn}: " + "tell me more " * 20)
        assert result.ok
    heads = header_price({"system": agent.config.system or "", "tools": list(agent.tools.specs())})
    for request in model.requests:
        assert heads + sum(message_price(m) for m in request.messages) < window
    types = _types(agent)
    assert types.count("compaction/summary") >= 1
    assert types.count("compaction/end") == types.count("compaction/start")
    assert not any("error" in e.data for e in agent.session.events if e.type == "compaction/end")
    context = [e.data for e in agent.session.events if e.type == "request/context"]
    assert context == [{"provider": "scripted", "model": "test-model", "contextWindow": window}]
    check_log_invariants(agent.session.events)
    await agent.aclose()


async def test_resume_closes_a_compaction_a_crash_left_open(tmp_path: Path) -> None:
    store = MemoryEventStore()
    agent = await Agent.create(
        store, model=ScriptedModel([]), tools=builtin_registry(), config=_config(), cwd=tmp_path
    )
    agent.append("turn/start", {"turn": 1})
    agent.append("step/start", {"turn": 1, "step": 1})
    agent.append("compaction/start", {"compactionId": "c-1", "turn": 1})
    await store.append(agent.id, agent.session.events)
    resumed = await Agent.resume(
        store, agent.id, model=ScriptedModel([]), tools=builtin_registry(), config=_config(), lease_wait=0
    )
    tail = [(e.type, e.data) for e in resumed.session.events[-3:]]
    assert tail == [
        ("compaction/end", {"compactionId": "c-1", "turn": 1, "error": "interrupted"}),
        ("step/end", {"turn": 1, "step": 1}),
        ("turn/end", {"turn": 1, "reason": {"kind": "interrupted"}}),
    ]
    check_log_invariants(resumed.session.events)
    await resumed.aclose()


async def test_resume_closes_a_manual_compaction_a_crash_left_open(tmp_path: Path) -> None:
    store = MemoryEventStore()
    agent = await Agent.create(
        store, model=ScriptedModel([]), tools=builtin_registry(), config=_config(), cwd=tmp_path
    )
    agent.append("compaction/start", {"compactionId": "c-2", "turn": None})
    await store.append(agent.id, agent.session.events)
    resumed = await Agent.resume(
        store, agent.id, model=ScriptedModel([]), tools=builtin_registry(), config=_config(), lease_wait=0
    )
    last = resumed.session.events[-1]
    assert (last.type, last.data) == (
        "compaction/end",
        {"compactionId": "c-2", "turn": None, "error": "interrupted"},
    )
    await resumed.aclose()


async def test_a_cancelled_summary_closes_its_compaction_and_changes_nothing(tmp_path: Path) -> None:
    model = ScriptedModel([text_reply("a " * 300), text_reply("b " * 300), [HANG]])
    agent = await _agent(tmp_path, model)
    await agent.run_turn("one " * 100)
    await agent.run_turn("two " * 100)
    task = asyncio.create_task(agent.compact())
    await until(lambda: len(model.requests) == 3, "the summary call")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    end = agent.session.events[-1]
    assert (end.type, end.data["error"]) == ("compaction/end", "cancelled")
    assert not any(isinstance(e.surface_op, dict) for e in agent.session.events)
    await agent.aclose()


def _overflowing() -> list[Any]:
    return [
        tool_call_reply("call_1", "note", {"text": "once"}),
        error_reply("CONTEXT_OVERFLOW", "too long"),
        text_reply("## Current Work\n- noting"),
        text_reply("done"),
    ]


async def test_a_stepwise_driver_compacts_as_the_loop_does(tmp_path: Path) -> None:
    """Temporal's pieces (``Agent.stepwise``) run the same compaction: the same log."""

    @tool
    async def note(text: str, ctx: ToolContext) -> ToolOutput:
        """Note something."""
        return ToolOutput.text("noted")

    tools = ToolRegistry([note])
    config = _config(compaction=CompactionPolicy(context_window=100_000))
    inline = await Agent.create(MemoryEventStore(), model=ScriptedModel(_overflowing()), tools=tools,
                                config=config, cwd=tmp_path)  # fmt: skip
    assert (await inline.run_turn(PROMPT)).text == "done"
    space = MemorySpace()
    model = ScriptedModel(_overflowing())
    first = await Agent.create(MemoryEventStore(space), model=model, tools=tools, config=config, cwd=tmp_path)

    async def fresh() -> Agent:  # what an activity on another worker attaches to
        loaded = await MemoryEventStore(space).load(first.id)
        return Agent.attach(loaded, store=MemoryEventStore(space), model=model, tools=tools, config=config)

    turn = await (await fresh()).stepwise().begin(0)
    step1 = await (await fresh()).stepwise().model_step(turn, 1, 0, user_message(PROMPT))
    assert await (await fresh()).stepwise().tool_call(turn, 1, 0, step1.calls[0].call_id)
    await (await fresh()).stepwise().model_step(turn, 2, 0, None)
    result = await (await fresh()).stepwise().end(turn, 0, {"kind": "completed"})
    assert result.text == "done"
    stepped = (await MemoryEventStore(space).load(first.id)).events
    assert [e.type for e in stepped] == [e.type for e in inline.session.events]
    assert "compaction/summary" in [e.type for e in stepped]


async def test_a_prefix_before_the_compaction_has_the_original_history_and_a_fork_after_it_the_summary(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [
            text_reply("first answer"),
            text_reply("second answer"),
            text_reply("## Current Work\n- both"),
            text_reply("fine"),
        ]
    )
    agent = await _agent(tmp_path, model)
    await agent.run_turn(PROMPT)
    await agent.run_turn("and again " * 40)
    before = list(agent.session.events)
    assert (await agent.compact()).ok
    assert history_messages(before)[0].text == PROMPT  # the log up to any earlier turn
    await agent.run_turn("after")  # the fork rule takes completed turns: the compaction is inside
    child = await agent.store.fork(agent.id)
    texts = [m.text for m in history_messages(child.events)]
    assert "both" in texts[0] and PROMPT not in texts
    await agent.aclose()


def _tool_loop(request: ModelRequest, index: int) -> list[Any]:
    if request.messages and request.messages[-1].get("source", {}).get("plugin") == "dsh-compaction-basic":
        return text_reply("## Current Work\n- printing numbered lines, step by step")
    done = sum(1 for m in request.messages if m.get("source", {}).get("kind") == "tool")
    if index > 60:
        return text_reply("ALL DONE")
    return tool_call_reply(
        f"call_{index}", "bash", {"command": f"seq 1 120 # {index} {done}", "description": "count"}
    )


async def test_one_long_turn_of_tool_calls_compacts_inside_the_turn_and_replays(tmp_path: Path) -> None:
    window = 8_000
    model = ScriptedModel(_tool_loop)
    config = _config(compaction=CompactionPolicy(context_window=window))
    store = SqliteEventStore(tmp_path / "s.db")  # the tools a scenario replays with, as dsh run's
    agent = await Agent.create(store, model=model, tools=standard_tools(), config=config, cwd=tmp_path)
    result = await agent.run_turn("Print numbers with bash until I say stop.")
    assert result.ok and result.text == "ALL DONE"
    starts = [e for e in agent.session.events if e.type == "compaction/start"]
    assert starts and all(e.data["turn"] == 1 for e in starts)  # owned by the open turn
    heads = header_price({"system": agent.config.system or "", "tools": list(agent.tools.specs())})
    for request in model.requests:
        assert heads + sum(message_price(m) for m in request.messages) < window
    for request in model.requests:  # never a tool result without its call
        balanced_cuts(request.messages)
    check_log_invariants(agent.session.events)
    await save_scenario(agent.store, agent.id, tmp_path / "saved")
    await agent.aclose()
    replayed = await run_scenario(tmp_path / "saved", "replay")
    assert replayed.ok, replayed.failure_text()
