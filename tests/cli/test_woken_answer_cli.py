"""The final answer when a background child wakes the parent: a parent that answered
"waiting" and was woken by its child's settlement answers again in a later turn. Piped
stdout holds that final answer (once); ``--json`` has a ``result`` line per turn, the last
holding the final answer; the live view (stderr when piped) ends each woken turn's text
with a newline and its own footer."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply

from .test_background_exit_cli import CHILD_TASK, _first_prompt, dsh_cli

WAITING = "Waiting for the counter."
FINAL = "The counter says: 42 files."


async def _root_turn_ended(db: Path) -> None:
    """Until the root's first turn is closed in the store (the child answers only then, so
    its settlement wakes an idle parent whatever the machine's speed)."""
    for _ in range(600):
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                if con.execute("SELECT count(*) FROM events WHERE type = 'turn/end'").fetchone()[0]:
                    return
        except sqlite3.OperationalError:
            pass
        await asyncio.sleep(0.05)


def scripted(db: Path) -> Any:
    async def handler(req: RecordedRequest) -> Response:
        if _first_prompt(req) == CHILD_TASK:
            await _root_turn_ended(db)
            return stream_reply(text=["42 ", "files"])
        if "finished and will do no further work" in req.text():
            return stream_reply(text=["The counter says: ", "42 files."])
        if any(m.get("role") == "tool" for m in req.messages):
            return stream_reply(text=WAITING)
        args = json.dumps({"description": "counter", "prompt": CHILD_TASK, "run_in_background": True})
        return stream_reply(tool_calls=[WireToolCall.split("call_bg", "subagent", args, 2)])

    return handler


def test_piped_stdout_holds_the_woken_turns_final_answer(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=scripted(tmp_path / "s.db")) as server:
        out = dsh_cli(tmp_path, "run", "count", "--base-url", server.base_url)
    assert out.returncode == 0, out.stderr
    assert out.stdout == FINAL + "\n"
    footers = [line for line in out.stderr.splitlines() if line.startswith("■ completed")]
    assert len(footers) == 2, out.stderr  # the submitted turn's and the woken turn's
    woken = out.stderr.index(footers[1])
    assert out.stderr[:woken].endswith("\n")


def test_json_has_a_result_per_turn_and_the_last_holds_the_final_answer(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=scripted(tmp_path / "s.db")) as server:
        out = dsh_cli(tmp_path, "run", "count", "--json", "--base-url", server.base_url)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    results = [line for line in lines if line["type"] == "result"]
    assert [(r["turn"], r["text"]) for r in results] == [(1, WAITING), (2, FINAL)]
    assert lines[-1] == results[-1]
    root = results[0]["sessionId"]
    assert {r["sessionId"] for r in results} == {root}
    children = results[-1]["children"]
    assert len(children) == 1 and children[0]["usage"]
    for result in results:  # the run's total so far: every turn's own usage up to it, every child's
        assert result["usage"]["inputTokens"] >= result["ownUsage"]["inputTokens"]
    own = sum(r["ownUsage"]["inputTokens"] for r in results)
    assert results[-1]["usage"]["inputTokens"] == own + children[0]["usage"]["inputTokens"]
