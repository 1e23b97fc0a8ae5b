"""The ``bash`` tool: one ``bash -c`` command in its own process group, answered as the original does.

The command runs in a new session (it leads its own process group) with stdin from
``/dev/null`` and the environment of :func:`~dsh.tools.environment.tool_environment`
(secrets removed, ``NO_COLOR``/``TERM``/``PAGER``/``DSH_*`` set). stdout and stderr are
captured separately, each keeping its last ``max_output_bytes`` bytes. The answer::

    <stdout>[\\n][stderr]\\n<stderr>      (no output) when both are empty
    [timed out after <ms>ms]            after SIGTERM to the group (SIGKILL 3 s later)
    [killed by signal: SIG…] | [exit code: N]

A non-zero exit and a timeout are ordinary (non-error) results. When the shell exits,
whatever it left running in its group is killed; on asyncio cancellation the whole group
is killed with ``SIGKILL``.
"""

from __future__ import annotations

import asyncio
import functools
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from dsh.jsonx import dumps
from dsh.tools.base import Tool, ToolContext, ToolOutput, arg_text
from dsh.tools.builtin.bash_job import run_bash_job
from dsh.tools.codes import IO_ERROR, NOT_A_DIRECTORY, tool_error
from dsh.tools.environment import tool_environment
from dsh.tools.escalation import Escalation, escalate, justification_field, permissions_field
from dsh.tools.jobs import started_text
from dsh.tools.process_group import KILL_GRACE_S, signal_group, signal_name, spawn_in_group, wait_for_event
from dsh.tools.sandbox import confine
from dsh.tools.schema import Number, ToolArgs
from dsh.tools.workspace import resolve_path, workspace_root

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_BYTES = 64_000
_CLOSE_GRACE_S = 2.0
TRUNCATED = "\n[output truncated; full output: (unavailable)]"
BACKGROUND_DISABLED = "run_in_background is disabled for this deployment (enableRunInBackground: false)"


class BashArgs(ToolArgs):
    command: str = Field(description="The command line, run as `bash -c <command>`.")
    description: str = Field(description="A few words saying what the command does, for people watching.")
    timeoutMs: Number | None = Field(  # the original's argument name (camelCase)
        None, description="Time limit in milliseconds. Defaults to the configured limit and is capped by it."
    )
    workdir: str | None = Field(
        None, description="Directory to run in, relative to the workspace. Default: the workspace."
    )
    run_in_background: bool | None = Field(
        None,
        description="Start the command as a background job and answer with its id at once; no time "
        "limit. Read it with job_output, stop it with job_kill.",
    )
    sandbox_permissions: Escalation | None = permissions_field("command")
    justification: str | None = justification_field("command")


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

    def text(self) -> str:
        """The kept tail as text (a character cut at its start is dropped), with the marker if cut."""
        tail = bytes(self._buf[-self.cap :]) if self.cap > 0 else b""
        if self.total <= len(tail):
            return tail.decode("utf-8", errors="replace")
        skip = 0
        while skip < min(3, len(tail)) and tail[skip] & 0xC0 == 0x80:
            skip += 1
        return tail[skip:].decode("utf-8", errors="replace") + TRUNCATED


class _Capture(asyncio.SubprocessProtocol):
    def __init__(self, cap: int) -> None:
        self.stdout = _TailBuffer(cap)
        self.stderr = _TailBuffer(cap)
        self.exited = asyncio.Event()
        self.closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        raw = data if isinstance(data, bytes) else data.encode("utf-8")
        (self.stderr if fd == 2 else self.stdout).feed(raw)

    def process_exited(self) -> None:
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a finished command left: both streams, how it ended, whether it timed out."""

    stdout: str
    stderr: str
    returncode: int | None
    timed_out: bool


async def run_command(
    command: str,
    cwd: str,
    timeout_s: float,
    max_output_bytes: int,
    env: dict[str, str],
    wrap: Callable[[list[str]], list[str]] | None = None,
) -> Outcome:
    """Run ``bash -c command`` in ``cwd`` (``wrap``: a sandbox); stop its group on exit, timeout, cancel."""
    argv = ["bash", "-c", command]
    if wrap is not None:
        argv = wrap(argv)
    try:
        transport, capture = await spawn_in_group(lambda: _Capture(max_output_bytes), argv, cwd, env)
    except OSError as exc:
        raise tool_error(f"cannot start bash in {cwd}: {exc.strerror or exc}", IO_ERROR) from exc
    pgid = transport.get_pid()
    timed_out = False
    try:
        if not await wait_for_event(capture.exited, timeout_s):
            timed_out = True
            signal_group(pgid, signal.SIGTERM)
            await wait_for_event(capture.exited, KILL_GRACE_S)
        signal_group(pgid, signal.SIGKILL)
        await wait_for_event(capture.closed, _CLOSE_GRACE_S)
    finally:
        try:
            if not capture.exited.is_set():
                signal_group(pgid, signal.SIGKILL)
                await wait_for_event(capture.exited, _CLOSE_GRACE_S)
        finally:
            transport.close()
    return Outcome(capture.stdout.text(), capture.stderr.text(), transport.get_returncode(), timed_out)


def _ms(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _json_number(value: float) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return dumps(value).decode()


def format_outcome(outcome: Outcome, timeout_ms: float) -> str:
    """The original's foreground text: body, then the timeout and exit markers."""
    body = outcome.stdout
    if outcome.stderr:
        if body and not body.endswith("\n"):
            body += "\n"
        body += "[stderr]\n" + outcome.stderr
    if not body:
        body = "(no output)"
    markers: list[str] = []
    if outcome.timed_out:
        markers.append(f"[timed out after {_ms(timeout_ms)}ms]")
    code = outcome.returncode
    if code is not None and code < 0:
        markers.append(f"[killed by signal: {signal_name(-code)}]")
    elif code:
        markers.append(f"[exit code: {code}]")
    if markers:
        body += ("" if body.endswith("\n") else "\n") + "\n".join(markers)
    return body


class BashTool(Tool[BashArgs]):
    """Run a shell command."""

    name = "bash"
    description = (
        "Run a command with `bash -c` and return its stdout, then its stderr under a "
        "`[stderr]` line. Every call starts a fresh shell in the workspace: nothing (cd, "
        "variables) carries over, so use `workdir` instead of `cd`. stdin is empty. A non-zero "
        "exit status is reported as `[exit code: N]`. Long output keeps only its end. Processes "
        "the command leaves running are stopped when it exits, and the whole command is "
        "stopped when it runs past `timeoutMs`. With `run_in_background: true` the call "
        "answers with a job id at once (no time limit): `job_output` reads what the job wrote "
        "so far, `job_kill` stops it, and a notice arrives when it finishes."
    )
    args_model = BashArgs
    acp_kind = "execute"

    def acp_title(self, args: Mapping[str, Any]) -> str | None:
        command = arg_text(args, "command")
        return f"Run {command}" if command else None

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
        if not args.command.strip():
            raise tool_error("invalid command: expected a non-empty string")
        if not args.description.strip():
            raise tool_error("invalid description: expected a non-empty string")
        if args.timeoutMs is not None and not args.timeoutMs > 0:
            raise tool_error(
                f"invalid timeoutMs: expected a positive number, got {_json_number(args.timeoutMs)}"
            )
        ctx = await escalate(
            ctx,
            self.name,
            args.sandbox_permissions,
            args.justification,
            what="command",
            command=args.command,
            workdir=args.workdir,
        )
        if args.workdir is None:
            cwd = workspace_root(ctx)
        else:
            where = resolve_path(ctx, args.workdir, argument="workdir")
            if not where.real.is_dir():
                raise tool_error(f"workdir {where.shown} is not an existing directory", NOT_A_DIRECTORY)
            cwd = where.real
        timeout_ms = min(args.timeoutMs or self.default_timeout_ms, self.max_timeout_ms)
        policy, workspace, where_to = ctx.sandbox, workspace_root(ctx), Path(cwd)
        if args.run_in_background:
            return await self._background(args.command, where_to, ctx)
        wrap: Callable[[list[str]], list[str]] | None = None
        if policy is not None and policy.confined:
            # Checked before anything runs: no usable sandbox ⇒ the refusal, never an unconfined run.
            await asyncio.to_thread(confine, policy, ["true"], workspace, where_to)
            wrap = functools.partial(confine, policy, workspace=workspace, cwd=where_to)

        outcome = await run_command(
            args.command,
            str(cwd),
            timeout_ms / 1000,
            self.max_output_bytes,
            tool_environment(ctx.session_id),
            wrap,
        )
        return ToolOutput.text(format_outcome(outcome, timeout_ms))

    async def _background(self, command: str, cwd: Path, ctx: ToolContext) -> ToolOutput:
        """Start the job (under the call's sandbox, as a foreground call) and answer with its id
        once it runs (its process spawned, or it ended without running)."""
        table = ctx.jobs
        if table is None or table.closed:
            raise tool_error(BACKGROUND_DISABLED)
        refused = table.admission()
        if refused is not None:
            raise tool_error(refused)
        job = table.new("bash", command)
        work = run_bash_job(
            job, command, cwd, tool_environment(ctx.session_id), ctx.sandbox, workspace_root(ctx)
        )
        job.task = asyncio.get_running_loop().create_task(work, name=f"job {job.id}")
        started = asyncio.ensure_future(job.started.wait())
        await asyncio.wait([started, job.task], return_when=asyncio.FIRST_COMPLETED)
        started.cancel()
        return ToolOutput.text(started_text(job.id))
