"""``bash`` with ``run_in_background: true``: the command as a job of the session (``bash-<n>``).

The job runs exactly as a foreground call would — ``bash -c`` in its own process group,
stdin empty, the tool environment, under the same sandbox runner — but with no timeout,
its output kept unread for ``job_output``. It ends ``completed`` (exit 0), ``failed``
(another exit code or a signal), or ``killed`` (``job_kill``, or the agent closing: the
whole group gets ``SIGKILL``). When the sandbox runner itself cannot start, nothing runs:
the job ends ``killed, killed before exit`` with ``spawn failed: <why>`` on its stderr and
the runner-failed marker (the original's background form of the foreground refusal).
"""

from __future__ import annotations

import asyncio
import errno
import signal
from pathlib import Path

from dsh.tools.jobs import Job
from dsh.tools.process_group import (
    KILL_GRACE_S,
    signal_group,
    signal_name,
    spawn_in_group,
    wait_for_event,
    wait_group_gone,
)
from dsh.tools.sandbox import SandboxPolicy, confine, runner_failure

_CLOSE_GRACE_S = 2.0


class _JobPipes(asyncio.SubprocessProtocol):
    def __init__(self, job: Job) -> None:
        self.job = job
        self.exited = asyncio.Event()
        self.closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        raw = data if isinstance(data, bytes) else data.encode("utf-8")
        (self.job.stderr if fd == 2 else self.job.stdout).feed(raw)

    def process_exited(self) -> None:
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()


def _spawn_failed(job: Job, detail: str, mode: str | None) -> None:
    job.stderr.feed(f"spawn failed: {detail}".encode())
    job.runner_failed_mode = mode
    job.settle("killed", "killed before exit")


def _ended(job: Job, code: int | None) -> None:
    if code is None:
        job.settle("killed" if job.kill_reason is not None or job.status == "stopping" else "failed", None)
    elif code < 0:
        detail = f"signal: {signal_name(-code)}"
        job.settle("killed" if job.status == "stopping" else "failed", detail)
    elif job.status == "stopping":
        job.settle("killed", f"exit code: {code}")
    else:
        job.settle("completed" if code == 0 else "failed", f"exit code: {code}")


async def run_bash_job(
    job: Job,
    command: str,
    cwd: Path,
    env: dict[str, str],
    policy: SandboxPolicy | None,
    workspace: Path,
) -> None:
    """Run ``command`` as ``job`` until it ends; cancelled (the agent closing) ⇒ the group is killed."""
    argv = ["bash", "-c", command]
    if policy is not None and policy.confined:
        failure = await asyncio.to_thread(runner_failure, policy, workspace)
        if failure is not None:
            _spawn_failed(job, failure, policy.mode)
            return
        argv = confine(policy, argv, workspace, cwd)
    if job.kill_requested():  # job_kill came before anything was started
        job.settle("killed", "killed before exit")
        return
    try:
        transport, pipes = await spawn_in_group(lambda: _JobPipes(job), argv, str(cwd), env)
    except OSError as exc:
        name = errno.errorcode.get(exc.errno or 0, exc.strerror or str(exc))
        mode = policy.mode if policy is not None and policy.confined else None
        _spawn_failed(job, f"Error: spawn {argv[0]} {name}", mode)
        return
    job.started.set()
    pgid = transport.get_pid()
    killer: list[asyncio.TimerHandle] = []

    def stop() -> None:
        signal_group(pgid, signal.SIGTERM)
        later = asyncio.get_running_loop().call_later(KILL_GRACE_S, signal_group, pgid, signal.SIGKILL)
        killer.append(later)

    job.stop = stop
    if job.kill_requested():  # job_kill came while the process was being started
        stop()
    try:
        await pipes.exited.wait()
        signal_group(pgid, signal.SIGKILL)  # what the command left running in its group
        await wait_for_event(pipes.closed, _CLOSE_GRACE_S)
    except asyncio.CancelledError:
        signal_group(pgid, signal.SIGKILL)
        await asyncio.shield(wait_for_event(pipes.exited, _CLOSE_GRACE_S))
        await asyncio.shield(wait_group_gone(pgid, _CLOSE_GRACE_S))  # the agent closes: nothing left
        job.status = "stopping"
        _ended(job, transport.get_returncode())
        raise
    finally:
        job.stop = None
        for handle in killer:
            handle.cancel()
        transport.close()
    _ended(job, transport.get_returncode())
