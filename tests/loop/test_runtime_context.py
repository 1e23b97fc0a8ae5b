"""The runtime-context snapshot: after the step's claimed messages, appended only when it changes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsh.events.messages import Message, user_message
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply
from dsh.store.memory import MemoryEventStore
from dsh.tools.registry import builtin_registry
from dsh.tools.sandbox import SandboxPolicy

HEADING = "Current runtime context. This snapshot supersedes earlier runtime-context snapshots."
NONE = "Current runtime context: none. Earlier runtime-context snapshots no longer apply."
ASK = (
    "Approval policy: ask. Operations that require approval may ask through the configured answerers; "
    "without an available answerer, the request fails closed."
)
NEVER = (
    "Approval prompts are disabled in this session: actions that require approval are rejected "
    "automatically — do not request sandbox escalation (do not set `sandbox_permissions`)."
)
READ_ONLY = (
    "Current DSH file policy: read-only. Any available operation enforced by the DSH file sandbox cannot "
    "modify files in the standing mode. Do not refuse a required modification from this policy alone: "
    "try an available tool normally and follow any denial and escalation guidance it returns."
)
FULL = (
    "Current DSH file policy: danger-full-access. The DSH file sandbox does not restrict file "
    "modifications by available operations."
)
DELEGATED = (
    "You are a delegated subagent: your permission scope was fixed when you were started and cannot be "
    "widened from inside this session — operations that require approval are rejected automatically. "
    "When the task needs access beyond that scope, do not retry the denied operation; state the "
    "limitation in your reply so the delegating agent can handle it."
)


def workspace_text(cwd: Path) -> str:
    return (
        "Current DSH file policy: workspace-write. Any available operation enforced by the DSH file sandbox "
        f"may modify files under the session workspace: {json.dumps(str(cwd.resolve()))}. Some platform "
        "temporary areas may also be writable."
    )


def texts(messages: Sequence[Message]) -> list[str]:
    return ["".join(b.get("text", "") for b in m["content"]) for m in messages if m["role"] == "user"]


def snapshot(*sections: str) -> str:
    return "\n\n".join([HEADING, *sections])


async def _agent(cwd: Path, replies: list[Any], **config: Any) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(replies)
    agent = await Agent.create(
        MemoryEventStore(),
        model=model,
        tools=builtin_registry(),
        config=AgentConfig(model="m", retry=NO_DELAY, **config),
        cwd=cwd,
    )
    return agent, model


async def test_the_snapshot_follows_the_prompt_and_is_appended_again_only_when_it_changes(
    tmp_path: Path,
) -> None:
    """Red with the text comparison dropped (every turn would get one)."""
    replies = [text_reply("a"), text_reply("b"), text_reply("c"), text_reply("d")]
    agent, model = await _agent(tmp_path, replies, sandbox=SandboxPolicy(mode="workspace-write"))
    await agent.run_turn("one")
    await agent.run_turn("two")
    first = snapshot(workspace_text(tmp_path), ASK)
    assert texts(model.requests[0].messages) == ["one", first]
    assert texts(model.requests[1].messages) == ["one", first, "two"]  # unchanged: not repeated
    await agent.set_sandbox_mode("read-only")
    await agent.run_turn("three")
    assert texts(model.requests[2].messages)[3:] == ["three", snapshot(READ_ONLY, ASK)]
    await agent.set_sandbox_mode("danger-full-access")  # the approval policy follows: never
    await agent.run_turn("four")
    assert texts(model.requests[3].messages)[5:] == ["four", snapshot(FULL, NEVER)]
    modes = [e.data["mode"] for e in agent.session.events if e.type == "sandbox/mode"]
    assert modes == ["workspace-write", "read-only", "danger-full-access"]
    [shown] = [e.data for e in agent.session.events if e.type == "user/message"][1:2]
    assert shown["source"] == {
        "kind": "plugin",
        "plugin": "@deepseek-ai/dsh-system-prompt",
        "form": "snapshot",
        "sections": [
            {"name": "sandbox:policy", "text": workspace_text(tmp_path)},
            {"name": "approval:policy", "text": ASK},
        ],
    }


def test_scripted_servers_recognise_the_snapshot() -> None:
    from dsh.loop.runtime_context import HEADING as LOOP_HEADING
    from dsh.loop.runtime_context import NONE_TEXT
    from dsh.testing.server import RUNTIME_CONTEXT

    assert LOOP_HEADING == HEADING and NONE_TEXT == NONE
    assert HEADING.startswith(RUNTIME_CONTEXT) and NONE.startswith(RUNTIME_CONTEXT)


async def test_claimed_messages_come_first_and_no_policy_shows_none(tmp_path: Path) -> None:
    agent, model = await _agent(tmp_path, [text_reply("a")], sandbox=SandboxPolicy(mode="danger-full-access"))
    agent.deliver(user_message("queued", source_kind="subagent-settled"), "next-step")
    await agent.run_turn("go")
    assert texts(model.requests[0].messages) == ["queued", "go", snapshot(FULL, NEVER)]
    bare, bare_model = await _agent(tmp_path, [text_reply("a")])  # no file policy: nothing to state
    await bare.run_turn("go")
    assert texts(bare_model.requests[0].messages) == ["go"]


async def test_switching_the_snapshot_off_supersedes_the_last_one_with_none(tmp_path: Path) -> None:
    """Red with the none text left out (the stale snapshot would keep applying)."""
    agent, _ = await _agent(tmp_path, [text_reply("a")], sandbox=SandboxPolicy(mode="danger-full-access"))
    await agent.run_turn("one")
    model = ScriptedModel([text_reply("b"), text_reply("c")])
    config = AgentConfig(model="m", retry=NO_DELAY, runtime_context=False)
    resumed = await Agent.resume(agent.store, agent.id, model=model, tools=builtin_registry(), config=config)
    await resumed.run_turn("two")
    await resumed.run_turn("three")
    assert texts(model.requests[0].messages) == ["one", snapshot(FULL, NEVER), "two", NONE]
    assert texts(model.requests[1].messages)[4:] == ["three"]  # said once
    none = [e.data for e in resumed.session.events if e.type == "user/message"][3]
    assert none["source"] == {"kind": "plugin", "plugin": "@deepseek-ai/dsh-system-prompt"}


async def test_a_fork_child_inherits_the_parents_snapshot_and_appends_its_own(tmp_path: Path) -> None:
    full = SandboxPolicy(mode="danger-full-access")
    agent, model = await _agent(tmp_path, [text_reply("a"), text_reply("child")], sandbox=full)
    await agent.run_turn("one")
    child = await agent.fork(call_id="call-1")
    await child.run_turn("ask")
    parent = snapshot(FULL, NEVER)
    assert texts(model.requests[1].messages) == ["one", parent, "ask", snapshot(FULL, NEVER, DELEGATED)]


async def test_a_resumed_agent_finds_the_snapshot_on_the_surface_and_does_not_repeat_it(
    tmp_path: Path,
) -> None:
    """Red with the resumed log's snapshot not looked up (it would be appended again)."""
    full = SandboxPolicy(mode="danger-full-access")
    agent, _ = await _agent(tmp_path, [text_reply("a")], sandbox=full)
    await agent.run_turn("one")
    model = ScriptedModel([text_reply("b")])
    config = AgentConfig(model="m", retry=NO_DELAY, sandbox=full)
    resumed = await Agent.resume(agent.store, agent.id, model=model, tools=builtin_registry(), config=config)
    await resumed.run_turn("two")
    assert texts(model.requests[0].messages) == ["one", snapshot(FULL, NEVER), "two"]
