"""Background bash jobs run under the same sandbox as a foreground call: confined, or refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.tools import ToolContext, ToolRegistry
from dsh.tools.builtin.bash_job import run_bash_job
from dsh.tools.jobs import JobTable
from dsh.tools.sandbox import SandboxBackend, SandboxPolicy, _probe

from .conftest import requires_bwrap, text_of
from .test_escapes import DENIED

FULL = SandboxPolicy(mode="danger-full-access")


def _ctx(cwd: Path, policy: SandboxPolicy | None, jobs: JobTable) -> ToolContext:
    return ToolContext(session_id="s-jobs", call_id="call-1", cwd=cwd, sandbox=policy, jobs=jobs)


async def _job_output(registry: ToolRegistry, cwd: Path, policy: SandboxPolicy | None, command: str) -> str:
    """Start ``command`` in the background and read it to its end."""
    jobs = JobTable()
    ctx = _ctx(cwd, policy, jobs)
    started = await registry.call(
        "bash", json.dumps({"command": command, "description": "bg", "run_in_background": True}), ctx
    )
    assert text_of(started) == "started background job bash-1"
    output = await registry.call("job_output", json.dumps({"job_id": "bash-1", "wait": True}), ctx)
    await jobs.aclose()
    return text_of(output)


async def test_a_background_write_outside_the_workspace_is_refused_by_the_kernel(
    base: Path, registry: ToolRegistry, backend: SandboxBackend
) -> None:
    command = "touch ../outside/escaped"
    unconfined = await _job_output(registry, base / "ws", FULL, command)
    assert unconfined == "(no new output)\n[status: completed, exit code: 0]"
    assert (base / "outside" / "escaped").exists()  # the command really escapes when not confined
    (base / "outside" / "escaped").unlink()

    policy = SandboxPolicy(mode="workspace-write", backend=backend)
    confined = await _job_output(registry, base / "ws", policy, command)
    assert DENIED[backend] in confined
    assert confined.endswith("[status: failed, exit code: 1]")
    assert not (base / "outside" / "escaped").exists()


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
async def test_a_missing_runner_starts_the_job_but_runs_nothing(
    tmp_path: Path, registry: ToolRegistry, missing_runner: str, mode: str
) -> None:
    output = await _job_output(registry, tmp_path, SandboxPolicy(mode=mode), "touch ran")  # type: ignore[arg-type]
    assert output == (
        f"[stderr]\nspawn failed: Error: spawn {missing_runner} ENOENT\n[sandbox: the sandbox runner itself "
        f"failed under {mode} mode — the command did not run; this is a sandbox problem, not a command "
        "failure]\n[status: killed, killed before exit]"
    )
    assert not (tmp_path / "ran").exists()


async def test_without_a_job_table_background_is_disabled(tmp_path: Path, registry: ToolRegistry) -> None:
    ctx = ToolContext(session_id="s", call_id="c", cwd=tmp_path)
    output = await registry.call(
        "bash", json.dumps({"command": "touch ran", "description": "bg", "run_in_background": True}), ctx
    )
    assert text_of(output) == (
        "Error: run_in_background is disabled for this deployment (enableRunInBackground: false)"
    )
    assert not (tmp_path / "ran").exists()


@requires_bwrap
async def test_a_job_killed_while_its_sandbox_is_checked_never_runs(tmp_path: Path) -> None:
    """The start answers once the job runs, so through the tools a kill always finds it
    running; the job's own guard still holds for a kill that lands while the runner is
    checked: nothing runs."""
    _probe.cache_clear()
    jobs = JobTable()
    job = jobs.new("bash", "touch ran")
    job.request_kill(None)
    policy = SandboxPolicy(mode="workspace-write")
    await run_bash_job(job, "touch ran", tmp_path, {}, policy, tmp_path)
    assert job.read() == "(no new output)\n[status: killed, killed before exit]"
    assert job.started.is_set() and not (tmp_path / "ran").exists()


async def test_a_background_start_answers_once_the_job_runs(tmp_path: Path, registry: ToolRegistry) -> None:
    """Red before: the start answered before the job's process existed, so the next command
    could not see its side effect."""
    jobs = JobTable()
    ctx = _ctx(tmp_path, SandboxPolicy(mode="workspace-write"), jobs)
    args = {"command": "sleep 30", "description": "bg", "run_in_background": True}
    started = await registry.call("bash", json.dumps(args), ctx)
    assert text_of(started) == "started background job bash-1"
    job = jobs.get("bash-1")
    assert job is not None and job.started.is_set() and job.stop is not None  # its process is there
    await jobs.aclose()


async def test_job_kill_stops_a_confined_job(
    base: Path, registry: ToolRegistry, backend: SandboxBackend
) -> None:
    jobs = JobTable()
    ctx = _ctx(base / "ws", SandboxPolicy(backend=backend), jobs)
    args = {"command": "echo up; sleep 30", "description": "bg", "run_in_background": True}
    await registry.call("bash", json.dumps(args), ctx)
    await registry.call("job_output", json.dumps({"job_id": "bash-1", "wait": True, "timeout_ms": 300}), ctx)
    killed = await registry.call("job_kill", json.dumps({"job_id": "bash-1"}), ctx)
    assert text_of(killed) == "requested cancellation of job bash-1"
    output = await registry.call("job_output", json.dumps({"job_id": "bash-1", "wait": True}), ctx)
    await jobs.aclose()
    assert text_of(output).endswith("[status: killed, signal: SIGTERM]"), text_of(output)
