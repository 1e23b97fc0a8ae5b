"""``dsh worker`` logs one plain line per event on stderr: ``dsh worker: ...``, no colour codes.

The Temporal core's own warnings (here: its polls retried once the server went away) used
to reach the terminal raw — colour-coded, on stdout — beside the worker's own lines; they
are the worker's log lines like every other warning. The worker runs on a terminal (a pty),
where the core colours its output.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from dsh.temporal.dev import dev_server_argv
from tests.patience import patience
from tests.temporal.conftest import _wait_ready, dsh_env, free_port


class Terminal:
    """A pty the worker writes both its streams to, drained into :attr:`text`."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self.chunks: list[bytes] = []
        self.reader = threading.Thread(target=self._drain, daemon=True)

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: every writer closed its end
                return
            if not chunk:
                return
            self.chunks.append(chunk)

    @property
    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")

    def wait_for(self, text: str, proc: subprocess.Popen[bytes], within: float = 60.0) -> None:
        deadline = time.monotonic() + patience(within)
        while text not in self.text:
            assert proc.poll() is None, f"the worker exited before writing {text!r}: {self.text}"
            assert time.monotonic() < deadline, f"no {text!r} in {self.text}"
            time.sleep(0.05)


def test_worker_logs_are_plain_lines(tmp_path: Path) -> None:
    port = free_port()
    quiet = subprocess.DEVNULL
    server = subprocess.Popen(dev_server_argv(port=port), stdout=quiet, stderr=quiet)
    argv = [sys.executable, "-m", "dsh.cli", "worker", "--temporal", f"127.0.0.1:{port}"]
    argv += ["--task-queue", "logs", "--store", f"sqlite:///{tmp_path / 's.db'}"]
    env = dsh_env(tmp_path / "home", "http://127.0.0.1:9/v1")
    del env["NO_COLOR"]
    term = Terminal()
    worker: subprocess.Popen[bytes] | None = None
    try:
        _wait_ready(port, server)
        worker = subprocess.Popen(argv, env=env, stdin=quiet, stdout=term.slave, stderr=term.slave)
        os.close(term.slave)
        term.reader.start()
        term.wait_for("polling", worker)
        server.terminate()
        server.wait(patience(30))
        term.wait_for("poll_workflow_task_queue", worker)  # the core's retried poll
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(patience(60)) == 0
        term.reader.join(patience(10))
    finally:
        for proc in (worker, server):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        os.close(term.master)
    logged = term.text
    assert "\x1b[" not in logged, logged
    lines = logged.splitlines()
    assert lines[0].startswith("dsh worker: polling task queue 'logs'"), lines
    assert lines[-1] == "dsh worker: stopped", lines
    assert any("poll_workflow_task_queue" in line for line in lines), lines
    strays = [line for line in lines if not line.startswith("dsh worker: ")]
    assert strays == [], strays
