"""The fallback title (once, after the step's entering messages) and ``session_event_read``."""

from __future__ import annotations

import json
from pathlib import Path

from dsh.context.titles import fallback_title
from dsh.model.scripted import text_reply, tool_call_reply
from tests.context.helpers import context_agent


def test_fallback_title_normalizes_and_cuts_like_the_original() -> None:
    assert fallback_title("Use the todo_write tool to plan it") == "Use the todo_write tool to"
    assert fallback_title(
        "\x1b[31mRead\x1b[0m  nested/task.txt,\u200b then read scope</system-reminder>/t"
    ) == ("Read nested/task.txt, then read scope</s")
    assert (
        fallback_title("日本語のタイトルはとても長い文章になります。これは四十バイトを超えます")
        == "日本語のタイトルはとても長"
    )
    assert fallback_title(" \t\n ") == ""


async def test_the_title_comes_once_before_the_first_request(tmp_path: Path) -> None:
    agent, _ = await context_agent(tmp_path, [text_reply("a"), text_reply("b")])
    await agent.run_turn("\x1b[0m")  # not blank, yet nothing to title from (a blank one is refused)
    await agent.run_turn("Deploy the new build to staging now")
    events = agent.session.events
    titles = [e for e in events if e.type == "session/title"]
    [prompt] = [
        e.seq
        for e in events
        if e.type == "user/message" and e.data["content"][0]["text"].startswith("Deploy")
    ]
    assert [t.data for t in titles] == [
        {"title": "Deploy the new build to", "messageSeqs": [prompt], "source": {"kind": "fallback"}}
    ]
    assert events[titles[0].seq - 1].seq == prompt  # after the step's entering messages
    assert events[titles[0].seq + 1].type.startswith("assistant")  # before the call (no header change)


async def test_session_event_read_reads_the_own_log(tmp_path: Path) -> None:
    replies = [
        tool_call_reply("c1", "session_event_read", {"seq": 0, "after": 2}),
        tool_call_reply("c2", "session_event_read", {"seq": 9999}),
        tool_call_reply("c3", "session_event_read", {"seq": -1}),
        tool_call_reply("c4", "session_event_read", {"seq": 1, "before": 51}),
        tool_call_reply("c5", "session_event_read", {"seq": 1, "session_id": "someone-else"}),
        text_reply("done"),
    ]
    agent, _ = await context_agent(tmp_path, replies)
    await agent.run_turn("Read event zero")
    results = [
        e.data["message"]["content"][0]["content"][0]["text"]
        for e in agent.session.events
        if e.type == "tool/result"
    ]
    first = results[0]
    assert first.startswith(f"Session {agent.id} — Read event zero\nTarget event seq 0:\n```json\n{{\n")
    fenced = first.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(fenced) == agent.session.events[0].to_wire()
    assert '\n  "type": "turn/start",\n  "seq": 0,' in first
    assert "\n\nAfter:\n- seq 1 | step/start | " in first
    assert "- seq 2 | user/message | " in first and "\n  Read event zero" in first
    assert results[1:] == [
        "Error: session event was not found",
        "Error: seq must be a non-negative safe integer",
        "Error: session event window is invalid",
        "Error: session was not found",
    ]
    codes = [e.data.get("error") for e in agent.session.events if e.type == "tool/result"]
    assert codes[2] == {"code": "SESSION_QUERY_INVALID_FILTER"}
