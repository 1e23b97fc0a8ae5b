"""Background bash jobs over real HTTP: job_output / job_kill / job_list, completion notices, close."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.store.memory import MemoryEventStore
from dsh.store.sqlite import SqliteEventStore
from dsh.testing.server import Handler, OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply
from dsh.tools.sandbox import SandboxPolicy
from tests.invariants import check_log_invariants
from tests.patience import patience, until, until_sync
from tests.procs import processes_with


def call(call_id: str, name: str, arguments: dict[str, Any]) -> Response:
    return stream_reply(tool_calls=[WireToolCall.split(call_id, name, json.dumps(arguments), 2)])


def background(call_id: str, command: str) -> Response:
    args = {"command": command, "description": "background test", "run_in_background": True}
    return call(call_id, "bash", args)


def tool_texts(agent: Agent) -> dict[str, str]:
    out = {}
    for e in agent.session.events:
        if e.type == "tool/result":
            block = e.data["message"]["content"][0]
            out[block["toolCallId"]] = block["content"][0]["text"]
    return out


def job_notices(agent: Agent) -> list[tuple[int, int, str]]:
    """(turn, step, text) of every job notice the model was shown."""
    out: list[tuple[int, int, str]] = []
    turn = step = 0
    for e in agent.session.events:
        if e.type == "step/start":
            turn, step = e.data["turn"], e.data["step"]
        if e.type == "user/message" and e.data["source"].get("plugin") == "tool-jobs":
            out.append((turn, step, e.data["content"][0]["text"]))
    return out


def notice_text(job_id: str, label: str, status: str) -> str:
    head = f"background job {job_id} (bash: {label}) finished [status: {status}]."
    return head + " Read its output with job_output."


async def run_agent(
    tmp_path: Path,
    handler: Handler,
    prompts: list[str],
    sandbox: SandboxPolicy | None = None,
    **settings: Any,
) -> Agent:
    """An agent over real HTTP, its turns for ``prompts`` run (left open for more);
    ``settings`` go to its ``AgentConfig``."""
    store = MemoryEventStore()
    server = OpenAICompatServer(handler=handler)
    await server.start()
    model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test")
    config = AgentConfig(model="m", retry=NO_DELAY, sandbox=sandbox, **settings)
    agent = await Agent.create(store, model=model, config=config, cwd=tmp_path)
    agent.extras["server"] = server
    for prompt in prompts:
        result = await agent.run_turn(prompt)
        assert result.ok, result.reason
    return agent


async def close(agent: Agent) -> None:
    await agent.aclose()
    await agent.model.aclose()
    await agent.extras["server"].close()
    check_log_invariants(agent.session.events)


def last_text(req: RecordedRequest) -> str:
    return str(req.messages[-1].get("content"))


async def test_job_output_waits_and_the_notice_arrives_at_the_next_step(tmp_path: Path) -> None:
    command = "sleep 0.3; echo hi; echo oops >&2"

    steps = [
        background("c1", command),
        call("c2", "job_output", {"job_id": "bash-1", "wait": True}),
        call("c3", "job_output", {"job_id": "bash-1"}),
        stream_reply(text="DONE"),
    ]

    handler = in_order(steps)

    agent = await run_agent(tmp_path, handler, ["go"])
    texts = tool_texts(agent)
    assert texts["c1"] == "started background job bash-1"
    assert texts["c2"] == "hi\n[stderr]\noops\n[status: completed, exit code: 0]"
    assert texts["c3"] == "(no new output)\n[status: completed, exit code: 0]"  # only what is new
    # The job settled while the turn ran: the notice joined the step after job_output (step 3).
    assert job_notices(agent) == [(1, 3, notice_text("bash-1", command, "completed, exit code: 0"))]
    spliced = [e.data for e in agent.session.events if e.type == "agent/inbox/spliced"]
    assert spliced[0]["target"] == "next-step"
    assert spliced[0]["inserted"][0]["source"] == {
        "kind": "plugin",
        "plugin": "tool-jobs",
        "form": "notice",
        "summary": f"bash {command} [status: completed, exit code: 0]",
    }
    await close(agent)


async def test_job_kill_stops_a_running_job(tmp_path: Path) -> None:
    steps = [
        background("c1", "echo started; touch printed; sleep 30"),
        call("c2", "job_kill", {"job_id": "bash-1", "reason": "not needed"}),
        call("c3", "job_output", {"job_id": "bash-1", "wait": True, "timeout_ms": 60000}),
        call("c4", "job_kill", {"job_id": "bash-1"}),
        call("c5", "job_list", {}),
        stream_reply(text="DONE"),
    ]

    def handler(req: RecordedRequest) -> Response:
        if len(tool_texts_seen(req)) == 1:  # let the job print before it is killed
            until_sync(lambda: (tmp_path / "printed").exists(), "the job printed")
        return steps[len(tool_texts_seen(req))]

    agent = await run_agent(tmp_path, handler, ["go"])
    texts = tool_texts(agent)
    assert texts["c2"] == "requested cancellation of job bash-1"
    assert texts["c3"] == "started\n[status: killed, signal: SIGTERM]"
    assert texts["c4"] == "job bash-1 had already finished [status: killed, signal: SIGTERM]"
    assert texts["c5"] == "bash-1 [bash] killed \u2014 echo started; touch printed; sleep 30"
    await close(agent)


async def test_jobs_past_the_limit_are_refused_until_one_finishes(tmp_path: Path) -> None:
    steps = [
        background("c1", "sleep 30"),
        background("c2", "sleep 30"),
        background("c3", "sleep 30"),
        call("c4", "job_kill", {"job_id": "bash-1"}),
        call("c5", "job_output", {"job_id": "bash-1", "wait": True, "timeout_ms": 60000}),
        background("c6", "sleep 30"),
        stream_reply(text="DONE"),
    ]

    handler = in_order(steps)

    agent = await run_agent(tmp_path, handler, ["go"], max_jobs=2)
    texts = tool_texts(agent)
    assert texts["c3"] == (
        "Error: background job limit reached for this owner (limit: 2); use job_kill to stop an "
        "unneeded job, wait for it to finish, then retry"
    )
    assert texts["c5"].endswith("[status: killed, signal: SIGTERM]")
    assert texts["c6"] == "started background job bash-3"  # the refused call took no id
    results = [e.data["message"]["content"][0] for e in agent.session.events if e.type == "tool/result"]
    assert [r["isError"] for r in results] == [False, False, True, False, False, False]
    await close(agent)


def in_order(steps: list[Response]) -> Handler:
    """Answers each request with the next of ``steps``, counted by the tool results it carries."""
    return lambda req: steps[len(tool_texts_seen(req))]


def tool_texts_seen(req: RecordedRequest) -> list[str]:
    return [str(m.get("tool_call_id")) for m in req.messages if m.get("role") == "tool"]


async def test_unknown_and_blank_job_ids_and_an_empty_list(tmp_path: Path) -> None:
    steps = [
        call("c1", "job_list", {}),
        call("c2", "job_output", {"job_id": "bash-9"}),
        call("c3", "job_kill", {"job_id": " "}),
        call("c4", "job_output", {"job_id": ""}),
        stream_reply(text="DONE"),
    ]

    handler = in_order(steps)

    agent = await run_agent(tmp_path, handler, ["go"])
    texts = tool_texts(agent)
    assert texts == {
        "c1": "(no background jobs)",
        "c2": "Error: unknown job bash-9",
        "c3": 'Error: invalid job_id: expected a non-empty string, got " "',
        "c4": 'Error: invalid job_id: expected a non-empty string, got ""',
    }
    await close(agent)


async def test_an_idle_agent_is_woken_at_most_three_times_between_user_messages(tmp_path: Path) -> None:
    """Four jobs, each ending only when the test lets it (its go-N file), one at a time once
    the agent is idle again: three wake it, the fourth waits for the next user turn. (They
    slept 0.2-2.3 s once; on a loaded machine the first ended while turn 1 still ran.)"""
    commands = [f"until [ -e go-{i} ]; do sleep 0.05; done" for i in range(4)]

    def handler(req: RecordedRequest) -> Response:
        text = last_text(req)
        if text == "go":
            return stream_reply(
                tool_calls=[
                    WireToolCall.split(
                        f"c{i}",
                        "bash",
                        json.dumps({"command": command, "description": "wait", "run_in_background": True}),
                        2,
                    )
                    for i, command in enumerate(commands)
                ]
            )
        if text.startswith("background job"):
            return stream_reply(text="SEEN")
        return stream_reply(text="STARTED" if text.startswith("started") else "NEXT")

    agent = await run_agent(tmp_path, handler, ["go"])
    try:  # closed even when red: a leaked client's socket would fail a later test in this worker
        for i in range(len(commands)):
            (tmp_path / f"go-{i}").touch()
            job = agent.jobs.table.get(f"bash-{i + 1}")
            await until(lambda: job is not None and job.terminal, f"bash-{i + 1} finished")  # noqa: B023
            await agent.until_idle()
        notices = job_notices(agent)
        # Three wakes: turns 2-4 each opened by one notice; the fourth waits for the next user turn.
        assert [(turn, step) for turn, step, _ in notices] == [(2, 1), (3, 1), (4, 1)]
        assert len([e for e in agent.session.events if e.type == "turn/start"]) == 4
        assert (await agent.run_turn("more")).ok
        notices = job_notices(agent)
        assert [(turn, step) for turn, step, _ in notices[3:]] == [(5, 1)]
        assert notices[3][2] == notice_text("bash-4", commands[3], "completed, exit code: 0")
    finally:
        await close(agent)


async def test_a_job_is_killed_when_its_agent_closes(tmp_path: Path) -> None:
    marker = f"{random.randint(100, 999)}.{random.randint(1000, 9999)}"
    command = f"sleep {marker} & sleep {marker}; wait"

    def handler(req: RecordedRequest) -> Response:
        return background("c1", command) if last_text(req) == "go" else stream_reply(text="STARTED")

    agent = await run_agent(tmp_path, handler, ["go"])
    await until(lambda: len(processes_with(marker)) >= 3, "the job's shell and both its sleeps run")
    await close(agent)
    assert processes_with(marker) == []  # nothing of the job is left
    assert job_notices(agent) == []  # and a closed agent gets no notice


async def test_a_cancelled_turn_leaves_its_jobs_running(tmp_path: Path) -> None:
    release = asyncio.Event()
    asked = asyncio.Event()

    async def handler(req: RecordedRequest) -> Response:
        if not tool_texts_seen(req):
            return background("c1", "sleep 0.5; echo survived")
        asked.set()
        await release.wait()  # the turn is cancelled while it waits for the model
        return stream_reply(text="LATE")

    agent = await run_agent(tmp_path, handler, [])
    turn = asyncio.ensure_future(agent.run_turn("go"))
    await asyncio.wait_for(asked.wait(), patience(30))
    turn.cancel()
    await asyncio.gather(turn, return_exceptions=True)
    release.set()
    ends = [e.data["reason"]["kind"] for e in agent.session.events if e.type == "turn/end"]
    assert ends == ["aborted"]
    job = agent.jobs.table.get("bash-1")
    assert job is not None
    await asyncio.wait_for(job.done.wait(), patience(30))
    assert job.read() == "survived\n[status: completed, exit code: 0]"
    await close(agent)


async def test_a_resumed_session_never_reuses_a_job_id(tmp_path: Path) -> None:
    """Jobs end with the agent; a resumed session's next job gets the next id, and an id from
    before the resume is unknown (nothing of it is left to read)."""

    def handler(req: RecordedRequest) -> Response:
        seen = tool_texts_seen(req)
        # the turn's own prompt (a job's completion notice may be the last user message)
        prompts = [str(m.get("content")) for m in req.messages if m.get("role") == "user"]
        prompt = "again" if "again" in prompts else "first"
        if prompt == "first" and not seen:
            return background("c1", "true")
        if prompt == "again" and seen == ["c1"]:
            return background("c2", "true")
        if prompt == "again" and seen == ["c1", "c2"]:
            return call("c3", "job_output", {"job_id": "bash-1"})
        return stream_reply(text="OK")

    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=handler) as server:
        config = AgentConfig(model="m", retry=NO_DELAY)
        model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test")
        agent = await Agent.create(store, model=model, config=config, cwd=tmp_path)
        assert (await agent.run_turn("first")).ok
        await agent.aclose()
        resumed = await Agent.resume(store, agent.id, model=model, config=config)
        assert (await resumed.run_turn("again")).ok
        texts = tool_texts(resumed)
        assert texts["c1"] == texts["c2"].replace("bash-2", "bash-1") == "started background job bash-1"
        assert texts["c2"] == "started background job bash-2"
        assert texts["c3"] == "Error: unknown job bash-1"
        await resumed.aclose()
        await model.aclose()
    await store.close()


async def test_a_second_job_runs_at_once_and_a_killed_job_sends_no_notice(tmp_path: Path) -> None:
    """The original's background-job-admission: the second job is admitted and has started
    (its side effect is there for the next command), and the job ``job_kill`` stopped is
    reported — no completion notice, even once it has exited (red before: the start answered
    before the job ran, and the kill's end was announced)."""
    # the check runs while bash-1 still sleeps, so a second job queued behind it never ran; it
    # waits up to 60 s for the file (a sandboxed bash under load may take a while to get there)
    check = (
        "for i in $(seq 600); do test -e second-task-ran.txt && break; sleep 0.1; done; "
        "test ! -e second-task-ran.txt"
    )
    steps = [
        background("c1", "sleep 30"),
        background("c2", "touch second-task-ran.txt; sleep 30"),
        call("c3", "bash", {"command": check, "description": "check"}),
        call("c4", "job_kill", {"job_id": "bash-1"}),
        call("c5", "bash", {"command": "sleep 0.5", "description": "let bash-1 end"}),
        stream_reply(text="BOUNDED_BACKGROUND_TASKS"),
    ]
    agent = await run_agent(tmp_path, in_order(steps), ["go"], sandbox=SandboxPolicy(mode="workspace-write"))
    texts = tool_texts(agent)
    assert texts["c2"] == "started background job bash-2"
    assert texts["c3"] == "(no output)\n[exit code: 1]"
    assert texts["c4"] == "requested cancellation of job bash-1"
    assert agent.jobs.table.get("bash-1").terminal  # type: ignore[union-attr]
    assert job_notices(agent) == []
    await close(agent)
