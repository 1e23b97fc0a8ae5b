"""Record a ``dsh-turn`` history for ``test_recorded_histories`` with the dsh on ``PYTHONPATH``.

One turn on an embedded worker over a throwaway SQLite store and a dev server of its own: a
step with two concurrency-safe calls, a step with one ``bash`` call, an answer (with
``--spawn``: a step with one ``subagent`` call — a child workflow —, an answer). Run it with
the code whose histories a newer worker must still replay, e.g. for the one-call-per-activity
path (before ``dsh-batched-calls``)::

    mkdir -p /tmp/old && git archive 00ee8b8 src | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old/src .venv/bin/python tests/temporal/histories/record.py [--spawn] OUT.json
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dsh.loop import NO_DELAY, AgentConfig
from dsh.model.scripted import Call, ScriptedModel, text_reply, tool_calls_reply
from dsh.store.url import open_store
from dsh.temporal import Worker, connect, submit_turn
from dsh.temporal.dev import dev_server_argv
from dsh.tools.sandbox import SandboxPolicy


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def record(out: Path, *, spawn: bool = False) -> None:
    port = _port()
    server = subprocess.Popen(
        dev_server_argv(port=port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(600):
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        address = f"127.0.0.1:{port}"
        work = Path(tempfile.mkdtemp())
        store = open_store(f"sqlite:{work / 'sessions.db'}")
        model = ScriptedModel(
            [
                tool_calls_reply([Call("s1", "subagent", {"description": "helper", "prompt": "the task"})]),
                text_reply("child answer"),
                text_reply("done"),
            ]
            if spawn
            else [
                tool_calls_reply(
                    [Call("r1", "glob", {"pattern": "*.txt"}), Call("r2", "glob", {"pattern": "*.md"})]
                ),
                tool_calls_reply([Call("c1", "bash", {"command": "echo one", "description": "one"})]),
                text_reply("done"),
            ]
        )
        config = AgentConfig(
            model="scripted", retry=NO_DELAY, sandbox=SandboxPolicy(mode="danger-full-access")
        )
        worker = Worker(address, task_queue="record", store=store, model=model, config=config)
        stop = asyncio.Event()
        running = asyncio.create_task(worker.run(stop))
        try:
            client = await connect(address)
            submitted = await submit_turn(client, "go", task_queue="record", store=store, cwd=work)
            await asyncio.wait_for(submitted.result(store), 60)
            out.write_text((await submitted.handle.fetch_history()).to_json())
        finally:
            stop.set()
            await running
            await store.close()
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    asyncio.run(record(Path(sys.argv[-1]), spawn="--spawn" in sys.argv[1:-1]))
