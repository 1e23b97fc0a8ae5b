"""A confined background job dies with dsh, even when dsh is killed with SIGKILL (nothing
of dsh runs to kill it): bubblewrap's ``--die-with-parent``, the Landlock runner's
parent-death signal. ``dsh run`` (a real process) starts a job that leaves a ``setsid``
daemon too, then is SIGKILLed while its next tool call runs; every process of the job must
be gone within :data:`BOUND_S`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply
from dsh.tools.sandbox import SandboxBackend
from tests.patience import patience
from tests.procs import processes_with

BOUND_S = patience(30.0)
"""A hang guard: the kernel's parent-death signal ends them at once; the job sleeps 600 s."""


def _handler(marker: str) -> Callable[[RecordedRequest], Response]:
    daemon = f"setsid bash -c 'exec -a {marker}-daemon sleep 600' </dev/null >/dev/null 2>&1"
    job = f"{daemon} & exec -a {marker} sleep 600"

    def handle(req: RecordedRequest) -> Response:
        if not any(m.get("role") == "tool" for m in req.messages):
            args = {"command": job, "description": "a job", "run_in_background": True}
            return stream_reply(tool_calls=[WireToolCall.split("c1", "bash", json.dumps(args), 2)])
        if sum(1 for m in req.messages if m.get("role") == "tool") == 1:  # keep dsh busy meanwhile
            args = {"command": "sleep 60", "description": "wait"}
            return stream_reply(tool_calls=[WireToolCall.split("c2", "bash", json.dumps(args), 2)])
        return stream_reply(text=["done"])

    return handle


def _wait(what: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.1)
    return False


def test_a_confined_job_dies_with_a_sigkilled_dsh(tmp_path: Path, backend: SandboxBackend) -> None:
    marker = f"dsh-job-dies-{backend}-{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update({"DSH_STORE": f"sqlite:{tmp_path / 's.db'}", "DSH_SANDBOX": "workspace-write",
                "DSH_SANDBOX_BACKEND": backend, "DEEPSEEK_API_KEY": "sk-test-not-a-key-0000"})  # fmt: skip
    with OpenAICompatServer(handler=_handler(marker)) as server:
        dsh = subprocess.Popen(
            [sys.executable, "-m", "dsh.cli", "run", "Start a job.", "--base-url", server.base_url,
             "--model", "m"],
            env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            # the job and its daemon run, and dsh is in its next call
            started = _wait(
                lambda: len(processes_with(marker, zombies=False)) >= 2 and len(server.requests) >= 2,
                patience(60),
            )
            assert started, "the job never started"
            dsh.send_signal(signal.SIGKILL)
            dsh.wait(patience(30))
            gone = _wait(lambda: not processes_with(marker, zombies=False), BOUND_S)
        finally:
            left = processes_with(marker, zombies=False)
            for pid in left:  # what this test started, by pid
                # it may die between the listing and the kill (the parent-death chain is
                # still at work on a loaded machine): gone is what we want
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if dsh.poll() is None:
                dsh.kill()
    assert gone, f"still running {BOUND_S:g} s after dsh was killed: {left}"
