"""``history_search`` / ``history_read`` through the real loop: a compacted session's model
recalls what its checkpoint replaced, read back from the log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply, tool_call_reply
from dsh.store.sqlite import SqliteEventStore
from dsh.tools.builtin import recall_tools
from dsh.tools.registry import builtin_registry
from tests.invariants import check_log_invariants

SENTENCE = "The launch code for the staging rocket is PURPLE-FALCON-42."
PROMPT = "Note these facts for later. " + SENTENCE + " " + "The sky is blue, water is wet. " * 30
SECOND = "and again " * 40
RECALL = ("history_read", "history_search")


def _config() -> AgentConfig:
    return AgentConfig(model="test-model", retry=NO_DELAY)


async def _agent(tmp_path: Path, model: ScriptedModel, tools: Any = None) -> Agent:
    (tmp_path / "w").mkdir(exist_ok=True)
    store = SqliteEventStore(tmp_path / "s.db")
    registry = tools if tools is not None else builtin_registry()
    return await Agent.create(store, model=model, tools=registry, config=_config(), cwd=tmp_path / "w")


def _results(agent: Agent) -> dict[str, dict[str, Any]]:
    """Each tool result's text and error flag, by call id."""
    out = {}
    for event in agent.session.events:
        if event.type == "tool/result":
            block = event.data["message"]["content"][0]
            text = "".join(b.get("text", "") for b in block["content"])
            out[block["toolCallId"]] = {
                "text": text,
                "error": block.get("isError", False),
                "meta": event.data.get("meta"),
            }
    return out


def _offered(request: Any) -> set[str]:
    return {t["name"] for t in request.tools}


async def _compacted(
    tmp_path: Path, calls: list[tuple[str, str, dict[str, Any]]]
) -> tuple[Agent, ScriptedModel]:
    """Two turns, a manual compaction, then a turn whose model makes ``calls`` one step each."""
    scripts = [
        text_reply("first answer"),
        text_reply("second answer"),
        text_reply("## Current Work\n- facts were noted"),
        *[tool_call_reply(cid, name, json.dumps(args)) for cid, name, args in calls],
        text_reply("recalled"),
    ]
    model = ScriptedModel(scripts)
    agent = await _agent(tmp_path, model)
    await agent.run_turn(PROMPT)
    await agent.run_turn(SECOND)
    done = await agent.compact()
    assert done.ok
    result = await agent.run_turn("what was the launch code?")
    assert result.ok and result.text == "recalled"
    return agent, model


async def test_history_search_finds_a_sentence_from_a_replaced_span(tmp_path: Path) -> None:
    agent, model = await _compacted(
        tmp_path, [("s1", "history_search", {"query": "launch code for the STAGING rocket"})]
    )
    found = _results(agent)["s1"]
    assert not found["error"]
    summary = next(e for e in agent.session.events if e.type == "compaction/summary")
    prompt_seq = next(e.seq for e in agent.session.events if e.type == "user/message")
    assert (
        f"c{summary.seq}" in found["text"] and "turn 1" in found["text"] and f"#{prompt_seq}" in found["text"]
    )
    assert SENTENCE in found["text"]
    assert found["meta"] == {"scanned": 3, "matched": 1, "truncated": False}
    # offered only once the log holds a checkpoint: the first two turns' heads never had them
    assert not _offered(model.requests[0]) & set(RECALL) and not _offered(model.requests[1]) & set(RECALL)
    assert set(RECALL) <= _offered(model.requests[3])
    check_log_invariants(agent.session.events)
    await agent.aclose()


async def test_history_read_by_turn_returns_the_original_prompt(tmp_path: Path) -> None:
    agent, _ = await _compacted(tmp_path, [("r1", "history_read", {"turn": 1})])
    read = _results(agent)["r1"]
    assert not read["error"]
    assert f"User: {PROMPT}" in read["text"] and "Assistant: first answer" in read["text"]
    assert SECOND not in read["text"]  # turn 2's prompt is not turn 1's
    await agent.aclose()


async def test_history_read_by_compaction_id_name_and_seq(tmp_path: Path) -> None:
    agent, _ = await _compacted(tmp_path, [])
    summary = next(e for e in agent.session.events if e.type == "compaction/summary")
    name, cid, second_seq = f"c{summary.seq}", summary.data["compactionId"], summary.data["shadowedSeqs"][2]
    await agent.aclose()
    model = ScriptedModel(
        [
            tool_call_reply("r1", "history_read", json.dumps({"compaction": name})),
            tool_call_reply("r2", "history_read", json.dumps({"compaction": cid})),
            tool_call_reply("r3", "history_read", json.dumps({"seq": second_seq})),
            text_reply("read"),
        ]
    )
    resumed = await Agent.resume(
        SqliteEventStore(tmp_path / "s.db"), agent.id, model=model, tools=builtin_registry(), config=_config()
    )
    await resumed.run_turn("read them")
    results = _results(resumed)
    assert f"User: {PROMPT}" in results["r1"]["text"] and f"User: {SECOND}" in results["r1"]["text"]
    assert results["r2"]["text"] == results["r1"]["text"]
    assert results["r3"]["text"].count("User:") == 1 and SECOND in results["r3"]["text"]
    assert "Assistant:" not in results["r3"]["text"]
    await resumed.aclose()


async def test_unknown_ids_turns_and_seqs_are_one_line_errors(tmp_path: Path) -> None:
    agent, _ = await _compacted(
        tmp_path,
        [
            ("e1", "history_read", {"compaction": "c999"}),
            ("e2", "history_read", {"turn": 9}),
            ("e3", "history_read", {"seq": 0}),
            ("e4", "history_read", {}),
            ("e5", "history_search", {"query": "no such words anywhere"}),
            ("e6", "history_search", {"query": "   "}),
            ("e7", "history_read", {"turn": 1, "offset": -5}),
            ("e8", "history_read", {"turn": 1, "seq": 2}),
            ("e9", "history_search", {"query": "x", "limit": 0}),
        ],
    )
    results = _results(agent)
    summary = next(e for e in agent.session.events if e.type == "compaction/summary")
    assert results["e1"]["text"] == f'Error: unknown compaction "c999" (this session\'s: c{summary.seq})'
    assert results["e2"]["text"] == "Error: turn 9 has no replaced messages (replaced turns: 1, 2)"
    assert results["e3"]["text"] == "Error: message #0 was not replaced by a compaction"
    assert results["e4"]["text"] == "Error: give one of compaction, turn or seq"
    assert not results["e5"]["error"] and results["e5"]["text"].startswith("No match")
    assert results["e6"]["text"] == "Error: query must be a non-empty string"
    assert results["e7"]["text"] == "Error: offset must be a non-negative integer"
    assert results["e8"]["text"] == "Error: give only one of compaction, turn or seq"
    assert results["e9"]["text"] == "Error: limit must be between 1 and 50"
    errors = ("e1", "e2", "e3", "e4", "e6", "e7", "e8", "e9")
    assert all(results[k]["error"] and "\n" not in results[k]["text"] for k in errors)
    await agent.aclose()


async def test_nothing_compacted_says_so(tmp_path: Path) -> None:
    registry = builtin_registry()
    for tool in recall_tools():
        registry.register(tool)
    model = ScriptedModel([tool_call_reply("n1", "history_search", '{"query": "x"}'), text_reply("none")])
    agent = await _agent(tmp_path, model, registry)
    await agent.run_turn("hello")
    assert _results(agent)["n1"]["text"] == "Error: nothing has been compacted in this session"
    await agent.aclose()


async def test_a_second_compaction_folds_the_first_checkpoint_and_keeps_both_originals(
    tmp_path: Path,
) -> None:
    scripted = [
        text_reply("first answer"),
        text_reply("second answer"),
        text_reply("## Current Work\n- ZEBRA summary one"),
        text_reply("third answer " * 40),
        text_reply("fourth answer"),
        text_reply("## Current Work\n- summary two"),
        tool_call_reply("s1", "history_search", '{"query": "answer", "limit": 2}'),
        tool_call_reply("s2", "history_search", '{"query": "zebra"}'),
        tool_call_reply("s3", "history_read", '{"turn": 3}'),
    ]

    def script(request: Any, index: int) -> Any:
        if index < len(scripted):
            return scripted[index]
        if index == len(scripted):  # the second compaction, by its name
            name = f"c{[e.seq for e in agent.session.events if e.type == 'compaction/summary'][-1]}"
            return tool_call_reply("s4", "history_read", json.dumps({"compaction": name}))
        return text_reply("done")

    model = ScriptedModel(script)
    agent = await _agent(tmp_path, model)
    await agent.run_turn(PROMPT)
    await agent.run_turn(SECOND)
    assert (await agent.compact()).ok
    await agent.run_turn("third " * 40)
    await agent.run_turn("fourth")
    assert (await agent.compact()).ok
    await agent.run_turn("recall")
    results = _results(agent)
    first, second = (e for e in agent.session.events if e.type == "compaction/summary")
    checkpoint = next(
        e.seq for e in agent.session.events if e.type == "user/message" and e.surface_op != "append"
    )
    assert checkpoint in second.data["shadowedSeqs"]
    # the originals of both compactions; the first checkpoint's summary text is no original
    assert results["s1"]["meta"] == {"scanned": 7, "matched": 3, "truncated": True}
    assert results["s2"]["text"].startswith("No match")
    assert f"c{first.seq}" in results["s1"]["text"]
    assert "User: " + "third " * 39 + "third" in results["s3"]["text"]
    assert results["s3"]["text"].startswith("turn 3: 2 replaced messages")
    assert f"4 replaced messages; folds in c{first.seq}" in results["s4"]["text"]
    await agent.aclose()


async def test_history_read_pages_a_long_span_and_resume_offers_the_tools(tmp_path: Path) -> None:
    long_prompt = "alpha beta gamma delta " * 500  # 11,500 characters: two pages
    model = ScriptedModel(
        [
            text_reply("first answer"),
            text_reply("second answer"),
            text_reply("## Current Work\n- long"),
            text_reply("after"),
        ]
    )
    agent = await _agent(tmp_path, model)
    await agent.run_turn(long_prompt)
    await agent.run_turn(SECOND)
    assert (await agent.compact()).ok
    await agent.run_turn("ok")
    await agent.aclose()
    pages = ScriptedModel(
        [
            tool_call_reply("p1", "history_read", '{"turn": 1}'),
            tool_call_reply("p2", "history_read", '{"turn": 1, "offset": 8000}'),
            tool_call_reply("p3", "history_read", '{"turn": 1, "offset": 99999}'),
            text_reply("read"),
        ]
    )
    resumed = await Agent.resume(
        SqliteEventStore(tmp_path / "s.db"), agent.id, model=pages, tools=builtin_registry(), config=_config()
    )
    await resumed.run_turn("read it back")
    assert set(RECALL) <= _offered(pages.requests[0])
    results = _results(resumed)
    one, two = results["p1"]["text"], results["p2"]["text"]
    assert len(one) < 8300 and "offset=8000" in one
    assert two.endswith("(end of the span)") and "Assistant: first answer" in two
    assert results["p3"]["text"].startswith("Error: offset 99999 is past the end")
    body = one.split("\n(")[0] + two.split("\n(")[0]
    assert long_prompt.strip() in body.replace("\n", " ")
    await resumed.aclose()


async def test_a_fork_child_recalls_what_its_parent_compacted(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            text_reply("first answer"),
            text_reply("second answer"),
            text_reply("## Current Work\n- facts were noted"),
            text_reply("third answer"),
            tool_call_reply("f1", "history_search", '{"query": "purple-falcon"}'),
            text_reply("found it"),
        ]
    )
    agent = await _agent(tmp_path, model)
    await agent.run_turn(PROMPT)
    await agent.run_turn(SECOND)
    assert (await agent.compact()).ok
    await agent.run_turn("third")  # a fork holds the parent's log through its last turn/end
    child = await agent.fork()
    assert set(RECALL) <= set(child.tools.names())
    result = await child.run_turn("what was the code?")
    assert result.ok
    found = _results(child)["f1"]
    assert not found["error"] and SENTENCE in found["text"] and found["meta"]["matched"] == 1
    await child.aclose()
    await agent.aclose()
