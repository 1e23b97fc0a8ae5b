"""What a delegated child is given at setup (the original's ``approval/policy {never,
delegation}`` and its parent's explicit ``sandbox/mode``), and the logged approval policy
winning when a session is resumed."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.events.payloads import approval_policy
from dsh.events.vocabulary import APPROVAL_POLICY
from dsh.loop import Agent, AgentConfig
from dsh.loop.sandbox_mode import switch_sandbox_mode
from dsh.replay.files import read_recorded
from dsh.snapshot import run_scenario
from dsh.store.memory import MemoryEventStore
from dsh.store.sqlite import SqliteEventStore
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response
from dsh.tools.sandbox import SandboxPolicy
from tests.subagents.test_subagents_http import call, has_tool_messages, is_child, make_agent, reply

DELEGATED = {"policy": "never", "source": "delegation"}


def _before_first_turn(types: list[str]) -> list[str]:
    """The setup events of a child's own log: those before its first ``turn/start``,
    without the inbox and seed bookkeeping that differs in how it is spelled."""
    head = types[: types.index("turn/start")] if "turn/start" in types else types
    return [t for t in head if t not in ("agent/inbox/spliced", "session/end-seed")]


@pytest.mark.parametrize(
    "name",
    ["subagent-spawn-in-process", "subagent-fork-in-process", "subagent-continuable", "subagent-report"],
)
async def test_children_log_the_delegated_approval_policy_where_the_original_does(
    upstream: Path, name: str
) -> None:
    store = MemoryEventStore()
    result = await run_scenario(upstream / name, "replay", store=store)
    assert result.ok, result.failure_text()
    recorded = dict(read_recorded(upstream / name).children)["session.1.jsonl"]
    live_id = result.sessions[1].live_id
    assert live_id is not None
    live = await store.load(live_id)
    mine = live.events[live.inherited_event_count :]
    theirs = recorded.events[recorded.inherited_event_count :]
    assert _before_first_turn([e.type for e in mine]) == _before_first_turn([e.type for e in theirs])
    (policy,) = [e.data for e in mine if e.type == APPROVAL_POLICY]
    assert policy == DELEGATED


def _one_delegation(req: RecordedRequest) -> Response:
    if is_child(req, "Say CHILD_OK"):
        return reply("CHILD_OK")
    if has_tool_messages(req):
        return reply("PARENT_DONE")
    return call(("call_s", "subagent", {"description": "probe", "prompt": "Say CHILD_OK"}))


@pytest.mark.parametrize("explicit", [True, False], ids=["explicit-mode", "deployment-default"])
async def test_a_child_gets_only_its_parents_explicit_sandbox_mode(tmp_path: Path, explicit: bool) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=_one_delegation) as server:
        parent = await make_agent(server, store, tmp_path)
        sandbox = SandboxPolicy(mode="read-only", logged=explicit)
        parent.config = parent.config.evolve(sandbox=sandbox)
        result = await parent.run_turn("Delegate.")
        await parent.model.aclose()
    assert result.ok and result.text == "PARENT_DONE"
    (child,) = await store.children(parent.id)
    setup = [(e.type, e.data) for e in (await store.load(child.header.id)).events[:2]]
    delegated_mode = ("sandbox/mode", {"mode": "read-only", "source": "delegation"})
    want = [delegated_mode, (APPROVAL_POLICY, DELEGATED)] if explicit else [(APPROVAL_POLICY, DELEGATED)]
    assert setup[: len(want)] == want
    if not explicit:
        assert setup[1][0] != "sandbox/mode"
    await store.close()


async def test_a_logged_approval_policy_wins_when_the_session_is_resumed(tmp_path: Path) -> None:
    """The original's child logs say ``never``; resumed by dsh (no delegation known), the log
    must win over the configuration's ``ask`` — also after a mode switch."""
    store = SqliteEventStore(tmp_path / "s.db")
    config = AgentConfig(model="m", sandbox=SandboxPolicy(mode="workspace-write"))
    async with OpenAICompatServer(handler=lambda _: reply("hi")) as server:
        agent = await make_agent(server, store, tmp_path)
        agent.config = config
        assert agent.config.approvals_policy() == "ask"
        agent.append(APPROVAL_POLICY, approval_policy("never", "delegation"))
        await agent.checkpoint()
        session_id = agent.id
        await agent.aclose()
        resumed = await Agent.resume(store, session_id, model=agent.model, config=config)
        assert resumed.approvals.policy == "never"
        await switch_sandbox_mode(resumed, "read-only")
        assert resumed.approvals.policy == "never"
        await resumed.aclose()
        fresh = await Agent.create(store, model=agent.model, config=config, cwd=tmp_path)
        assert fresh.approvals.policy == "ask"  # nothing logged: the configuration's
        await fresh.aclose()
        await agent.model.aclose()
    await store.close()
