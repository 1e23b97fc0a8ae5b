"""Process-group helpers shared by everything that runs ``bash -c`` (the bash tool, jobs, hooks)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Iterator, Sequence
from typing import Final, TypeVar

KILL_GRACE_S: Final = 3.0
"""Seconds between ``SIGTERM`` and ``SIGKILL`` when a command is stopped."""


P = TypeVar("P", bound=asyncio.SubprocessProtocol)


async def spawn_in_group(
    protocol: Callable[[], P], argv: Sequence[str], cwd: str, env: dict[str, str]
) -> tuple[asyncio.SubprocessTransport, P]:
    """Start ``argv`` as every tool command starts: empty stdin, piped stdout and stderr, in
    its own session (so its process group is the one :func:`signal_group` stops)."""
    loop = asyncio.get_running_loop()
    spawning = asyncio.ensure_future(loop.subprocess_exec(
        protocol, *argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, cwd=cwd, env=env, start_new_session=True,
    ))  # fmt: skip
    try:
        return await asyncio.shield(spawning)
    except asyncio.CancelledError:
        # The command may run already, its children holding the pipes: asyncio's own
        # cleanup would kill the shell alone and wait for them. Stop the whole group.
        with contextlib.suppress(OSError):
            transport, _ = await asyncio.shield(spawning)
            signal_group(transport.get_pid(), signal.SIGKILL)
            for _ in range(300):  # reaped within moments: closing before would leave it unwaited
                if transport.get_returncode() is not None:
                    break
                await asyncio.sleep(0.01)
            transport.close()
        raise


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to the whole process group (gone or not ours: nothing to do)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def wait_for_event(event: asyncio.Event, seconds: float) -> bool:
    """Wait at most ``seconds`` for ``event``; whether it is set."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
    return event.is_set()


def signal_name(number: int) -> str:
    """``SIGTERM`` for 15 (``signal N`` for a number Python does not name)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` still runs (a zombie waiting to be reaped does not).

    On Linux by reading ``/proc`` (a killed process stays a group member until its parent
    reaps it, which an orphan's reaper may never do); elsewhere by probing the group.
    """
    pids = _proc_pids()
    if pids is None:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return any(group == pgid for group, _ in _live(pids))  # stops at the first member found


def session_groups(sid: int) -> set[int]:
    """The process groups of the live processes of session ``sid`` (Linux's ``/proc``;
    elsewhere none known): an interactive shell puts each job in a group of its own."""
    return {group for group, session in _live(_proc_pids() or []) if session == sid}


def _proc_pids() -> list[str] | None:
    """The entries of ``/proc`` (``None`` without it)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    return entries or None


def _live(entries: list[str]) -> Iterator[tuple[int, int]]:
    """``(process group, session)`` of each live process of ``entries``, read as it goes."""
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()  # after "pid (comm) ": state, ppid, pgrp, session
        if len(fields) > 3 and fields[0] not in (b"Z", b"X"):
            yield int(fields[2]), int(fields[3])


async def wait_group_gone(pgid: int, seconds: float) -> bool:
    """Wait at most ``seconds`` until no process of group ``pgid`` runs; whether none does.

    ``killpg`` returns when the signal is sent, not when every member has died: a caller
    that promises "nothing is left" waits here after ``SIGKILL``.
    """
    deadline = asyncio.get_running_loop().time() + seconds
    while group_alive(pgid):
        if asyncio.get_running_loop().time() >= deadline:
            return False
        await asyncio.sleep(0.01)
    return True
