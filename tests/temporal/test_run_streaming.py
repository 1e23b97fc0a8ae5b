"""``dsh run --temporal`` prints a model step's text as it streams (the worker's live spool),
as in-process ``dsh run`` does, each delta once; a step asked again after a lost worker restarts."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from dsh.store import EventStore
from dsh.testing import Response, held, stream_reply
from tests.patience import patience
from tests.temporal.conftest import Model, Workers
from tests.temporal.helpers import by_count, holder_pid

pytestmark = [pytest.mark.postgres]

PIECES = ["Hello", " there", ", world", "!"]


def _on(workers: Workers) -> list[str]:
    return ["--temporal", workers.address, "--task-queue", workers.queue, "--store", workers.store]


class Run:
    """A ``dsh run ... --json`` process and the JSON lines it printed so far."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[dict[str, Any]] = []

    async def until(self, done: Any) -> None:
        """Read lines until ``done(lines)`` (a hang guard bounds it, not a timing claim)."""
        assert self.proc.stdout is not None
        async with asyncio.timeout(patience(30)):
            while not done(self.lines):
                line = await self.proc.stdout.readline()
                assert line, "dsh run ended before printing what was expected"
                self.lines.append(json.loads(line))

    async def finish(self) -> str:
        out, err = await asyncio.wait_for(self.proc.communicate(), patience(120))
        self.lines += [json.loads(line) for line in out.splitlines()]
        assert self.proc.returncode == 0, err.decode()
        return err.decode()

    def deltas(self) -> list[str]:
        return [line["text"] for line in self.lines if line["type"] == "delta"]

    def types(self) -> list[str]:
        return [line["type"] for line in self.lines]


@asynccontextmanager
async def dsh_run(workers: Workers, cwd: Path, *args: str) -> AsyncIterator[Run]:
    proc = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "dsh.cli", "run", "stream it", "--cwd", str(cwd), "--json", *args],
        env=workers.env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield Run(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.communicate()


def _text_so_far(lines: list[dict[str, Any]]) -> str:
    return "".join(line["text"] for line in lines if line["type"] == "delta")


async def test_the_text_is_printed_while_the_model_step_streams_before_it_settles(
    workers: Workers, model: Model, tmp_path: Path
) -> None:
    """The reply holds after its first two pieces until this test has read them from
    ``dsh run --temporal``'s stdout: they were printed before the step settled."""
    workers.ready()
    release = threading.Event()
    model.script = by_count(lambda: held(stream_reply(text=PIECES), 3, release))  # role chunk + 2 pieces
    try:
        async with dsh_run(workers, tmp_path, *_on(workers)) as run:
            await run.until(lambda lines: _text_so_far(lines) == "Hello there")
            assert "assistant/message" not in run.types()  # the step has not settled
            release.set()
            await run.finish()
    finally:
        release.set()
    assert run.deltas() == PIECES  # each once: the settlement does not print them again
    types = run.types()
    assert types.index("assistant/message") > max(i for i, t in enumerate(types) if t == "delta")
    assert run.lines[-1]["type"] == "result" and run.lines[-1]["text"] == "Hello there, world!"


async def test_the_delta_lines_are_those_of_dsh_run_in_process(
    workers: Workers, model: Model, tmp_path: Path
) -> None:
    workers.ready()

    def reply() -> Response:
        return stream_reply(reasoning=["Let me", " think"], text=PIECES)

    model.script = by_count(reply)
    store = f"sqlite:{tmp_path / 'local.db'}"
    async with dsh_run(workers, tmp_path, "--store", store) as local:
        await local.finish()
    model.script = by_count(reply)
    async with dsh_run(workers, tmp_path, *_on(workers)) as remote:
        await remote.finish()

    def shown(run: Run) -> list[tuple[str, str]]:
        return [(line["kind"], line["text"]) for line in run.lines if line["type"] == "delta"]

    assert shown(remote) == shown(local) == [
        ("reasoning", "Let me"), ("reasoning", " think"), *(("text", p) for p in PIECES)
    ]  # fmt: skip


async def test_a_step_asked_again_after_a_lost_worker_restarts_the_text(
    workers: Workers, model: Model, store: EventStore, tmp_path: Path
) -> None:
    """The worker streaming the step dies after "Hello"; the retry on the other worker answers
    anew: the client says the deltas so far are void (``delta-restart``), then streams the
    retry's, and the answer is the retry's alone."""
    workers.ready()
    release = threading.Event()
    killed: list[int] = []

    def script(_request: object) -> Response:
        if killed:
            return stream_reply(text=["Hi", " again"])
        return held(stream_reply(text=PIECES), 2, release)  # role chunk + "Hello"

    model.script = script
    try:
        async with dsh_run(workers, tmp_path, *_on(workers)) as run:
            await run.until(lambda lines: _text_so_far(lines) == "Hello")
            (session_id,) = {line["sessionId"] for line in run.lines}
            victim = await holder_pid(store, session_id)
            killed.append(victim)
            workers.kill(victim)
            err = await run.finish()
    finally:
        release.set()
        workers.start(1, wait=False)  # the pool is two again for the next test
    assert "dsh: worker lost; the turn continues on another" in err
    types = run.types()
    restart = types.index("delta-restart")
    assert run.deltas() == ["Hello", "Hi", " again"]
    after = [line.get("text") for line in run.lines[restart + 1 :] if line["type"] == "delta"]
    assert after == ["Hi", " again"]
    assert run.lines[-1]["type"] == "result" and run.lines[-1]["text"] == "Hi again"
