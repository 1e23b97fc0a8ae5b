"""Delegation on Temporal: a fork child and a background child run as child workflows."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.worker import Replayer

from dsh.events import Event
from dsh.events.descriptor import find_descriptor
from dsh.events.vocabulary import TURN_END, USER_MESSAGE
from dsh.store import EventStore
from dsh.store.url import open_store
from dsh.temporal import TurnWorkflow, connect, submit_turn, workflow_id
from dsh.temporal.children import child_id
from dsh.temporal.waking import running
from dsh.testing import Faults, RecordedRequest, Response, WireToolCall, stream_reply
from tests.temporal.conftest import Model, Workers
from tests.temporal.helpers import last_end, results

pytestmark = [pytest.mark.postgres]


@pytest.fixture
async def store(pg_store: str) -> AsyncIterator[EventStore]:
    opened = open_store(pg_store)
    yield opened
    await opened.close()


def _call(call_id: str, tool: str, arguments: str) -> Response:
    return stream_reply(tool_calls=[WireToolCall.split(call_id, tool, arguments, 2)])


def _texts(events: list[Event]) -> list[str]:
    """The text of every logged user message, in order."""
    out = []
    for event in events:
        if event.type == USER_MESSAGE:
            content = event.data.get("content")
            blocks = content if isinstance(content, list) else [{"text": content}]
            out.append("\n".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict)))
    return out


async def _until(check: Callable[[], object], within: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not await check():  # type: ignore[misc]
        assert loop.time() < deadline, "the condition never held"
        await asyncio.sleep(0.2)


async def _replays(client: Client, *session_ids: str) -> None:
    replayer = Replayer(workflows=[TurnWorkflow])
    for sid in session_ids:
        history = await client.get_workflow_handle(workflow_id(sid)).fetch_history()
        await replayer.replay_workflow(history)  # raises on nondeterminism


def _forking(request: RecordedRequest) -> Response:
    asked = request.text()
    if "the code word is PLUM" in asked and "which code word" in asked:
        if "child says PLUM" in asked:
            return stream_reply(text="parent done")
        if "delegate it" in asked and "which code word was given" not in asked:
            arguments = '{"description": "recall", "prompt": "which code word was given?"}'
            return _call("f1", "subagent_fork", arguments)
        return stream_reply(text="child says PLUM")
    return stream_reply(text="noted")


async def test_a_fork_child_inherits_the_completed_turns_and_runs_as_a_child_workflow(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    model.script = _forking
    client = await connect(workers.address)
    queue = workers.queue
    first = await submit_turn(client, "the code word is PLUM", task_queue=queue, store=store, cwd=tmp_path)
    assert (await asyncio.wait_for(first.result(store), 60)).text == "noted"
    second = await submit_turn(
        client, "which code word? delegate it", task_queue=queue, store=store, session_id=first.session_id
    )
    result = await asyncio.wait_for(second.result(store), 60)
    assert result.text == "parent done"
    (settled,) = results(list((await store.load(first.session_id)).events))
    assert settled.data["message"]["content"][0]["content"] == [{"type": "text", "text": "child says PLUM"}]

    child = await store.load(child_id(first.session_id, "f1"))
    assert child.header.parent_session == first.session_id
    assert child.inherited_event_count > 0  # the cut, persisted with the child
    inherited = _texts(child.events[: child.inherited_event_count])
    assert inherited[0] == "the code word is PLUM"  # the completed turn ...
    assert not any("which code word" in text for text in inherited)  # ... not the running one
    descriptor = find_descriptor(child.own_events)
    assert descriptor is not None and (descriptor.mode, descriptor.provider) == ("one-shot", "fork")
    assert last_end(child.own_events) == "completed"
    run = await client.get_workflow_handle(workflow_id(child.header.id)).describe()
    assert run.parent_id == workflow_id(first.session_id)
    await _replays(client, child.header.id)


def _backgrounding(request: RecordedRequest) -> Response:
    asked = request.text()
    if "Its closing message:" in asked or "background answer" in asked:
        return stream_reply(text="thanks, noted")
    if "the background task" in asked:  # the child: slow enough that its parent's turn ends first
        return stream_reply(text=["background", " answer"], faults=Faults(stall_after=1, stall_seconds=2.0))
    if "started subagent" in asked:
        return stream_reply(text="it runs")
    arguments = '{"description": "bg", "prompt": "the background task", "run_in_background": true}'
    return _call("b1", "subagent", arguments)


async def test_a_background_child_runs_on_and_its_notice_wakes_the_idle_parent(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    model.script = _backgrounding
    client = await connect(workers.address)
    submitted = await submit_turn(client, "start it", task_queue=workers.queue, store=store, cwd=tmp_path)
    result = await asyncio.wait_for(submitted.result(store), 60)
    kid = child_id(submitted.session_id, "b1")
    assert result.text == "it runs"  # the submitted turn's own answer, not a woken turn's
    (started,) = results(list((await store.load(submitted.session_id)).events))
    answer = started.data["message"]["content"][0]["content"]
    assert answer == [{"type": "text", "text": f"started subagent {kid}"}]

    async def parent_woken_and_done() -> bool:
        events = list((await store.load(submitted.session_id)).events)
        ends = [e for e in events if e.type == TURN_END]
        return len(ends) == 2 and not await running(client, submitted.session_id)

    await _until(parent_woken_and_done)
    parent = list((await store.load(submitted.session_id)).events)
    notice = _texts(parent)[-1]
    assert f"subagent {kid}" in notice and "Its closing message:" in notice and "background answer" in notice
    assert last_end(parent) == "completed"
    child = await store.load(kid)
    descriptor = find_descriptor(child.own_events)
    assert descriptor is not None and (descriptor.mode, descriptor.provider) == ("continuable", "spawn")
    assert _texts(list(child.events))[0] == "the background task"  # its task, claimed from its inbox
    assert last_end(list(child.events)) == "completed"
    run = await client.get_workflow_handle(workflow_id(kid)).describe()
    assert run.parent_id == workflow_id(submitted.session_id)
    await _replays(client, submitted.session_id, kid)
