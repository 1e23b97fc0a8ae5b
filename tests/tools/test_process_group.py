"""``wait_group_gone``: "nothing is left" means every process of the group has died.

``killpg`` returns once the signal is sent; a killed process may still be running for a
moment after it, and an orphan's zombie may never be reaped. Jobs wait here on close.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from dsh.tools.process_group import group_alive, spawn_in_group, wait_group_gone


def _group(command: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["bash", "-c", command], start_new_session=True)


async def test_a_running_group_is_alive_until_killed_and_then_gone() -> None:
    proc = _group("sleep 30 & sleep 30; wait")
    try:
        assert group_alive(proc.pid)
        assert not await wait_group_gone(proc.pid, 0.2)  # nothing killed it: still there
        os.killpg(proc.pid, signal.SIGKILL)
        assert await wait_group_gone(proc.pid, 5.0)
        assert not group_alive(proc.pid)
    finally:
        proc.kill()
        proc.wait()


async def test_an_unreaped_zombie_does_not_count_as_alive() -> None:
    proc = _group("exec sleep 30")
    os.killpg(proc.pid, signal.SIGKILL)
    assert await wait_group_gone(proc.pid, 5.0)  # a zombie until proc.wait() below reaps it
    assert os.waitpid(proc.pid, os.WNOHANG)[0] == proc.pid  # it was a zombie of ours
    proc.returncode = -9


async def test_a_cancel_while_the_spawn_is_still_connecting_kills_the_whole_group(tmp_path: Path) -> None:
    """The command can be running (and have started children) before ``subprocess_exec``
    returns; a cancel in that window must stop the group, not wait for the child holding
    the pipes (asyncio alone kills the shell only and waits for its pipes to close)."""
    child_file = tmp_path / "child.pid"
    command = f"sleep 300 & echo $! > {child_file}; wait"
    made: list[asyncio.SubprocessProtocol] = []

    def protocol() -> asyncio.SubprocessProtocol:  # asyncio forks right after, in the same step
        made.append(asyncio.SubprocessProtocol())
        return made[-1]

    argv = ["bash", "-c", command]
    spawn = asyncio.create_task(spawn_in_group(protocol, argv, str(tmp_path), {}))
    while not made:
        await asyncio.sleep(0)
    # the shell is forked and the spawn waits for its pipes to connect: keep the loop blocked
    deadline = time.monotonic() + 10
    while not (child_file.exists() and child_file.read_text().strip()):
        assert time.monotonic() < deadline, "the shell never started its child"
        time.sleep(0.01)
    group = os.getpgid(int(child_file.read_text()))  # the shell's: it leads its own session
    spawn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(spawn, 20)  # a hang guard, not a timing: unfixed, this waits 300 s
    assert await wait_group_gone(group, 5.0)
