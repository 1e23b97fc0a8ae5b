"""Running one hook command: ``bash -c`` in its own process group, stdin fed, time-limited.

The command leads a new session (its own process group). Its stdin gets the payload and
is closed; stdout and stderr are captured separately (each up to :data:`MAX_CAPTURE_BYTES`,
the rest counted and dropped). When the time limit passes, or the caller is cancelled, the
whole group is killed with ``SIGKILL``; when the shell exits, whatever it left running in
its group is killed too, so a hook can never hold a turn past its timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from dsh.errors import DshError
from dsh.tools.process_group import signal_group, wait_for_event

MAX_CAPTURE_BYTES: Final = 1_000_000
_CLOSE_GRACE_S: Final = 1.0


@dataclass(frozen=True, slots=True)
class CommandRun:
    """How one hook command ended.

    ``exit_code`` is ``None`` when it did not exit by itself (timed out, killed by a signal)
    or could not start (``spawn_error`` then says why).
    """

    stdout: str
    stderr: str
    exit_code: int | None
    duration_ms: float
    timed_out: bool = False
    spawn_error: str | None = None


class _Capture(asyncio.SubprocessProtocol):
    def __init__(self) -> None:
        self.out = bytearray()
        self.err = bytearray()
        self.exited = asyncio.Event()
        self.closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        raw = data if isinstance(data, bytes) else data.encode("utf-8")
        buf = self.err if fd == 2 else self.out
        room = MAX_CAPTURE_BYTES - len(buf)
        if room > 0:
            buf += raw[:room]

    def process_exited(self) -> None:
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()


async def run_hook_command(
    command: str,
    *,
    cwd: str,
    env: Mapping[str, str],
    stdin: bytes,
    timeout_ms: int,
    wrap: Callable[[list[str]], list[str]] | None = None,
) -> CommandRun:
    """Run ``bash -c command`` (``wrap``: inside a sandbox); never raises for the command's own
    failure (only on cancel). A sandbox that cannot be built is a spawn failure."""
    loop = asyncio.get_running_loop()
    started = time.perf_counter()

    def elapsed() -> float:
        return (time.perf_counter() - started) * 1000

    argv = ["bash", "-c", command]
    try:
        argv = wrap(argv) if wrap is not None else argv
    except DshError as exc:
        return CommandRun("", "", None, elapsed(), spawn_error=str(exc))
    try:
        transport, capture = await loop.subprocess_exec(
            _Capture,
            *argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        return CommandRun(
            "", "", None, elapsed(), spawn_error=f"cannot start bash in {cwd}: {exc.strerror or exc}"
        )
    pgid = transport.get_pid()
    timed_out = False
    try:
        pipe = transport.get_pipe_transport(0)
        if isinstance(pipe, asyncio.WriteTransport):
            with contextlib.suppress(OSError):  # the command may exit without reading its stdin
                pipe.write(stdin)
                pipe.close()
        if not await wait_for_event(capture.exited, timeout_ms / 1000):
            timed_out = True
        signal_group(pgid, signal.SIGKILL)  # on exit: what it left running; on timeout: everything
        await wait_for_event(capture.exited, _CLOSE_GRACE_S)
        await wait_for_event(capture.closed, _CLOSE_GRACE_S)
    finally:
        if not capture.exited.is_set():
            signal_group(pgid, signal.SIGKILL)
        transport.close()
    code = transport.get_returncode()
    return CommandRun(
        capture.out.decode("utf-8", errors="replace"),
        capture.err.decode("utf-8", errors="replace"),
        None if timed_out or code is None or code < 0 else code,
        elapsed(),
        timed_out=timed_out,
    )
