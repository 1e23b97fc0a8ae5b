"""``wait_group_gone``: "nothing is left" means every process of the group has died.

``killpg`` returns once the signal is sent; a killed process may still be running for a
moment after it, and an orphan's zombie may never be reaped. Jobs wait here on close.
"""

from __future__ import annotations

import os
import signal
import subprocess

from dsh.tools.process_group import group_alive, wait_group_gone


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
