"""The bash tool: output, exit codes, workdir, output cap, timeouts and cancellation."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from dsh.tools import ToolContext, ToolOutput, ToolRegistry, builtin_registry

from .conftest import make_ctx, text_of, wait_dead


def _bash(command: str, **extra: object) -> str:
    return json.dumps({"command": command, "description": "test command", **extra})


async def _run(registry: ToolRegistry, ctx: ToolContext, command: str, **extra: object) -> ToolOutput:
    return await registry.call("bash", _bash(command, **extra), ctx)


async def _wait_for_file(path: Path, timeout: float = 5.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


async def test_output_is_verbatim(registry: ToolRegistry, ctx: ToolContext) -> None:
    output = await _run(registry, ctx, "echo SNAPSHOT_OK")
    assert (output.is_error, text_of(output)) == (False, "SNAPSHOT_OK\n")
    assert output.meta == {"exitCode": 0, "timedOut": False, "truncatedBytes": 0}


async def test_stdout_and_stderr_are_combined(registry: ToolRegistry, ctx: ToolContext) -> None:
    output = await _run(registry, ctx, "echo out; echo err >&2; echo out2")
    assert text_of(output) == "out\nerr\nout2\n"


async def test_exit_codes_and_no_output(registry: ToolRegistry, ctx: ToolContext) -> None:
    assert text_of(await _run(registry, ctx, "true")) == "(no output)"
    failed = await _run(registry, ctx, "echo partial; exit 3")
    assert (failed.is_error, text_of(failed)) == (False, "partial\n[exit code: 3]")
    assert text_of(await _run(registry, ctx, "printf x; exit 1")) == "x\n[exit code: 1]"
    assert text_of(await _run(registry, ctx, "exit 2")) == "[exit code: 2]"
    assert text_of(await _run(registry, ctx, "kill -9 $$")) == "[killed by signal 9]"


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


async def test_output_cap_keeps_the_tail(ctx: ToolContext) -> None:
    registry = builtin_registry(bash_max_output_bytes=100)
    output = await _run(registry, ctx, "seq 1 1000")
    text = text_of(output)
    first, rest = text.split("\n", 1)
    assert first == "[output truncated: the first 3793 bytes were cut; showing the rest]"
    assert len(rest) == 100
    assert rest.endswith("998\n999\n1000\n")
    assert output.meta is not None
    assert output.meta["truncatedBytes"] == 3793


async def test_timeout_kills_the_process_group(ctx: ToolContext, workspace: Path) -> None:
    registry = builtin_registry(bash_default_timeout_ms=300)
    started = time.monotonic()
    output = await _run(registry, ctx, "echo started; sleep 30 & echo $! > child.pid; wait")
    assert time.monotonic() - started < 3
    assert (output.is_error, output.code) == (True, "TIMEOUT")
    assert text_of(output) == (
        "Error: command timed out after 300 ms; it and every process it started were killed. "
        "Output before the timeout:\nstarted\n"
    )
    assert wait_dead(int((workspace / "child.pid").read_text()))


async def test_timeout_argument_is_in_milliseconds_and_capped(ctx: ToolContext) -> None:
    registry = builtin_registry(bash_default_timeout_ms=10_000, bash_max_timeout_ms=400)
    short = await _run(registry, ctx, "sleep 5", timeoutMs=150)
    assert text_of(short).startswith("Error: command timed out after 150 ms")
    capped = await _run(registry, ctx, "sleep 5", timeoutMs=3_600_000)
    assert text_of(capped).startswith("Error: command timed out after 400 ms")
    assert (await _run(registry, ctx, "true", timeoutMs=0)).code == "INVALID_ARGUMENTS"


async def test_background_leftovers_are_killed_when_the_command_exits(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    started = time.monotonic()
    output = await _run(registry, ctx, "sleep 30 & echo $! > child.pid; echo done")
    assert text_of(output) == "done\n"
    assert time.monotonic() - started < 3
    assert wait_dead(int((workspace / "child.pid").read_text()))


async def test_cancellation_kills_the_process_group(
    registry: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    task = asyncio.create_task(
        _run(registry, ctx, "echo $$ > shell.pid; sleep 30 & echo $! > child.pid; wait")
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
