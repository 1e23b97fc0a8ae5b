"""Hook commands run under the session's sandbox policy, like ``bash`` (issue 14 item 6)."""

from __future__ import annotations

from pathlib import Path

from dsh.hooks import HookSet, reset_handler_ids
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply
from dsh.store.memory import MemoryEventStore
from dsh.tools import builtin_registry
from dsh.tools.sandbox import SandboxBackend, SandboxPolicy
from tests.hooks.conftest import command, write_hooks

from .conftest import requires_bwrap


async def _turn(ws: Path, policy: SandboxPolicy | None) -> None:
    reset_handler_ids()
    config = AgentConfig(model="m", retry=NO_DELAY, hooks=HookSet(user_dir=None), sandbox=policy)
    agent = await Agent.create(
        MemoryEventStore(),
        model=ScriptedModel([text_reply("ok")]),
        tools=builtin_registry(),
        config=config,
        cwd=ws,
    )
    result = await agent.run_turn("hi")
    assert result.ok, result.reason


async def _hook_escapes(base: Path, policy: SandboxPolicy | None) -> bool:
    """Whether a ``UserPromptSubmit`` hook wrote outside the workspace (it always writes inside)."""
    ws, target = base / "ws", base / "outside" / "from-hook.txt"
    (ws / "sub").mkdir()  # under Landlock the top of a workspace holding hooks.json gets no new entry
    hook = command(f"echo escaped > {target}; echo inside > sub/mine.txt")
    write_hooks(ws, {"UserPromptSubmit": [{"hooks": [hook]}]})
    await _turn(ws, policy)
    assert (ws / "sub" / "mine.txt").read_text() == "inside\n"  # the workspace stays writable
    return target.exists()


async def test_a_hook_writes_outside_the_workspace_unconfined(base: Path) -> None:
    assert await _hook_escapes(base, None)


async def test_a_hook_cannot_write_outside_the_workspace_under_the_sandbox(
    base: Path, backend: SandboxBackend
) -> None:
    assert not await _hook_escapes(base, SandboxPolicy(mode="workspace-write", backend=backend))


@requires_bwrap
async def test_a_scenario_can_replay_with_its_commands_confined(upstream: Path, base: Path) -> None:
    from dsh.snapshot import run_scenario

    for name in ("tool-call-turn", "fs-delete-recreate", "hook-cc-pretool-deny", "cancel-tool-calls"):
        result = await run_scenario(upstream / name, "replay", sandbox=SandboxPolicy(mode="workspace-write"))
        assert result.ok, result.failure_text()
