"""Background subagents at exit: ``dsh run``, ``dsh chat`` and ``dsh acp`` wait for them up
to ``--background-wait`` (``$DSH_BACKGROUND_WAIT``), then stop them (``turn/end {aborted,
reason: disposed}`` in the child's log) before the store closes: no traceback, no child left
``running``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh.store.sqlite import SqliteEventStore
from dsh.testing.server import RUNTIME_CONTEXT, OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Faults, Response, WireToolCall, stream_reply
from tests.acp.wire import RawServer

from .test_run_cli import _env

CHILD_TASK = "CHILD TASK: count the files"


def _first_prompt(req: RecordedRequest) -> str:
    for message in req.messages:
        text = str(message.get("content") or "")
        if message.get("role") == "user" and not text.startswith(RUNTIME_CONTEXT):
            return text
    return ""


def scripted(child_stalls: bool) -> Any:
    """The root delegates CHILD_TASK in the background and answers; the child answers slowly
    (``child_stalls``: never); the root's turn woken by the child's notice answers ``noted``."""

    def handler(req: RecordedRequest) -> Response:
        if _first_prompt(req) == CHILD_TASK:
            if child_stalls:
                return stream_reply(text=["still ", "working"], faults=Faults(stall_after=1))
            return stream_reply(text=["child ", "done"], delay=0.3)
        if "finished and will do no further work" in req.text():
            return stream_reply(text="noted")
        if any(m.get("role") == "tool" for m in req.messages):
            return stream_reply(text="root done")
        args = json.dumps({"description": "counter", "prompt": CHILD_TASK, "run_in_background": True})
        return stream_reply(tool_calls=[WireToolCall.split("call_bg", "subagent", args, 2)])

    return handler


def sessions(db: Path) -> dict[str, Any]:
    """Every stored session (root and child), loaded straight from the SQLite file."""

    async def load() -> dict[str, Any]:
        store = SqliteEventStore(db)
        try:
            return {s.header.id: await store.load(s.header.id) for s in await store.list_sessions()}
        finally:
            await store.close()

    return asyncio.run(load())


def the_child(db: Path) -> Any:
    (child,) = [s for s in sessions(db).values() if s.header.parent_session]
    return child


def dsh_cli(
    tmp_path: Path, *args: str, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        env=_env(tmp_path, **env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


def test_run_waits_for_a_background_child_and_its_notice(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=scripted(child_stalls=False)) as server:
        out = dsh_cli(tmp_path, "run", "go", "--base-url", server.base_url)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "StoreClosedError" not in out.stderr, out.stderr
    assert out.stdout in ("root done\n", "noted\n")  # the notice lands where the child's speed puts it
    child = the_child(tmp_path / "s.db")
    assert child.events[-1].type == "turn/end"
    assert child.events[-1].data["reason"] == {"kind": "completed"}
    assert [_first_prompt(r) for r in server.requests].count(CHILD_TASK) == 1
    (root,) = [s for s in sessions(tmp_path / "s.db").values() if not s.header.parent_session]
    ends = [e.data["reason"] for e in root.events if e.type == "turn/end"]
    assert ends and all(reason == {"kind": "completed"} for reason in ends)
    assert "finished and will do no further work" in server.requests[-1].text(), (
        "the root saw the child's notice before exit"
    )


def test_run_stops_a_child_still_running_after_the_bound(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=scripted(child_stalls=True)) as server:
        out = dsh_cli(tmp_path, "run", "go", "--base-url", server.base_url, "--background-wait", "2")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "StoreClosedError" not in out.stderr, out.stderr
    assert "stopped 1 background subagent" in out.stderr, out.stderr
    child = the_child(tmp_path / "s.db")
    end = child.events[-1]
    assert end.type == "turn/end", [e.type for e in child.events]
    assert end.data["reason"] == {"kind": "aborted", "reason": {"kind": "disposed"}}
    listed = dsh_cli(tmp_path, "sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    statuses = {row["id"]: row["status"] for row in json.loads(listed.stdout)}
    assert statuses[child.header.id] != "running"


def test_the_bound_comes_from_the_environment_too(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=scripted(child_stalls=True)) as server:
        out = dsh_cli(tmp_path, "run", "go", "--base-url", server.base_url, DSH_BACKGROUND_WAIT="0")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    assert the_child(tmp_path / "s.db").events[-1].data["reason"]["reason"] == {"kind": "disposed"}


def test_a_bad_bound_is_one_line(tmp_path: Path) -> None:
    out = dsh_cli(tmp_path, "run", "go", "--base-url", "http://127.0.0.1:9", DSH_BACKGROUND_WAIT="soon")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "DSH_BACKGROUND_WAIT" in out.stderr or "--background-wait" in out.stderr


def test_chat_stops_a_background_child_at_end_of_input(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=scripted(child_stalls=True)) as server:
        out = dsh_cli(tmp_path, "chat", "--base-url", server.base_url, "--background-wait", "2", stdin="go\n")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "StoreClosedError" not in out.stderr, out.stderr
    end = the_child(tmp_path / "s.db").events[-1]
    assert end.type == "turn/end" and end.data["reason"]["reason"] == {"kind": "disposed"}


@pytest.mark.parametrize("child_stalls", [False, True])
async def test_acp_waits_for_background_children_at_stdin_eof(tmp_path: Path, child_stalls: bool) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    db = tmp_path / "s.db"
    async with OpenAICompatServer(handler=scripted(child_stalls)) as provider:
        args = [
            "--base-url",
            provider.base_url,
            "--store",
            f"sqlite:{db}",
            "--background-wait",
            "2" if child_stalls else "20",
        ]
        args += ["--log-file", str(tmp_path / "acp.log")]
        async with RawServer(args, stderr_path=tmp_path / "stderr") as server:
            await server.call("initialize", {"protocolVersion": 1})
            reply = await server.call("session/new", {"cwd": str(cwd), "mcpServers": []})
            prompt = {"sessionId": reply["result"]["sessionId"], "prompt": [{"type": "text", "text": "go"}]}
            assert (await server.call("session/prompt", prompt))["result"] == {"stopReason": "end_turn"}
            assert await server.close() == 0
    assert "Traceback" not in (tmp_path / "stderr").read_text()
    child = await asyncio.to_thread(the_child, db)
    types = [e.type for e in child.events]
    assert types.count("turn/start") == types.count("turn/end"), "no turn left open"
    if child_stalls:  # a loaded machine may stop the child before its turn started
        ends = [e for e in child.events if e.type == "turn/end"]
        assert all(e.data["reason"] == {"kind": "aborted", "reason": {"kind": "disposed"}} for e in ends)
    else:
        assert child.events[-1].type == "turn/end", types
        assert child.events[-1].data["reason"] == {"kind": "completed"}


def test_ctrl_c_during_the_wait_stops_the_children_at_once(tmp_path: Path) -> None:
    import signal

    with OpenAICompatServer(handler=scripted(child_stalls=True)) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dsh.cli", "run", "go", "--base-url", server.base_url],
            env=_env(tmp_path),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:  # the default bound (30 s) is far away
            seen.append(line)
            if "Ctrl-C stops them now" in line:
                proc.send_signal(signal.SIGINT)
                break
        rest = proc.communicate(timeout=20)
    assert proc.returncode == 0, "".join(seen) + rest[1]
    assert rest[0] == "root done\n"
    assert "Traceback" not in rest[1] and "stopped 1 background subagent" in rest[1], rest[1]
    end = the_child(tmp_path / "s.db").events[-1]
    assert end.type == "turn/end" and end.data["reason"]["reason"] == {"kind": "disposed"}
