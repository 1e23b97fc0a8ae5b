"""Sessions run on Temporal are ordinary recordings: ``dsh scenario save`` turns one (with its
children) into a scenario, and ``dsh scenario replay`` replays it keylessly and strictly with
dsh's in-process loop — a plain tool turn, a spawned, a forked and a background child, and
one given more work with ``send_message``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.events.vocabulary import TURN_END
from dsh.store import EventStore
from dsh.temporal import connect, submit_turn
from dsh.temporal.children import child_id
from dsh.temporal.waking import running
from dsh.testing import stream_reply
from tests.patience import patience
from tests.temporal.conftest import Model, Workers
from tests.temporal.helpers import bash_call, by_count
from tests.temporal.test_children import _backgrounding, _forking, _steering, _until
from tests.temporal.test_runs import _spawning

pytestmark = [pytest.mark.postgres]


def _dsh(workers: Workers, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "dsh.cli", *args]
    return subprocess.run(
        argv, env=workers.env, capture_output=True, text=True, timeout=patience(120), check=False
    )


async def _run(kind: str, workers: Workers, model: Model, store: EventStore, cwd: Path) -> str:
    """Run the flow ``kind`` on the workers until every session of it settled; its session id."""
    client = await connect(workers.address)
    queue = workers.queue
    model.script = {
        "tool": by_count(lambda: bash_call("c1", "echo hi"), lambda: stream_reply(text="the answer")),
        "spawn": _spawning,
        "fork": _forking,
        "background": _backgrounding,
        "steered": _steering,
    }[kind]
    prompt = "the code word is PLUM" if kind == "fork" else "go"
    first = await submit_turn(client, prompt, task_queue=queue, store=store, cwd=cwd)
    await asyncio.wait_for(first.result(store), patience(60))
    sid = first.session_id
    if kind == "fork":
        second = await submit_turn(
            client, "which code word? delegate it", task_queue=queue, store=store, session_id=sid
        )
        await asyncio.wait_for(second.result(store), patience(60))
    if kind in ("background", "steered"):
        kid, turns = child_id(sid, "b1"), 2 if kind == "background" else 3

        async def settled() -> bool:
            ends = [e for e in (await store.load(sid)).events if e.type == TURN_END]
            return len(ends) == turns and not await running(client, sid) and not await running(client, kid)

        await _until(settled)
    return sid


@pytest.mark.parametrize("kind", ["tool", "spawn", "fork", "background", "steered"])
async def test_a_session_run_on_temporal_saves_as_a_scenario_that_replays_strictly(
    kind: str, workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    sid = await _run(kind, workers, model, store, tmp_path)
    target = tmp_path / "scenario"
    saved = _dsh(workers, "scenario", "save", sid, str(target), "--store", workers.store)
    assert saved.returncode == 0, saved.stderr
    expected = {"tool": 1, "spawn": 2, "fork": 2, "background": 2, "steered": 2}[kind]
    assert len(list(target.glob("session*.jsonl"))) == expected  # the children came along
    replayed = _dsh(workers, "scenario", "replay", str(target), "--trust")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
