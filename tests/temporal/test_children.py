"""Delegation on Temporal: a fork child and a background child run as child workflows."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.worker import Replayer

from dsh.events import Event
from dsh.events.descriptor import find_descriptor
from dsh.events.vocabulary import TURN_END, USER_MESSAGE
from dsh.store import EventStore
from dsh.temporal import TurnWorkflow, connect, submit_turn, workflow_id
from dsh.temporal.children import child_id
from dsh.temporal.waking import running
from dsh.testing import Faults, RecordedRequest, Response, WireToolCall, stream_reply
from tests.patience import patience
from tests.temporal.conftest import Model, Workers
from tests.temporal.helpers import last_end, results, slow_reply

pytestmark = [pytest.mark.postgres]


def _call(call_id: str, tool: str, arguments: str) -> Response:
    return stream_reply(tool_calls=[WireToolCall.split(call_id, tool, arguments, 2)])


def _texts(events: Sequence[Event]) -> list[str]:
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
    deadline = loop.time() + patience(within)
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
    assert (await asyncio.wait_for(first.result(store), patience(60))).text == "noted"
    second = await submit_turn(
        client, "which code word? delegate it", task_queue=queue, store=store, session_id=first.session_id
    )
    result = await asyncio.wait_for(second.result(store), patience(60))
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
    result = await asyncio.wait_for(submitted.result(store), patience(60))
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


KID = re.compile(r"subagent ([0-9a-f-]{36})")


def _steering(request: RecordedRequest) -> Response:
    asked = request.text()
    if "second answer" in asked:
        return stream_reply(text="all done")
    if "one more thing" in asked and "message queued" not in asked:  # the child's second turn
        return stream_reply(text="second answer")
    if "message queued" in asked:
        return stream_reply(text="sent")
    if "Its closing message:" in asked:  # the first notice: more work for the child
        kid = KID.findall(asked)[-1]
        return _call("m1", "send_message", f'{{"subagent_id": "{kid}", "message": "one more thing"}}')
    return _backgrounding(request)


async def test_send_message_gives_an_idle_background_child_a_woken_turn_whose_notice_wakes_the_parent(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    model.script = _steering
    client = await connect(workers.address)
    submitted = await submit_turn(client, "start it", task_queue=workers.queue, store=store, cwd=tmp_path)
    await asyncio.wait_for(submitted.result(store), patience(60))
    kid = child_id(submitted.session_id, "b1")

    async def all_settled() -> bool:
        events = list((await store.load(submitted.session_id)).events)
        done = [e for e in events if e.type == TURN_END]
        return (
            len(done) == 3
            and not await running(client, submitted.session_id)
            and not await running(client, kid)
        )

    await _until(all_settled, 90)
    parent = list((await store.load(submitted.session_id)).events)
    sent = [r for r in results(parent) if "message queued" in str(r.data)]
    assert len(sent) == 1
    assert "second answer" in _texts(parent)[-1]  # the second notice opened the last turn
    child = list((await store.load(kid)).events)
    assert [e.type for e in child].count(TURN_END) == 2
    relays = [e.data for e in child if e.type == USER_MESSAGE and "one more thing" in str(e.data)]
    assert len(relays) == 1 and relays[0]["source"]["kind"] == "coordinator"
    assert relays[0]["source"]["senderSessionId"] == submitted.session_id
    await _replays(client, kid)


def _interrupting(request: RecordedRequest) -> Response:
    asked = request.text()
    if "was stopped" in asked:
        return stream_reply(text="it was stopped")
    if "interrupt requested" in asked:
        return stream_reply(text="stopping it")
    if "never ends" in asked:  # the child: streams, then nothing until it is cancelled
        return slow_reply()
    if "started subagent" in asked:
        kid = KID.findall(asked)[-1]
        return _call("i1", "interrupt_agent", f'{{"agent_id": "{kid}"}}')
    arguments = '{"description": "bg", "prompt": "a task that never ends", "run_in_background": true}'
    return _call("b1", "subagent", arguments)


async def test_interrupt_agent_stops_a_background_childs_turn_on_another_workflow(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    model.script = _interrupting
    client = await connect(workers.address)
    submitted = await submit_turn(client, "start it", task_queue=workers.queue, store=store, cwd=tmp_path)
    assert (await asyncio.wait_for(submitted.result(store), patience(60))).text == "stopping it"
    kid = child_id(submitted.session_id, "b1")

    async def parent_told() -> bool:
        events = list((await store.load(submitted.session_id)).events)
        return [e.type for e in events].count(TURN_END) == 2 and not await running(
            client, submitted.session_id
        )

    await _until(parent_told, 60)
    assert last_end(list((await store.load(kid)).events)) == "aborted"
    parent = list((await store.load(submitted.session_id)).events)
    assert f"Background subagent {kid} was stopped" in _texts(parent)[-1]
    (asked, _) = results(parent)
    assert asked.data["message"]["content"][0]["content"] == [
        {"type": "text", "text": f"started subagent {kid}"}
    ]


def _reporting(request: RecordedRequest) -> Response:
    asked = request.text()
    if "Its closing message:" in asked:
        return stream_reply(text="all noted")
    if "reported:" in asked:
        return stream_reply(text="report read")
    if "report accepted" in asked:  # the child, after its report
        return stream_reply(text="child done")
    if "find it out" in asked:
        return _call("r1", "report", '{"output": "the finding is 42"}')
    if "started subagent" in asked:
        return stream_reply(text="waiting")
    arguments = '{"description": "bg", "prompt": "find it out", "run_in_background": true}'
    return _call("b1", "subagent", arguments)


async def test_a_background_childs_report_reaches_its_parent_before_its_notice(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    model.script = _reporting
    client = await connect(workers.address)
    submitted = await submit_turn(client, "start it", task_queue=workers.queue, store=store, cwd=tmp_path)
    await asyncio.wait_for(submitted.result(store), patience(60))
    sid, kid = submitted.session_id, child_id(submitted.session_id, "b1")

    async def notice_read() -> bool:
        texts = _texts(list((await store.load(sid)).events))
        return any("Its closing message:" in t for t in texts) and not await running(client, sid)

    await _until(notice_read)
    child = list((await store.load(kid)).events)
    (accepted,) = results(child)
    relay_id = str(accepted.data["message"]["content"][0]["content"][0]["text"]).rsplit(" ", 1)[-1]
    parent = list((await store.load(sid)).events)
    relays = [e.data for e in parent if e.type == USER_MESSAGE and e.data.get("id") == relay_id]
    assert len(relays) == 1 and relays[0]["source"]["kind"] == "subagent-report"
    assert "the finding is 42" in str(relays[0]["content"])
    notices = [i for i, t in enumerate(_texts(parent)) if "Its closing message:" in t]
    reports = [i for i, t in enumerate(_texts(parent)) if "reported:" in t]
    assert reports[0] < notices[0]  # the report came first, as the child sent it


async def test_a_notice_that_comes_during_the_parents_last_step_keeps_that_turn_going(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    """As in the loop: next-step work (the child's notice) keeps the running turn going with
    one more step, rather than ending it and waking a turn of its own."""
    released = threading.Event()

    async def script(request: RecordedRequest) -> Response:
        asked = request.text()
        if "Its closing message:" in asked:
            return stream_reply(text="seen in the same turn")
        if "the quick task" in asked:
            return stream_reply(text="quick answer")
        if "started subagent" in asked:  # the parent's last step: held until the notice is sent
            while not released.is_set():
                await asyncio.sleep(0.05)
            return stream_reply(text="my last word")
        arguments = '{"description": "bg", "prompt": "the quick task", "run_in_background": true}'
        return _call("b1", "subagent", arguments)

    model.script = script
    client = await connect(workers.address)
    submitted = await submit_turn(client, "start it", task_queue=workers.queue, store=store, cwd=tmp_path)
    kid = child_id(submitted.session_id, "b1")

    async def child_settled() -> bool:
        if not await store.exists(kid):
            return False
        ended = last_end(list((await store.load(kid)).events))
        return ended == "completed" and not await running(client, kid)

    try:
        await _until(child_settled)
    finally:
        released.set()
    result = await asyncio.wait_for(submitted.result(store), patience(60))
    assert result.text == "seen in the same turn"
    parent = list((await store.load(submitted.session_id)).events)
    assert [e.type for e in parent].count(TURN_END) == 1
    assert "Its closing message:" in _texts(parent)[-1]
