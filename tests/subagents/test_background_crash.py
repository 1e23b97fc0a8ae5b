"""A parent process killed (SIGKILL) while its background children run, then resumed elsewhere.

The children are sessions of their own in the store: after the kill their logs hold an open
turn and nobody holds their lease, so they read as ``interrupted``; ``dsh sessions tree``
says so; a resumed parent lists them (``ready``: only in storage) and a ``send_message``
resumes one from its log, which then settles with a notice to the resumed parent.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.store.sqlite import SqliteEventStore
from dsh.subagents import SubagentTool, standard_tools
from dsh.subagents.lifecycle import stored_children
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, Stall
from tests.subagents.test_background_http import call, first_user, notices, reply

PARENT = """
import asyncio, sys
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.store.sqlite import SqliteEventStore
from dsh.subagents import standard_tools

async def main() -> None:
    store = SqliteEventStore(sys.argv[2])
    model = OpenAICompatModel(base_url=sys.argv[1], api_key="sk-test")
    config = AgentConfig(model="m", retry=NO_DELAY)
    parent = await Agent.create(store, model=model, tools=standard_tools(), config=config, cwd=sys.argv[3])
    result = await parent.run_turn("start")
    print("READY", parent.id, result.reason["kind"], flush=True)
    await asyncio.Event().wait()  # the children keep running until the process is killed

asyncio.run(main())
"""


def _handler(children_asked: list[str]) -> object:
    def handler(req: RecordedRequest) -> Response:
        task = first_user(req)
        last = str(req.messages[-1].get("content"))
        if task in ("TASK_K1", "TASK_K2"):
            if last == task:
                children_asked.append(task)
                return Response(steps=(Stall(None),))  # busy until the process dies
            return reply(f"{task}_RESUMED")
        if req.messages[-1].get("role") == "tool":
            if last.startswith("started subagent"):
                return reply("STARTED")
            if "[ready]" in last:
                first = last.split()[0]
                return call(("s1", "send_message", {"subagent_id": first, "message": "carry on"}))
            return reply("SENT")
        if last == "start":
            return call(
                ("k1", "subagent", {"description": "k1", "prompt": "TASK_K1", "run_in_background": True}),
                ("k2", "subagent", {"description": "k2", "prompt": "TASK_K2", "run_in_background": True}),
            )
        if last == "after the crash":
            return call(("l1", "list_agents", {}))
        return reply("NOTED")

    return handler


async def _until(condition: object, what: str) -> None:
    for _ in range(1000):
        if condition():  # type: ignore[operator]
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def test_parent_killed_while_children_run_then_resumed(tmp_path: Path) -> None:
    asked: list[str] = []
    db = tmp_path / "s.db"
    with OpenAICompatServer(handler=_handler(asked)) as server:  # type: ignore[arg-type]
        with subprocess.Popen(
            [sys.executable, "-c", PARENT, server.base_url, str(db), str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        ) as proc:
            try:
                assert proc.stdout is not None
                line = await asyncio.to_thread(proc.stdout.readline)
                ready, parent_id, kind = line.split()
                assert ready == "READY" and kind == "completed", line
                await _until(lambda: len(asked) == 2 and server.in_flight == 2, "both children to ask")
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL

        store = SqliteEventStore(db)
        found = await stored_children(store, parent_id)
        assert [(c.label, c.state) for c in found] == [("k1", "interrupted"), ("k2", "interrupted")]

        tree = subprocess.run(
            [
                sys.executable,
                "-m",
                "dsh.cli",
                "sessions",
                "tree",
                parent_id,
                "--store",
                f"sqlite:{db}",
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert tree.returncode == 0, tree.stderr
        nodes = json.loads(tree.stdout)["children"]
        assert [(n["kind"], n["state"]) for n in nodes] == [("spawn", "interrupted")] * 2

        model = OpenAICompatModel(base_url=server.base_url, api_key="sk-test")
        tools = standard_tools()
        config = AgentConfig(model="m", retry=NO_DELAY)
        parent = await Agent.resume(store, parent_id, model=model, tools=tools, config=config)
        assert (await parent.run_turn("after the crash")).ok
        tool = tools.get("subagent")
        assert isinstance(tool, SubagentTool)
        assert await tool.children.settle(10.0)
        listed = next(
            e.data["message"]["content"][0]["content"][0]["text"]
            for e in parent.session.events
            if e.type == "tool/result" and e.data["message"]["source"]["callId"] == "l1"
        )
        k1, k2 = (c.id for c in found)
        assert listed == f"{k1} [ready] \u2014 k1\n{k2} [ready] \u2014 k2"
        done = f"Background subagent {k1} finished and will do no further work unless you send it more."
        assert notices(parent) == [[done, "Its closing message:", "TASK_K1_RESUMED"]]
        child = await store.load(k1)
        ends = [e.data["reason"]["kind"] for e in child.events if e.type == "turn/end"]
        assert ends == ["interrupted", "completed"]  # the crashed turn closed on resume, then the message
        assert [c.state for c in await stored_children(store, parent_id)] == ["finished", "interrupted"]
        await tool.children.aclose()
        await parent.aclose()
        await model.aclose()
        await store.close()
