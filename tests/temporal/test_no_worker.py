"""``dsh run --temporal`` on a queue nobody polls: one line saying so, and Ctrl-C ends it all."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from temporalio.client import WorkflowExecutionStatus

from dsh.store.url import open_store
from dsh.temporal import connect, workflow_id
from tests.temporal.conftest import dsh_env

pytestmark = [pytest.mark.postgres]


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.put(line)


async def test_no_worker_is_said_at_once_and_ctrl_c_ends_the_run_and_its_workflow(
    temporal_address: str, pg_store: str, tmp_path: Path
) -> None:
    task_queue = f"nobody-{os.urandom(4).hex()}"
    argv = [sys.executable, "-m", "dsh.cli", "run", "hi", "--cwd", str(tmp_path)]
    argv += ["--temporal", temporal_address, "--task-queue", task_queue, "--store", pg_store]
    env = dsh_env(tmp_path, "http://127.0.0.1:9")
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    said: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=_lines, args=(proc.stderr, said), daemon=True)
    reader.start()
    try:
        line = said.get(timeout=10)  # a hang guard: the line comes as soon as the queue is described
        assert line.startswith(f"dsh: no worker polls task queue {task_queue!r}"), line
        assert f"dsh worker --temporal {temporal_address} --task-queue {task_queue}" in line
        proc.send_signal(signal.SIGINT)
        assert proc.wait(5) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        reader.join(5)
        assert proc.stderr is not None
        proc.stderr.close()
    rest = [said.get_nowait() for _ in range(said.qsize())]

    store = open_store(pg_store)
    try:
        (session,) = [s.header for s in await store.list_sessions() if s.header.cwd == str(tmp_path)]
    finally:
        await store.close()
    assert rest == [f"dsh: interrupted; workflow {workflow_id(session.id)} terminated\n"]  # no traceback
    client = await connect(temporal_address)
    described = await client.get_workflow_handle(workflow_id(session.id)).describe()
    assert described.status != WorkflowExecutionStatus.RUNNING
