"""The ``bash`` tool: one ``bash -c`` command in its own process group, bounded in time and output.

The command runs in a new session (so it leads its own process group) with stdin from
``/dev/null`` and stdout and stderr combined into one pipe. When the command's shell exits,
whatever it left running in its group is killed (no orphans); on timeout or on asyncio
cancellation the whole group is killed with ``SIGKILL``. Output longer than the cap keeps
its tail, after a line saying how many bytes were cut. A non-zero exit is reported as a
final ``[exit code: N]`` line; a timeout is an error result with code ``TIMEOUT``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.builtin._base import BuiltinTool
from dsh.tools.codes import IO_ERROR, NOT_A_DIRECTORY, TIMEOUT, tool_error
from dsh.tools.schema import ToolArgs
from dsh.tools.workspace import resolve_path, workspace_root

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_BYTES = 30_000
_CLOSE_GRACE_S = 2.0


class BashArgs(ToolArgs):
    command: str = Field(description="The command line, run as `bash -c <command>`.")
    description: str = Field(description="A few words saying what the command does, for people watching.")
    timeoutMs: float | None = Field(  # the original's argument name (camelCase)
        None,
        gt=0,
        description="Time limit in milliseconds. Defaults to the configured limit and is capped by it.",
    )
    workdir: str | None = Field(
        None, description="Directory to run in, relative to the workspace. Default: the workspace."
    )


class _TailBuffer:
    """Keeps the last ``cap`` bytes of a stream and counts everything seen."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.total = 0
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        self._buf += data
        if len(self._buf) > 2 * self.cap:
            del self._buf[: len(self._buf) - self.cap]

    def text(self) -> tuple[str, int]:
        """The kept tail as text, and how many bytes before it were cut."""
        tail = bytes(self._buf[-self.cap :]) if self.cap > 0 else b""
        cut = self.total - len(tail)
        if cut:
            skip = 0
            while skip < min(3, len(tail)) and tail[skip] & 0xC0 == 0x80:
                skip += 1
            tail, cut = tail[skip:], cut + skip
        return tail.decode("utf-8", errors="replace"), cut


class _Capture(asyncio.SubprocessProtocol):
    def __init__(self, cap: int) -> None:
        self.output = _TailBuffer(cap)
        self.exited = asyncio.Event()
        self.closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.output.feed(data if isinstance(data, bytes) else data.encode("utf-8"))

    def process_exited(self) -> None:
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()


@dataclass(frozen=True, slots=True)
class _Outcome:
    output: str
    cut_bytes: int
    returncode: int | None
    timed_out: bool


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _wait_for(event: asyncio.Event) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_CLOSE_GRACE_S):
            await event.wait()


async def run_command(command: str, cwd: str, timeout_s: float, max_output_bytes: int) -> _Outcome:
    """Run ``bash -c command`` in ``cwd``; kill its process group on exit, timeout or cancel."""
    loop = asyncio.get_running_loop()
    try:
        transport, capture = await loop.subprocess_exec(
            lambda: _Capture(max_output_bytes),
            "bash",
            "-c",
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise tool_error(f"cannot start bash in {cwd}: {exc.strerror or exc}", IO_ERROR) from exc
    pgid = transport.get_pid()
    timed_out = False
    try:
        try:
            async with asyncio.timeout(timeout_s):
                await capture.exited.wait()
        except TimeoutError:
            timed_out = True
        _kill_group(pgid)
        await _wait_for(capture.closed)
    finally:
        try:
            if not capture.exited.is_set():
                _kill_group(pgid)
                await _wait_for(capture.exited)
        finally:
            transport.close()
    text, cut = capture.output.text()
    return _Outcome(text, cut, transport.get_returncode(), timed_out)


def _format_ms(ms: float) -> str:
    return f"{ms:g} ms" if ms < 1000 else f"{ms / 1000:g} s"


class BashTool(BuiltinTool[BashArgs]):
    """Run a shell command."""

    name = "bash"
    description = (
        "Run a command with `bash -c` and return its combined stdout and stderr. Every call "
        "starts a fresh shell in the workspace: nothing (cd, variables) carries over, so use "
        "`workdir` instead of `cd`. stdin is empty. A non-zero exit status is reported as "
        "`[exit code: N]`. Long output keeps only its end. Processes the command leaves "
        "running are stopped when it exits, and the whole command is killed when it runs "
        "past `timeoutMs`."
    )
    args_model = BashArgs

    def __init__(
        self,
        *,
        default_timeout_ms: int = DEFAULT_TIMEOUT_MS,
        max_timeout_ms: int = MAX_TIMEOUT_MS,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
    ) -> None:
        self.default_timeout_ms = default_timeout_ms
        self.max_timeout_ms = max_timeout_ms
        self.max_output_bytes = max_output_bytes

    async def call(self, args: BashArgs, ctx: ToolContext) -> ToolOutput:
        if args.workdir is None:
            cwd = workspace_root(ctx)
        else:
            where = resolve_path(ctx, args.workdir, argument="workdir")
            if not where.real.is_dir():
                raise tool_error(f"workdir {where.shown} is not an existing directory", NOT_A_DIRECTORY)
            cwd = where.real
        timeout_ms = min(args.timeoutMs or self.default_timeout_ms, self.max_timeout_ms)
        outcome = await run_command(args.command, str(cwd), timeout_ms / 1000, self.max_output_bytes)
        text = outcome.output
        if outcome.cut_bytes:
            note = f"[output truncated: the first {outcome.cut_bytes} bytes were cut; showing the rest]"
            text = f"{note}\n{text}"
        meta: dict[str, Any] = {
            "exitCode": outcome.returncode,
            "timedOut": outcome.timed_out,
            "truncatedBytes": outcome.cut_bytes,
        }
        if outcome.timed_out:
            message = (
                f"command timed out after {_format_ms(timeout_ms)}; "
                "it and every process it started were killed"
            )
            if text:
                message += f". Output before the timeout:\n{text}"
            return ToolOutput.error(message, TIMEOUT, meta=meta)
        code = outcome.returncode
        if code:
            status = f"[exit code: {code}]" if code > 0 else f"[killed by signal {-code}]"
            text = f"{text}{'' if not text or text.endswith(chr(10)) else chr(10)}{status}"
        return ToolOutput.text(text, meta=meta)
