"""Turns on Temporal through the CLI and the library: answers, busy sessions, refusals, signals, replay."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.worker import Replayer

from dsh.errors import SessionRunningError
from dsh.events.vocabulary import APPROVAL_ASKED, APPROVAL_DECIDED, SUBAGENT_DESCRIPTOR
from dsh.loop import AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.store import EventStore
from dsh.temporal import TurnWorkflow, Worker, connect, submit_turn, workflow_id
from dsh.temporal.children import child_id
from dsh.testing import RecordedRequest, Response, WireToolCall, stream_reply
from dsh.tools.sandbox import SandboxPolicy
from tests.patience import patience
from tests.temporal.conftest import Model, Workers, free_port
from tests.temporal.helpers import bash_call, by_count, holder_pid, last_end, results, slow_reply

pytestmark = [pytest.mark.postgres]


def dsh(workers: Workers, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "dsh.cli", *args]
    return subprocess.run(
        argv, env=workers.env, capture_output=True, text=True, timeout=patience(60), check=False
    )


def on(workers: Workers) -> list[str]:
    return ["--temporal", workers.address, "--task-queue", workers.queue, "--store", workers.store]


async def test_dsh_run_on_temporal_prints_the_answer_and_the_session_is_listed(
    workers: Workers, model: Model, tmp_path: Path
) -> None:
    model.script = by_count(lambda: bash_call("c1", "echo hi"), lambda: stream_reply(text="the answer"))
    out = dsh(workers, "run", "say it", "--cwd", str(tmp_path), *on(workers))
    assert out.returncode == 0, out.stderr
    assert out.stdout == "the answer\n"
    listed = dsh(workers, "sessions", "list", "--store", workers.store, "--json")
    assert listed.returncode == 0, listed.stderr
    assert str(tmp_path) in listed.stdout


async def test_a_second_prompt_for_a_running_session_is_busy_and_cancel_aborts(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    model.script = by_count(slow_reply)
    client = await connect(workers.address)
    first = await submit_turn(client, "slow", task_queue=workers.queue, store=store, cwd=tmp_path)
    with pytest.raises(SessionRunningError, match=f"busy .*{workflow_id(first.session_id)}"):
        await submit_turn(client, "again", task_queue=workers.queue, store=store, session_id=first.session_id)
    await asyncio.sleep(1.0)  # the slow call is streaming
    await first.cancel()
    result = await asyncio.wait_for(first.result(store), patience(30))
    assert result.reason == {"kind": "aborted", "reason": {"kind": "user"}}


async def test_a_cancel_that_comes_before_the_turn_opens_still_ends_it_aborted(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    """The signal can be in the workflow's first task, before ``begin_turn`` ran: the turn
    still opens and ends ``aborted`` (the run does not fail with the activity's cancellation)."""
    model.script = by_count(slow_reply)
    client = await connect(workers.address)
    first = await submit_turn(client, "slow", task_queue=workers.queue, store=store, cwd=tmp_path)
    await first.cancel()
    result = await asyncio.wait_for(first.result(store), patience(30))
    assert result.reason == {"kind": "aborted", "reason": {"kind": "user"}}
    assert last_end(list((await store.load(first.session_id)).events)) == "aborted"


async def test_temporals_own_cancellation_stops_the_running_call_and_ends_the_turn_aborted(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    """``temporal workflow cancel`` (the client's ``cancel``), not dsh's signal: the stalled
    model call is stopped, so the closing activity gets the session and the turn ends."""
    model.script = by_count(slow_reply)
    client = await connect(workers.address)
    first = await submit_turn(client, "slow", task_queue=workers.queue, store=store, cwd=tmp_path)
    await holder_pid(store, first.session_id)  # the model step holds the session
    await first.handle.cancel()
    result = await asyncio.wait_for(first.result(store), patience(30))
    assert result.reason == {"kind": "aborted", "reason": {"kind": "user"}}


async def test_a_session_another_process_holds_is_busy(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    model.script = by_count(lambda: stream_reply(text="one"))
    client = await connect(workers.address)
    done = await submit_turn(client, "one", task_queue=workers.queue, store=store, cwd=tmp_path)
    await done.result(store)
    lease = await store.lease(done.session_id)  # this process now runs the session, as dsh run would
    try:
        out = dsh(workers, "run", "two", "--resume", done.session_id, *on(workers))
    finally:
        await lease.release()
    assert out.returncode == 1
    assert out.stderr.strip().startswith(f"dsh: error: session {done.session_id} is busy (held by pid")
    assert len(out.stderr.strip().splitlines()) == 1


def test_no_server_is_one_line_and_exit_2(workers: Workers, tmp_path: Path) -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    for args in (["run", "hi", "--temporal", nowhere], ["worker", "--temporal", nowhere]):
        out = dsh(workers, *args, "--store", f"sqlite:{tmp_path / 's.db'}")
        assert out.returncode == 2, out.stderr
        assert (
            out.stderr
            == f"dsh: error: no Temporal server reachable at {nowhere} (start one: dsh temporal dev)\n"
        )
    assert not (tmp_path / "s.db").exists()  # nothing was stored
    theirs = dsh(workers, "run", "hi", "--model", "m", *on(workers))
    assert theirs.returncode == 2
    assert theirs.stderr.startswith("dsh: error: --temporal runs the turn on the workers: --model")


def test_a_worker_on_a_store_of_its_own_is_refused_on_a_postgres_queue(
    workers: Workers, tmp_path: Path
) -> None:
    out = dsh(
        workers,
        "worker",
        "--temporal",
        workers.address,
        "--task-queue",
        workers.queue,
        "--store",
        f"sqlite:{tmp_path / 'own.db'}",
    )
    assert out.returncode == 2
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"dsh: error: task queue {workers.queue!r} already has workers on a shared PostgreSQL"
    )
    assert "Traceback" not in out.stderr


def _spawning(request: RecordedRequest) -> Response:
    asked = request.text()
    if "child task" in asked and "child answer" not in asked:
        return stream_reply(text="child answer")
    if "child answer" in asked:
        return stream_reply(text="parent done")
    arguments = '{"description": "helper", "prompt": "the child task"}'
    return stream_reply(tool_calls=[WireToolCall.split("s1", "subagent", arguments, 2)])


async def test_a_spawned_subagent_runs_as_a_child_workflow_and_the_history_replays(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    model.script = _spawning
    client = await connect(workers.address)
    submitted = await submit_turn(client, "delegate", task_queue=workers.queue, store=store, cwd=tmp_path)
    result = await asyncio.wait_for(submitted.result(store), patience(60))
    assert result.text == "parent done"
    events = (await store.load(submitted.session_id)).events
    (settled,) = results(events)
    assert settled.data["message"]["content"][0]["content"] == [{"type": "text", "text": "child answer"}]
    child = child_id(submitted.session_id, "s1")
    child_events = (await store.load(child)).events
    assert last_end(child_events) == "completed"
    assert any(e.type == SUBAGENT_DESCRIPTOR for e in child_events)
    child_run = await client.get_workflow_handle(workflow_id(child)).describe()
    assert child_run.parent_id == workflow_id(submitted.session_id)

    replayer = Replayer(workflows=[TurnWorkflow])
    for handle in (submitted.handle, client.get_workflow_handle(workflow_id(child))):
        await replayer.replay_workflow(await handle.fetch_history())  # raises on nondeterminism


def test_sigterm_stops_a_worker_gracefully(workers: Workers) -> None:
    workers.start(1)
    proc = workers.procs[-1]
    proc.terminate()
    assert proc.wait(30) == 0, workers.log(proc)
    assert workers.log(proc).strip().splitlines()[-1] == "dsh worker: stopped"


async def test_an_approval_request_is_answered_by_the_approve_signal(
    temporal_address: str, pg_store: str, model: Model, store: EventStore, tmp_path: Path
) -> None:
    arguments = (
        '{"command": "echo ok > approved.txt", "description": "write", '
        '"sandbox_permissions": "danger-full-access", "justification": "it must write a file"}'
    )
    model.script = by_count(
        lambda: stream_reply(tool_calls=[WireToolCall.split("a1", "bash", arguments, 2)]),
        lambda: stream_reply(text="written"),
    )
    queue = f"approvals-{tmp_path.name}"
    worker_model = OpenAICompatModel(base_url=model.server.base_url, api_key="test", default_model="scripted")
    config = AgentConfig(model="scripted", sandbox=SandboxPolicy(mode="read-only"))
    worker = Worker(temporal_address, task_queue=queue, store=store, model=worker_model, config=config)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:
        client = await connect(temporal_address)
        submitted = await submit_turn(client, "write it", task_queue=queue, store=store, cwd=tmp_path)
        for _ in range(200):  # the request is logged durably, then waits for the signal
            if any(e.type == APPROVAL_ASKED for e in (await store.load(submitted.session_id)).events):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the approval request never reached the store")
        assert not (tmp_path / "approved.txt").exists()
        await submitted.approve("a1")
        result = await asyncio.wait_for(submitted.result(store), patience(60))
    finally:
        stop.set()
        await running
        await worker_model.aclose()
    assert result.text == "written"
    assert (tmp_path / "approved.txt").read_text() == "ok\n"
    decided = [e for e in (await store.load(submitted.session_id)).events if e.type == APPROVAL_DECIDED]
    assert [e.data["outcome"] for e in decided] == ["allowed-once"]
