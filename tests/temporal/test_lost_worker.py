"""``dsh run --temporal`` whose worker dies mid-turn says so in one line and gets the answer."""

from __future__ import annotations

import asyncio
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dsh.store import EventStore
from dsh.testing import Response, stream_reply
from tests.temporal.conftest import Model, Workers
from tests.temporal.helpers import holder_pid, slow_reply

pytestmark = [pytest.mark.postgres]


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.put(line)


async def test_a_lost_worker_is_one_line_on_the_client_and_the_turn_finishes(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    workers.ready()
    killed: list[int] = []
    asked: list[int] = []

    def script(_request: object) -> Response:
        asked.append(1)
        return stream_reply(text="all done") if killed else slow_reply()

    model.script = script
    argv = [sys.executable, "-m", "dsh.cli", "run", "hi", "--cwd", str(tmp_path)]
    argv += ["--temporal", workers.address, "--task-queue", workers.queue, "--store", workers.store]
    proc = subprocess.Popen(argv, env=workers.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=_lines, args=(proc.stderr, said), daemon=True)
    reader.start()
    try:
        sessions = []
        for _ in range(100):  # the client stores the session, then a worker's model step takes it
            sessions = [s.header.id for s in await store.list_sessions() if s.header.cwd == str(tmp_path)]
            if sessions:
                break
            await asyncio.sleep(0.1)
        (session_id,) = sessions
        while not asked:  # the model step runs (stalled): its worker holds the lease (read
            await asyncio.sleep(0.1)  # earlier, the holder may be begin_turn's, done before the kill)
        victim = await holder_pid(store, session_id)
        while victim not in workers.live():  # the client held it while storing the prompt
            await asyncio.sleep(0.1)
            victim = await holder_pid(store, session_id)
        killed.append(victim)
        workers.kill(victim)
        line = await asyncio.to_thread(said.get, timeout=30)  # a hang guard, not a timing claim
        assert line == "dsh: worker lost; the turn continues on another\n"
        await asyncio.to_thread(proc.wait, 120)  # as long as test_crash allows
        assert proc.stdout is not None
        out = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        reader.join(5)
        for stream in (proc.stdout, proc.stderr):
            assert stream is not None
            stream.close()
        workers.start(1, wait=False)  # the pool is two again for the next test
    assert proc.returncode == 0
    assert out == "all done\n"
