"""``--profile dsh-compat`` reproduces the original's recorded ACP stdout for every recording
that replays through our tools (parsed, session ids normalized, the initialize result aside)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.acp.wire import RawServer, server_args, upstream_normalize, workspace_for
from tests.conftest import UPSTREAM
from tests.patience import until

RECORDINGS = [
    "text-turn",
    "tool-call-turn",
    "fs-read",
    "fs-read-window",
    "fs-write",
    "fs-write-overwrite",
    "fs-delete-recreate",
    "bash-spill",
    "empty-response-retry",
    "handshake",
    "max-tokens-continue",
    "error-finish",
    "cancel-tool-calls",
    "subagent-spawn-in-process",
    "subagent-fork-in-process",
    "hook-cc-pretool-deny",
    "hook-cc-posttool-context",
    "hook-cc-promptsubmit-block",
    "hook-cc-stop-continue",
    "hook-cc-invalid-matcher",
    "hook-codex-pretool-block",
    "packed-chunks",
    "escalation-approved",
    "fs-escalation-approved",
    "subagent-continuable",
    "subagent-report",
    "missing-sandbox-runner",
    "agent-instructions",
    "skill-load",
    "todo-write",
    "read-image",
    "web-fetch",
]


@dataclass
class Run:
    frames: list[dict[str, Any]]
    expected: list[dict[str, Any]]
    exit_code: int
    log: str
    stderr: str
    cwd: Path
    problems: list[str]


async def _until_exists(path: Path, server: RawServer) -> None:
    await until(path.exists, f"{path} appears", gone=server.gone, every=0.01)


PERMISSION = "session/request_permission"


async def _answering_permissions(server: RawServer, pending: int, answers: list[str]) -> dict[str, Any]:
    """The response to request ``pending``, answering each ``session/request_permission`` on
    the way as the original harness does: the next of ``answers`` (its option of that kind),
    ``cancelled`` once they run out."""
    answered: set[Any] = set()
    while True:
        frame = await server.wait_for(
            lambda f: (
                (f.get("id") == pending and "method" not in f)
                or (f.get("method") == PERMISSION and f.get("id") not in answered)
            )
        )
        if frame.get("method") != PERMISSION:
            return frame
        answered.add(frame["id"])
        if answers:
            kind = answers.pop(0)
            option = next(o["optionId"] for o in frame["params"]["options"] if o["kind"] == kind)
            outcome: dict[str, Any] = {"outcome": "selected", "optionId": option}
        else:
            outcome = {"outcome": "cancelled"}
        await server.send({"jsonrpc": "2.0", "id": frame["id"], "result": {"outcome": outcome}})


def _agent_request_ids(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Frames with the agent's own request ids counted from 1, as in the original (the SDK
    counts from 0); the client's ids are kept."""
    out, seen = [], 0
    for frame in frames:
        if "method" in frame and "id" in frame:
            seen += 1
            frame = {**frame, "id": seen}
        out.append(frame)
    return out


def _said(text: str) -> object:
    def match(frame: dict[str, Any]) -> bool:
        update = frame.get("params", {}).get("update", {}) if frame.get("method") == "session/update" else {}
        return update.get("sessionUpdate") == "agent_message_chunk" and update["content"].get("text") == text

    return match


def _turns(db: sqlite3.Connection, session_id: str) -> list[tuple[str, int]]:
    rows = db.execute(
        "SELECT type, data FROM events WHERE session_id = ? AND type IN ('turn/start', 'turn/end') "
        "ORDER BY seq",
        (session_id,),
    )
    return [(kind, int(json.loads(data).get("turn", 0))) for kind, data in rows]


def _logged(path: Path, session_id: str, step: dict[str, Any]) -> bool:
    """Whether the server's store shows what a wait op waits for (the original polls its logs);
    read with plain read-only SQL, the server being the store's only writer."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        if step["op"] == "waitForSubagentTurnEnd":
            rows = db.execute(
                "SELECT id FROM sessions WHERE parent_session = ? ORDER BY created_at, id", (session_id,)
            ).fetchall()
            if len(rows) < step.get("child", 1):
                return False
            turns = _turns(db, rows[step.get("child", 1) - 1][0])
            closed = not turns or turns[-1][0] == "turn/end"
            least: int = step.get("minimumTurn", 1)
            return closed and any(k == "turn/end" and t >= least for k, t in turns)
        if step["op"] == "waitForTitleAfterTurnEnd":  # the original's: a title after the last turn/end
            kinds = [k for (k,) in db.execute(
                "SELECT type FROM events WHERE session_id = ? AND type IN ('turn/end', 'session/title') "
                "ORDER BY seq",
                (session_id,),
            )]  # fmt: skip
            return "turn/end" in kinds and kinds[-1] == "session/title"
        turns = _turns(db, session_id)
        if step["op"] == "waitForTurnStart":
            minimum: int = step.get("minimumTurn", 1)
            return max((t for k, t in turns if k == "turn/start"), default=0) >= minimum
        return not turns or turns[-1][0] == "turn/end"  # waitForTurnEnd


async def _until_logged(db: Path, session_id: str, step: dict[str, Any], server: RawServer) -> None:
    await until(lambda: _logged(db, session_id, step), f"{step} holds", gone=server.gone, every=0.01)


async def drive(scenario: Path, tmp: Path) -> Run:
    """Play ``input.json`` as an ACP client would (ids 1, 2, ...), keeping the server's stdout.

    The ops are the original harness's: a prompt is awaited, ``promptExpectError`` expects an
    error response, ``promptAndCancel`` sends the prompt, waits for its file and sends
    ``session/cancel``, ``promptAndWaitForAgentMessage`` sends the prompt and waits for that
    message chunk; the other waits poll the server's store as the original polls its logs
    (``waitForTurnEnd`` also takes the answers of the prompts still out).
    """
    document = json.loads((scenario / "input.json").read_text())
    steps = document["steps"]
    answers = [a["kind"] for a in document.get("permissionAnswers", [])]
    cwd = workspace_for(scenario, tmp)
    log = tmp / "server.log"
    args = server_args(replay=scenario, store=f"sqlite:{tmp / 'sessions.db'}", profile="dsh-compat", log=log)
    problems: list[str] = []
    unanswered: list[int] = []
    async with RawServer([*args, "--trust"], stderr_path=tmp / "stderr") as server:
        session_id = None
        for step in steps:
            op = step["op"]
            if op == "initialize":
                await server.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            elif op == "newSession":
                reply = await server.call("session/new", {"cwd": str(cwd), "mcpServers": []})
                session_id = reply["result"]["sessionId"]
            elif op in ("prompt", "promptExpectError", "promptContent"):
                prompt = (
                    step["content"] if op == "promptContent" else [{"type": "text", "text": step["text"]}]
                )
                pending = await server.start("session/prompt", {"sessionId": session_id, "prompt": prompt})
                reply = await _answering_permissions(server, pending, answers)
                if ("error" in reply) != (op == "promptExpectError"):
                    problems.append(f"{op}: {reply}")
            elif op == "promptAndCancel":
                prompt = [{"type": "text", "text": step["text"]}]
                pending = await server.start("session/prompt", {"sessionId": session_id, "prompt": prompt})
                await _until_exists(cwd / step["waitForFile"]["path"], server)
                await server.notify("session/cancel", {"sessionId": session_id})
                await server.response(pending)
            elif op == "promptAndWaitForAgentMessage":
                prompt = [{"type": "text", "text": step["text"]}]
                params = {"sessionId": session_id, "prompt": prompt}
                unanswered.append(await server.start("session/prompt", params))
                await server.wait_for(_said(step["waitForText"]))  # type: ignore[arg-type]
            elif op == "waitForFile":
                await _until_exists(cwd / step["path"], server)
            elif op in (
                "waitForSubagentTurnEnd",
                "waitForTurnStart",
                "waitForTurnEnd",
                "waitForTitleAfterTurnEnd",
            ):
                assert session_id is not None
                await _until_logged(tmp / "sessions.db", session_id, step, server)
                if op == "waitForTurnEnd":
                    for request_id in unanswered:
                        await server.response(request_id)
                    unanswered.clear()
            else:
                problems.append(f"op {op} is not played over ACP here")
        for request_id in unanswered:
            await server.response(request_id)
        code = await server.close()
    expected = [json.loads(line) for line in (scenario / "stdout.expected.jsonl").read_text().splitlines()]
    return Run(server.frames, expected, code, log.read_text(), (tmp / "stderr").read_text(), cwd, problems)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run | BaseException]:
    """All recordings, each in its own server process, driven concurrently (one fixture, one wait)."""
    if not UPSTREAM.is_dir():
        pytest.skip(f"upstream fixtures not found at {UPSTREAM} (CI always has them)")

    gate = asyncio.Semaphore(4)  # a few servers at a time: 2 cores, each server a Python process

    async def one(name: str) -> Run:
        async with gate:
            return await drive(UPSTREAM / name, tmp_path_factory.mktemp(name))

    async def everything() -> list[Run | BaseException]:
        # One recording's failure must not cancel the others' servers mid-exchange: each
        # test reports its own.
        return await asyncio.gather(*(one(n) for n in RECORDINGS), return_exceptions=True)

    return dict(zip(RECORDINGS, asyncio.run(everything()), strict=True))


BACKGROUND_RACE = {"subagent-report", "subagent-continuable"}
"""Recordings whose prompt's response races a background child: the original answered the
prompt when the agent was idle, and whether the child's notice had already woken the next turn
then was a matter of timing. Both recordings log the same shape (the parent's ``turn/end``,
then the child's notice, then a woken turn), yet one answered before that turn and one after:
nothing in a log says which, so where the response falls among the updates is not compared
for them (every update and every response still is, each in its order)."""


def _responses_last(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The frames with every response to a client request moved, in order, after the rest."""
    responses = [f for f in frames if "result" in f or "error" in f]
    return [f for f in frames if not ("result" in f or "error" in f)] + responses


@pytest.mark.fixtures
@pytest.mark.parametrize("name", RECORDINGS)
def test_stdout_matches_the_original(runs: dict[str, Run | BaseException], name: str) -> None:
    run = runs[name]
    if isinstance(run, BaseException):
        raise run
    assert run.problems == []
    assert run.exit_code == 0, run.stderr
    assert run.stderr == ""
    init = run.frames[0]
    assert init["id"] == 1 and init["result"]["protocolVersion"] == 1
    ours = [upstream_normalize(frame) for frame in _agent_request_ids(run.frames[1:])]
    if name in BACKGROUND_RACE:
        ours, expected = _responses_last(ours), _responses_last(run.expected[1:])
        assert ours == expected
    else:
        assert ours == run.expected[1:]
    assert "not fully consumed" not in run.log, run.log


@pytest.mark.fixtures
def test_fs_write_really_wrote(runs: dict[str, Run | BaseException]) -> None:
    run = runs["fs-write"]
    assert isinstance(run, Run)
    assert (run.cwd / "notes.txt").read_text().strip() == "hello world"
