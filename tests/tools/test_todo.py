"""``todo_write`` and the repeat-tool reminder, through the agent loop and the registry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh.events.todos import current_todos
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply, tool_call_reply
from dsh.store.sqlite import SqliteEventStore
from dsh.tools import ToolContext
from dsh.tools.registry import builtin_registry

PLAN = (
    '{"todos": [{"content": " read the code ", "status": "in_progress"}, '
    '{"content": "write the fix", "status": "pending"}]}'
)


def _config(**kw: Any) -> AgentConfig:
    return AgentConfig(model="test-model", retry=NO_DELAY, **kw)


def _results(agent: Agent) -> list[str]:
    out = []
    for e in agent.session.events:
        if e.type == "tool/result":
            out.append(e.data["message"]["content"][0]["content"][0]["text"])
    return out


def test_the_schema_is_the_originals(upstream: Path) -> None:
    recorded = json.loads((upstream / "text-turn" / "tool-schemas.expected.json").read_text())["initial"]
    theirs = next(t for t in recorded if t["name"] == "todo_write")
    ours = next(s for s in builtin_registry().specs() if s["name"] == "todo_write")
    assert ours["parameters"] == theirs["parameters"]
    assert ours["description"] == theirs["description"]


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        ("{}", 'Error: invalid arguments: missing required property "todos"'),
        ('{"todos": 3}', 'Error: invalid arguments: "todos" must be an array'),
        ('{"todos": [1]}', 'Error: invalid arguments: "todos[0]" must be an object'),
        (
            '{"todos": [{"content": "a"}]}',
            'Error: invalid arguments: missing required property "todos[0].status"',
        ),
        (
            '{"todos": [{"content": 1, "status": "done", "id": 2}]}',
            'Error: invalid arguments: "todos[0].content" must be a string; "todos[0].status" must be one '
            'of ["pending","in_progress","completed"]; "todos[0].id" is not a declared property '
            "(additionalProperties: false)",
        ),
        (
            '{"todos": [{"content": "  ", "status": "pending"}]}',
            "Error: invalid todo: `content` must be a non-empty string",
        ),
        (
            '{"todos": [{"content": "a", "status": "pending"}, {"content": " a", "status": "completed"}]}',
            'Error: invalid todos: duplicate content "a"',
        ),
    ],
)
async def test_a_malformed_list_is_one_clear_error_and_nothing_is_logged(
    tmp_path: Path, arguments: str, text: str
) -> None:
    model = ScriptedModel([tool_call_reply("c1", "todo_write", arguments), text_reply("ok")])
    async with await Agent.create(
        SqliteEventStore(tmp_path / "s.db"), model=model, config=_config(), cwd=tmp_path
    ) as agent:
        assert (await agent.run_turn("plan")).ok
        assert _results(agent) == [text]
        assert not any(e.type == "todo/write" for e in agent.session.events)
        assert current_todos(agent.session.events) is None


async def test_without_an_owning_session_it_refuses(tmp_path: Path) -> None:
    out = await builtin_registry().call(
        "todo_write", '{"todos": []}', ToolContext(session_id="s", call_id="c", cwd=tmp_path)
    )
    assert out.is_error and out.content[0]["text"] == "Error: todo_write requires an owning agent session"


async def test_the_list_is_logged_between_call_and_result_and_survives_resume_and_fork(
    tmp_path: Path,
) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    model = ScriptedModel([tool_call_reply("c1", "todo_write", PLAN), text_reply("DONE")])
    agent = await Agent.create(store, model=model, config=_config(), cwd=tmp_path)
    assert (await agent.run_turn("plan")).ok
    types = [e.type for e in agent.session.events]
    at = types.index("todo/write")
    assert types[at - 1] == "tool/call" and types[at + 1] == "tool/result"
    assert _results(agent) == ["Updated todo list: 1 pending, 1 in progress, 0 completed."]
    expected = [
        {"content": "read the code", "status": "in_progress"},
        {"content": "write the fix", "status": "pending"},
    ]
    assert agent.session.events[at].data == {"todos": expected}
    assert "surfaceOp" not in agent.session.events[at].to_wire()
    child = await agent.fork()
    later = '{"todos": [{"content": "read the code", "status": "completed"}]}'
    agent.model = ScriptedModel([tool_call_reply("c2", "todo_write", later), text_reply("DONE")])
    assert (await agent.run_turn("finish")).ok
    assert current_todos(agent.session.events) == [{"content": "read the code", "status": "completed"}]
    assert current_todos(child.session.events) == expected  # the parent's list as of the cut
    await child.aclose()
    await agent.aclose()
    resumed = await Agent.resume(store, agent.id, model=ScriptedModel([]), config=_config())
    assert current_todos(resumed.session.events) == [{"content": "read the code", "status": "completed"}]
    await resumed.aclose()


REPEAT = '{"todos": [{"content": "watch the kettle boil", "status": "in_progress"}]}'
GENTLE = (
    "You are repeating the exact same tool call with identical arguments. Carefully analyze the previous "
    "result before calling again: if the task is not complete, try a different approach or different "
    "arguments instead of repeating the call."
)


def _injected(agent: Agent) -> list[tuple[int, dict[str, Any]]]:
    out = []
    step = 0
    for e in agent.session.events:
        if e.type == "step/start":
            step = e.data["step"]
        if e.type == "user/message" and e.data["source"].get("plugin") == "repeat-tool-reminder":
            out.append((step, e.data))
    return out


async def test_the_repeat_reminder_at_three_and_five_identical_calls(tmp_path: Path) -> None:
    spaced = ['{"todos":[{"status":"in_progress","content":"watch the kettle boil"}]}', REPEAT]
    scripts = [tool_call_reply(f"call_{i}", "todo_write", spaced[i % 2]) for i in range(1, 6)]
    model = ScriptedModel([*scripts, text_reply("DONE.")])
    async with await Agent.create(
        SqliteEventStore(tmp_path / "s.db"), model=model, config=_config(), cwd=tmp_path
    ) as agent:
        assert (await agent.run_turn("boil")).text == "DONE."
        notes = _injected(agent)
    assert [step for step, _ in notes] == [4, 6]
    gentle, detailed = notes[0][1], notes[1][1]
    assert gentle["content"] == [{"type": "text", "text": GENTLE}]
    assert gentle["source"] == {
        "kind": "plugin", "plugin": "repeat-tool-reminder", "form": "notice",
        "summary": "todo_write \u00d7 3",
    }  # fmt: skip
    assert detailed["source"]["summary"] == "todo_write \u00d7 5"
    assert detailed["content"][0]["text"] == (
        "Repeated tool call detected:\n- tool: todo_write\n- consecutive_calls: 5\n- arguments: "
        '{"todos":[{"content":"watch the kettle boil","status":"in_progress"}]}\n'
        "The repeated calls are not making progress. Do not call this tool with these exact arguments "
        "again. Inspect the latest result and choose a different action, different arguments, or finish "
        "the task if enough evidence has been gathered."
    )
    assert list(gentle) == ["content", "source", "role", "id"]


async def test_a_different_call_or_a_user_prompt_restarts_the_count(tmp_path: Path) -> None:
    other = '{"todos": []}'
    scripts = [
        tool_call_reply("a", "todo_write", REPEAT),
        tool_call_reply("b", "todo_write", REPEAT),
        text_reply("one"),
        tool_call_reply("c", "todo_write", REPEAT),  # a new prompt: count 1 again
        tool_call_reply("d", "todo_write", other),
        tool_call_reply("e", "todo_write", REPEAT),
        tool_call_reply("f", "todo_write", REPEAT),
        text_reply("two"),
    ]
    async with await Agent.create(
        SqliteEventStore(tmp_path / "s.db"), model=ScriptedModel(scripts), config=_config(), cwd=tmp_path
    ) as agent:
        await agent.run_turn("first")
        await agent.run_turn("second")
        assert _injected(agent) == []


async def test_long_arguments_are_previewed_and_the_reminder_can_be_off(tmp_path: Path) -> None:
    long = json.dumps({"todos": [{"content": "x" * 600, "status": "pending"}]})
    scripts = [tool_call_reply(f"c{i}", "todo_write", long) for i in range(5)]
    async with await Agent.create(
        SqliteEventStore(tmp_path / "s.db"),
        model=ScriptedModel([*scripts, text_reply("ok")]),
        config=_config(),
        cwd=tmp_path,
    ) as agent:
        await agent.run_turn("go")
        text = _injected(agent)[1][1]["content"][0]["text"]
    canonical = json.dumps(json.loads(long), separators=(",", ":"), sort_keys=True)
    assert f"- arguments: {canonical[:500]}… (+{len(canonical) - 500} more chars)\n" in text
    async with await Agent.create(
        SqliteEventStore(tmp_path / "t.db"),
        model=ScriptedModel([*scripts, text_reply("ok")]),
        config=_config(repeat_reminder=False),
        cwd=tmp_path,
    ) as agent:
        await agent.run_turn("go")
        assert _injected(agent) == []
