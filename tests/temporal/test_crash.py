"""Two workers, one SIGKILLed mid-model-call or mid-tool-call: the turn finishes on the other."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from dsh.store import EventStore
from dsh.temporal import connect, submit_turn
from dsh.temporal.history import payload_bytes
from dsh.testing import stream_reply
from tests.patience import patience
from tests.temporal.conftest import Model, Workers
from tests.temporal.helpers import bash_call, by_count, holder_pid, last_end, results, slow_reply

pytestmark = [pytest.mark.postgres]


async def wait_for(predicate: object, within: float = 30.0) -> None:
    deadline = time.monotonic() + patience(within)
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.1)


async def test_a_worker_killed_mid_model_call_leaves_the_turn_to_the_other(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    workers.ready()
    model.script = by_count(
        lambda: bash_call("c1", "echo ran >> count.txt"),
        slow_reply,  # the second call: its worker is killed while it streams
        lambda: stream_reply(text="all done"),
    )
    first = len(model.server.requests)
    client = await connect(workers.address)
    prompt = "do the thing. " + "x" * 40_000  # a 40 KB prompt: the history holds none of it
    submitted = await submit_turn(client, prompt, task_queue=workers.queue, store=store, cwd=tmp_path)
    await wait_for(lambda: len(model.server.requests) >= first + 2)
    victim = await holder_pid(store, submitted.session_id)
    assert victim in workers.live()
    workers.kill(victim)

    result = await asyncio.wait_for(submitted.result(store), patience(90))
    assert result.reason == {"kind": "completed"} and result.text == "all done"
    assert (tmp_path / "count.txt").read_text() == "ran\n"  # the tool before the crash ran once
    events = (await store.load(submitted.session_id)).events
    assert last_end(events) == "completed"
    assert len(results(events)) == 1
    history = await submitted.handle.fetch_history()
    assert payload_bytes(history) < 40_000
    workers.start(1, wait=False)  # the pool is two again for the next test


async def test_a_worker_killed_mid_tool_call_settles_it_unknown_never_twice(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    workers.ready()
    model.script = by_count(
        lambda: bash_call("c1", "echo started >> runs.txt; sleep 20"),
        lambda: stream_reply(text="noted"),
    )
    client = await connect(workers.address)
    submitted = await submit_turn(client, "run it", task_queue=workers.queue, store=store, cwd=tmp_path)
    runs = tmp_path / "runs.txt"
    await wait_for(runs.exists)
    workers.kill(await holder_pid(store, submitted.session_id))

    result = await asyncio.wait_for(submitted.result(store), patience(90))
    assert result.reason == {"kind": "completed"} and result.text == "noted"
    assert runs.read_text() == "started\n"  # at most once: not rerun after the crash
    (settled,) = results((await store.load(submitted.session_id)).events)
    assert settled.data["error"] == {"code": "TOOL_OUTCOME_UNKNOWN"}
    workers.start(1, wait=False)
