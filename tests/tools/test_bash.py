"""The bash tool: output, exit codes, workdir, output cap, timeouts and cancellation."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from dsh.tools import SpillPolicy, ToolContext, ToolOutput, ToolRegistry, builtin_registry
from dsh.tools.builtin import BashTool
from tests.patience import patience

from .conftest import make_ctx, text_of, wait_dead


def _bash(command: str, **extra: object) -> str:
    return json.dumps({"command": command, "description": "test command", **extra})


async def _run(registry: ToolRegistry, ctx: ToolContext, command: str, **extra: object) -> ToolOutput:
    return await registry.call("bash", _bash(command, **extra), ctx)


async def _wait_for_file(path: Path, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + patience(timeout)
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


async def test_output_is_verbatim(registry: ToolRegistry, ctx: ToolContext) -> None:
    output = await _run(registry, ctx, "echo SNAPSHOT_OK")
    assert (output.is_error, text_of(output), output.meta) == (False, "SNAPSHOT_OK\n", None)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("echo out; echo err >&2; echo out2", "out\nout2\n[stderr]\nerr\n"),
        ("echo err >&2", "[stderr]\nerr\n"),
        ("printf x; printf e >&2", "x\n[stderr]\ne"),
        ("true", "(no output)"),
        ("exit 1", "(no output)\n[exit code: 1]"),
        ("echo partial; exit 3", "partial\n[exit code: 3]"),
        ("printf x; exit 1", "x\n[exit code: 1]"),
        ("printf e >&2; exit 2", "[stderr]\ne\n[exit code: 2]"),
        ("kill -9 $$", "(no output)\n[killed by signal: SIGKILL]"),
        ("echo bye; kill -TERM $$", "bye\n[killed by signal: SIGTERM]"),
    ],
)
async def test_the_originals_result_text(
    command: str, expected: str, registry: ToolRegistry, ctx: ToolContext
) -> None:
    output = await _run(registry, ctx, command)
    assert (output.is_error, text_of(output)) == (False, expected)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"command": " ", "description": "d"}, "Error: invalid command: expected a non-empty string"),
        ({"command": "true", "description": ""}, "Error: invalid description: expected a non-empty string"),
        (
            {"command": "true", "description": "d", "timeoutMs": 0},
            "Error: invalid timeoutMs: expected a positive number, got 0",
        ),
        (
            {"command": "true", "description": "d", "timeoutMs": -1.5},
            "Error: invalid timeoutMs: expected a positive number, got -1.5",
        ),
    ],
)
async def test_argument_texts(
    args: dict[str, object], expected: str, registry: ToolRegistry, ctx: ToolContext
) -> None:
    output = await registry.call("bash", json.dumps(args), ctx)
    assert (output.is_error, output.code, text_of(output)) == (True, None, expected)


async def test_the_tool_variables_are_set(registry: ToolRegistry, ctx: ToolContext) -> None:
    command = 'printf "%s|" "$NO_COLOR" "$TERM" "$PAGER" "$GIT_PAGER" "$DSH_SHELL" "$DSH_SESSION_ID"'
    assert text_of(await _run(registry, ctx, command)) == "1|dumb|cat|cat|1|s-test|"


async def test_no_secret_reaches_the_command(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = "MARKER-7f3a9c"
    for name in ["DEEPSEEK_API_KEY", "DSH_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_PRIVATE"]:
        monkeypatch.setenv(name, f"{marker}-{name}")
    monkeypatch.setenv("DSH_STORE", f"postgresql://dsh:{marker}@db.example/dsh")
    monkeypatch.setenv("DSH_SECRET_ENV", "MY_PRIVATE, OTHER")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    registry = builtin_registry(max_inline_bytes=None)
    text = text_of(await _run(registry, ctx, "env"))
    assert marker not in text
    assert "HARMLESS_SETTING=visible\n" in text


async def test_runs_in_the_workspace_with_empty_stdin(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "sub").mkdir()
    assert text_of(await _run(registry, ctx, "pwd -P; cat")) == f"{workspace.resolve()}\n"
    assert text_of(await _run(registry, ctx, "pwd -P", workdir="sub")) == f"{(workspace / 'sub').resolve()}\n"


async def test_workdir_is_confined(registry: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    outside = await _run(registry, ctx, "pwd", workdir="..")
    assert outside.code == "OUTSIDE_WORKSPACE"
    missing = await _run(registry, ctx, "pwd", workdir="nope")
    assert missing.code == "NOT_A_DIRECTORY"
    allowed = await _run(registry, make_ctx(workspace, allow_outside=True), "pwd -P", workdir="..")
    assert text_of(allowed) == f"{workspace.parent.resolve()}\n"


async def test_each_stream_keeps_its_tail(ctx: ToolContext) -> None:
    registry = builtin_registry(bash_max_output_bytes=100, max_inline_bytes=None)
    output = await _run(registry, ctx, "seq 1 1000; seq 1 5 >&2")
    stdout, stderr = text_of(output).split("[stderr]\n")
    kept, marker = stdout.rsplit("\n[output truncated; full output: (unavailable)]", 1)
    assert len(kept.encode()) == 100 and kept.endswith("998\n999\n1000\n")
    assert marker == "\n"
    assert stderr == "1\n2\n3\n4\n5\n"


async def test_timeout_terminates_the_process_group(ctx: ToolContext, workspace: Path) -> None:
    registry = builtin_registry(bash_default_timeout_ms=300, max_inline_bytes=None)
    async with asyncio.timeout(patience(60)):  # ended by its timeout, not by the child's 600 s
        output = await _run(registry, ctx, "echo started; sleep 600 & echo $! > child.pid; wait")
    assert (output.is_error, output.code) == (False, None)
    assert text_of(output) == "started\n[timed out after 300ms]\n[killed by signal: SIGTERM]"
    assert wait_dead(int((workspace / "child.pid").read_text()))


async def test_a_command_ignoring_sigterm_is_killed_after_the_grace(ctx: ToolContext) -> None:
    registry = builtin_registry(bash_default_timeout_ms=200, max_inline_bytes=None)
    started = time.monotonic()
    async with asyncio.timeout(patience(60)):  # killed after the grace, not after the 600 s sleep
        output = await _run(registry, ctx, "trap '' TERM; echo stubborn; sleep 600")
    assert time.monotonic() - started >= 3  # SIGKILL only after the grace (KILL_GRACE_S)
    assert text_of(output) == "stubborn\n[timed out after 200ms]\n[killed by signal: SIGKILL]"


async def test_timeout_argument_is_in_milliseconds_and_capped(ctx: ToolContext) -> None:
    registry = builtin_registry(bash_default_timeout_ms=10_000, bash_max_timeout_ms=400)
    short = await _run(registry, ctx, "sleep 5", timeoutMs=150)
    assert text_of(short) == "(no output)\n[timed out after 150ms]\n[killed by signal: SIGTERM]"
    capped = await _run(registry, ctx, "sleep 5", timeoutMs=3_600_000)
    assert text_of(capped).startswith("(no output)\n[timed out after 400ms]")


async def test_background_leftovers_are_killed_when_the_command_exits(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    async with asyncio.timeout(patience(60)):  # the command's end, not its child's 600 s
        output = await _run(registry, ctx, "sleep 600 & echo $! > child.pid; echo done")
    assert text_of(output) == "done\n"
    assert wait_dead(int((workspace / "child.pid").read_text()))


async def test_cancellation_kills_the_process_group(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    task = asyncio.create_task(
        _run(registry, ctx, "echo $$ > shell.pid; sleep 600 & echo $! > child.pid; wait")
    )
    shell_pid = int(await _wait_for_file(workspace / "shell.pid"))
    child_pid = int(await _wait_for_file(workspace / "child.pid"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_dead(shell_pid)
    assert wait_dead(child_pid)


async def test_concurrent_commands_do_not_interfere(registry: ToolRegistry, ctx: ToolContext) -> None:
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(_run(registry, ctx, f"sleep 0.05; echo {i}")) for i in range(5)]
    assert [text_of(t.result()) for t in tasks] == [f"{i}\n" for i in range(5)]


def _recorded_bash(upstream: Path, scenario: str) -> list[tuple[str, str]]:
    events = [json.loads(line) for line in (upstream / scenario / "session.jsonl").read_text().splitlines()]
    calls = {e["data"]["callId"]: e["data"] for e in events if e["type"] == "tool/call"}
    out = []
    for event in events:
        if event["type"] == "tool/result":
            block = event["data"]["message"]["content"][0]
            if calls[block["toolCallId"]]["name"] == "bash":
                out.append((calls[block["toolCallId"]]["arguments"], block["content"][0]["text"]))
    return out


async def test_the_recorded_plain_results(upstream: Path, registry: ToolRegistry, ctx: ToolContext) -> None:
    ((arguments, text),) = _recorded_bash(upstream, "tool-call-turn")
    assert text == "SNAPSHOT_OK\n"
    assert text_of(await registry.call("bash", arguments, ctx)) == text
    (tmp := ctx.cwd / "deleted.txt").write_text("original\n")
    ((arguments, text),) = _recorded_bash(upstream, "fs-delete-recreate")
    assert text == "(no output)"
    assert text_of(await registry.call("bash", arguments, ctx)) == text
    assert not tmp.exists()


@pytest.mark.skipif(shutil.which("node") is None, reason="the recorded command runs node")
async def test_the_recorded_spill(upstream: Path, ctx: ToolContext) -> None:
    ((arguments, recorded),) = _recorded_bash(upstream, "bash-spill")
    original = re.search(r"stored at: (\S+)\. Use", recorded).group(1)  # type: ignore[union-attr]
    root = Path(tempfile.mkdtemp(prefix="dsh-", dir="/tmp"))
    try:
        probe = SpillPolicy(root, token=lambda: "").path_for(ctx.session_id, "bash")
        token = "a" * (len(original) - len(str(probe)))  # a live path as long as the recorded one
        registry = ToolRegistry([BashTool()], spill=SpillPolicy(root, token=lambda: token))
        live = text_of(await registry.call("bash", arguments, ctx))
        path = re.search(r"stored at: (\S+)\. Use", live).group(1)  # type: ignore[union-attr]
        assert len(path) == len(original)
        assert live.replace(path, original) == recorded
        assert Path(path).read_text() == "SPILL_START-" + "x" * 2000 + "-SPILL_END"
    finally:
        shutil.rmtree(root)
