"""The step budget on Temporal: a turn whose steps all continue ends ``error MAX_STEPS`` with
the loop's own message (``dsh.loop.plan``, the one home of the decision)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dsh.loop import AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.store import EventStore
from dsh.temporal import Worker, connect, submit_turn
from tests.temporal.conftest import Model
from tests.temporal.helpers import bash_call, by_count

pytestmark = [pytest.mark.postgres]


async def test_a_turn_past_its_step_budget_ends_max_steps(
    temporal_address: str, model: Model, store: EventStore, tmp_path: Path
) -> None:
    model.script = by_count(lambda: bash_call("c1", "true"), lambda: bash_call("c2", "true"))
    queue = f"step-limit-{tmp_path.name}"
    worker_model = OpenAICompatModel(base_url=model.server.base_url, api_key="test", default_model="scripted")
    worker = Worker(
        temporal_address,
        task_queue=queue,
        store=store,
        model=worker_model,
        config=AgentConfig(model="scripted", max_steps=2),
    )
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:
        client = await connect(temporal_address)
        submitted = await submit_turn(client, "loop", task_queue=queue, store=store, cwd=tmp_path)
        result = await asyncio.wait_for(submitted.result(store), 60)
    finally:
        stop.set()
        await running
        await worker_model.aclose()
    assert result.reason["kind"] == "error"
    assert result.reason["failure"]["code"] == "MAX_STEPS"
    assert result.reason["failure"]["message"] == "turn 1 exceeded 2 steps"
