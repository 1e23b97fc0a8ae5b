"""A ``dsh-turn`` workflow started with input that is not a turn fails at once, one line, not retried."""

from __future__ import annotations

import asyncio
import os

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError

from dsh.loop import AgentConfig
from dsh.model.scripted import ScriptedModel
from dsh.store import MemoryEventStore
from dsh.temporal import Worker, connect
from dsh.temporal.workflow import WORKFLOW_NAME


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"nope": 1}, "dsh-turn input is not a turn"),
        ("just text", "dsh-turn input is not a turn"),
        ({"session_id": "", "from_seq": 0, "prompt": None}, "dsh-turn input names no session"),
    ],
)
async def test_a_turn_workflow_with_bad_input_fails_for_good_with_one_line(
    temporal_address: str, given: object, said: str
) -> None:
    task_queue = f"bad-input-{os.urandom(4).hex()}"
    store = MemoryEventStore()
    worker = Worker(
        temporal_address,
        task_queue=task_queue,
        store=store,
        model=ScriptedModel([]),
        config=AgentConfig(model="scripted"),
    )
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:
        client = await connect(temporal_address)
        handle = await client.start_workflow(
            WORKFLOW_NAME, given, id=f"bad-{task_queue}", task_queue=task_queue
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await asyncio.wait_for(handle.result(), 30)  # a hang guard: today it is retried forever
    finally:
        stop.set()
        await running
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.non_retryable
    assert cause.message.startswith(said) and "\n" not in cause.message
    tasks = [
        e
        for e in (await handle.fetch_history()).events
        if e.HasField("workflow_task_failed_event_attributes")
    ]
    assert tasks == []  # failed on its first task, not retried
