"""Hooks fire inside spawn and fork children (over real HTTP), with the child's session id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh.hooks import HookSet
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.store.sqlite import SqliteEventStore
from dsh.subagents import standard_tools
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply
from tests.hooks.conftest import command, python_hook, write_hooks
from tests.invariants import check_log_invariants

CHILD_TASK = "Child: run bash echo CHILD."

# Every hook event logs its payload; PreToolUse denies bash (only the child calls bash), and
# Stop blocks once per session (a marker file per session id) so each session steers once.
HOOK = (
    "import json, os, sys\n"
    "event = json.load(sys.stdin)\n"
    "with open('payloads.jsonl', 'a') as f:\n"
    "    f.write(json.dumps(event) + '\\n')\n"
    "name = event['hook_event_name']\n"
    "if name == 'PreToolUse' and event['tool_name'] == 'bash':\n"
    "    print('bash is off in ' + event['session_id'], file=sys.stderr)\n"
    "    sys.exit(2)\n"
    "if name == 'Stop':\n"
    "    marker = '.stopped-' + event['session_id']\n"
    "    if not os.path.exists(marker):\n"
    "        open(marker, 'w').close()\n"
    "        print('Say DONE.', file=sys.stderr)\n"
    "        sys.exit(2)\n"
)


def _call(call_id: str, name: str, args: dict[str, Any]) -> Response:
    return stream_reply(tool_calls=[WireToolCall.split(call_id, name, json.dumps(args), 2)])


def _texts(req: RecordedRequest) -> list[str]:
    return [str(m.get("content")) for m in req.messages if m.get("role") == "user"]


def handler(tool: str) -> Any:
    def answer(req: RecordedRequest) -> Response:
        texts = _texts(req)
        child = CHILD_TASK in texts
        if texts[-1] == "Say DONE.":
            return stream_reply(text="DONE")
        tools = [m for m in req.messages if m.get("role") == "tool"]
        if child:
            if not tools:
                return _call("child_bash", "bash", {"command": "echo CHILD", "description": "child"})
            return stream_reply(text="CHILD_FINISHED")
        if texts[-1].startswith("Remember"):
            return stream_reply(text="OK")
        if not tools:
            return _call("delegate", tool, {"description": "child", "prompt": CHILD_TASK})
        return stream_reply(text="PARENT_FINISHED")

    return answer


@pytest.mark.parametrize("tool", ["subagent", "subagent_fork"])
async def test_hooks_fire_in_the_child_with_its_session_id(tmp_path: Path, tool: str) -> None:
    hook = python_hook(tmp_path, "hook.py", HOOK)
    write_hooks(
        tmp_path,
        {e: [{"hooks": [command(hook)]}] for e in ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")},
    )
    store = SqliteEventStore(tmp_path / "s.db")
    config = AgentConfig(model="m", retry=NO_DELAY, hooks=HookSet())
    async with OpenAICompatServer(handler=handler(tool)) as server:
        model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test")
        parent = await Agent.create(store, model=model, tools=standard_tools(), config=config, cwd=tmp_path)
        if tool == "subagent_fork":
            await parent.run_turn("Remember: nothing.")
        result = await parent.run_turn("Delegate.")
        await model.aclose()
    assert result.ok
    (child,) = await store.children(parent.id)
    loaded = await store.load(child.header.id)
    own = loaded.events[loaded.inherited_event_count :]
    child_id = child.header.id

    payloads = [json.loads(line) for line in (tmp_path / "payloads.jsonl").read_text().splitlines()]
    in_child = [p for p in payloads if p["session_id"] == child_id]
    assert [p["hook_event_name"] for p in in_child] == ["UserPromptSubmit", "PreToolUse", "Stop", "Stop"]
    assert in_child[0]["prompt"] == CHILD_TASK and in_child[0]["cwd"] == str(tmp_path)
    assert in_child[1]["tool_name"] == "bash" and in_child[1]["tool_use_id"] == "child_bash"

    # the child's own log holds its hook rows, the denial and the Stop steer
    assert [e.data["point"] for e in own if e.type == "hook/invoked"] == [
        p["hook_event_name"] for p in in_child
    ]
    assert {e.data["turn"] for e in own if e.type == "hook/invoked"} == {loaded.events[-1].data["turn"]}
    bash_result = next(e for e in own if e.type == "tool/result")
    assert (
        bash_result.data["message"]["content"][0]["content"][0]["text"] == f"Error: bash is off in {child_id}"
    )
    steer = [e for e in own if e.type == "user/message" and e.data["source"]["kind"] == "plugin"]
    assert [s.data["content"][0]["text"] for s in steer] == ["Say DONE."]
    delegate = next(
        e for e in parent.session.events if e.type == "tool/result" and e.data["turn"] == result.turn
    )
    assert delegate.data["message"]["content"][0]["content"][0]["text"] == "DONE"  # the child's answer

    # the parent fires its own hooks around the delegation, in its own log
    points = [
        e.data["point"]
        for e in parent.session.events
        if e.type == "hook/invoked" and e.data["turn"] == result.turn
    ]
    stops = ["Stop", "Stop"] if tool == "subagent" else ["Stop"]  # a fork parent steered in turn 1
    assert points == ["UserPromptSubmit", "PreToolUse", "PostToolUse", *stops]
    assert result.text == ("DONE" if tool == "subagent" else "PARENT_FINISHED")
    for session in (parent.session.events, loaded.events):
        check_log_invariants(session)
    await parent.aclose()
    await store.close()
