"""File policies: the write/edit fence, the refusal when no sandbox is usable, ``sandbox/mode`` logged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply, tool_call_reply
from dsh.store.memory import MemoryEventStore
from dsh.tools import ToolContext, ToolRegistry, builtin_registry
from dsh.tools.sandbox import SandboxPolicy as Policy
from dsh.tools.sandbox import runtime_context_text

from .conftest import bash, requires_bwrap, text_of

DENIED = (
    "Error: [sandbox: file access denied under {mode} mode]\n[sandbox: escalation available — retry this "
    "exact operation once with sandbox_permissions (the narrowest wider mode that suffices) + "
    "justification; the approval prompt asks the user]"
)
UNAVAILABLE = (
    'Error: sandbox mode "{mode}" is requested but no sandbox backend is usable on this host; refusing to '
    "run the command unconfined. Install bubblewrap or run a Landlock-enforcing kernel (Linux), ensure "
    "sandbox-exec is usable (macOS), or ensure the ACL restricted-token runner can start (Windows) — "
    "otherwise switch the consumer to danger-full-access. Runner failure: Error: spawn {runner} ENOENT"
)


def _ctx(cwd: Path, policy: Policy | None, *, allow_outside: bool = False) -> ToolContext:
    return ToolContext(
        session_id="s-policy", call_id="c1", cwd=cwd, sandbox=policy, allow_outside_workspace=allow_outside
    )


async def _write(registry: ToolRegistry, ctx: ToolContext, path: str) -> tuple[bool, str, str | None]:
    output = await registry.call("write", json.dumps({"file_path": path, "content": "x\n"}), ctx)
    return output.is_error, text_of(output), output.code


async def test_read_only_fences_write_and_edit(tmp_path: Path) -> None:
    registry = builtin_registry(max_inline_bytes=None)
    (tmp_path / "a.txt").write_text("old\n")
    ctx = _ctx(tmp_path, Policy(mode="read-only"))
    assert await _write(registry, ctx, "new.txt") == (
        True,
        DENIED.format(mode="read-only"),
        "FS_SANDBOX_DENIED",
    )
    await registry.call("read", json.dumps({"file_path": "a.txt"}), ctx)
    edit = {"file_path": "a.txt", "old_string": "old", "new_string": "new"}
    output = await registry.call("edit", json.dumps(edit), ctx)
    assert (output.code, text_of(output)) == ("FS_SANDBOX_DENIED", DENIED.format(mode="read-only"))
    assert not (tmp_path / "new.txt").exists() and (tmp_path / "a.txt").read_text() == "old\n"


async def test_workspace_write_fences_outside_the_writable_roots(tmp_path: Path) -> None:
    registry = builtin_registry(max_inline_bytes=None)
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    # tmp_path lies under /tmp (a writable root), so a policy without temp roots stands for "outside".
    policy = Policy(temp_roots=())
    ctx = _ctx(ws, policy, allow_outside=True)
    assert (await _write(registry, ctx, "in.txt"))[0] is False
    denied = await _write(registry, ctx, str(outside / "out.txt"))
    assert denied == (True, DENIED.format(mode="workspace-write"), "FS_SANDBOX_DENIED")
    (ws / "link").symlink_to(outside)
    assert (await _write(registry, ctx, "link/via-link.txt"))[2] == "FS_SANDBOX_DENIED"
    assert sorted(p.name for p in outside.iterdir()) == []
    temp_ok = _ctx(ws, Policy(temp_roots=(outside.resolve(),)), allow_outside=True)
    assert (await _write(registry, temp_ok, str(outside / "t.txt")))[0] is False


async def test_danger_full_access_and_no_policy_do_not_fence(tmp_path: Path) -> None:
    registry = builtin_registry(max_inline_bytes=None)
    outside = tmp_path / "outside"
    outside.mkdir()
    for policy in (Policy(mode="danger-full-access", temp_roots=()), None):
        ctx = _ctx(tmp_path / "outside", policy)
        assert (await _write(registry, ctx, f"f-{policy is None}.txt"))[0] is False


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
async def test_no_usable_sandbox_refuses_instead_of_running_unconfined(
    tmp_path: Path, missing_runner: str, mode: str
) -> None:
    registry = builtin_registry(max_inline_bytes=None)
    output = await bash(registry, _ctx(tmp_path, Policy(mode=mode)), "touch ran")  # type: ignore[arg-type]
    assert (output.is_error, output.code) == (True, "SANDBOX_UNAVAILABLE")
    assert text_of(output) == UNAVAILABLE.format(mode=mode, runner=missing_runner)
    assert not (tmp_path / "ran").exists()


async def test_danger_full_access_runs_unwrapped_without_a_runner(
    tmp_path: Path, missing_runner: str
) -> None:
    registry = builtin_registry(max_inline_bytes=None)
    output = await bash(registry, _ctx(tmp_path, Policy(mode="danger-full-access")), "touch ran && echo ok")
    assert text_of(output) == "ok\n" and (tmp_path / "ran").exists()


def test_runtime_context_texts(tmp_path: Path) -> None:
    assert runtime_context_text(Policy(mode="workspace-write"), tmp_path) == (
        "Current DSH file policy: workspace-write. Any available operation enforced by the DSH file sandbox "
        f'may modify files under the session workspace: "{tmp_path.resolve()}". Some platform temporary '
        "areas may also be writable."
    )
    assert runtime_context_text(Policy(mode="danger-full-access"), tmp_path).startswith(
        "Current DSH file policy: danger-full-access. The DSH file sandbox does not restrict"
    )
    assert "cannot modify files in the standing mode" in runtime_context_text(
        Policy(mode="read-only"), tmp_path
    )


@requires_bwrap
async def test_agent_logs_the_mode_once_and_confines_its_bash(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    call = '{"command": "echo in > in.txt; echo out > /etc/dsh-sandbox-probe", "description": "probe"}'
    model = ScriptedModel([tool_call_reply("c1", "bash", call), text_reply("done"), text_reply("again")])
    agent = await Agent.create(
        MemoryEventStore(),
        model=model,
        tools=builtin_registry(max_inline_bytes=None),
        config=AgentConfig(model="m", retry=NO_DELAY, sandbox=Policy()),
        cwd=ws,
    )
    assert (await agent.run_turn("go")).ok
    assert (await agent.run_turn("again")).ok
    modes = [(e.seq, e.data) for e in agent.session.events if e.type == "sandbox/mode"]
    assert modes == [(1, {"mode": "workspace-write"})]
    result = next(e for e in agent.session.events if e.type == "tool/result")
    assert "Read-only file system" in json.dumps(result.data)
    assert (ws / "in.txt").read_text() == "in\n" and not Path("/etc/dsh-sandbox-probe").exists()


async def test_no_policy_logs_no_mode(tmp_path: Path) -> None:
    agent = await Agent.create(
        MemoryEventStore(),
        model=ScriptedModel([text_reply("hi")]),
        tools=builtin_registry(),
        config=AgentConfig(model="m", retry=NO_DELAY),
        cwd=tmp_path,
    )
    assert (await agent.run_turn("go")).ok
    assert not [e for e in agent.session.events if e.type == "sandbox/mode"]
