"""``tail`` (``dsh sessions tail``) as a real subprocess: stored events, live appends, turn end, Ctrl-C.

The command runs from a tiny test-only Typer app around :func:`dsh.cli.tail_cmd.tail`, so
these tests do not depend on where the CLI registers it. The appending "other process" is
this test process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh.events import SessionHeader
from dsh.store import EventStore, SqliteEventStore
from dsh.store.postgres import PostgresEventStore
from dsh.store.postgres_testing import (
    drop_schema,
    new_schema_name,
    server_url,
    unreachable_reason,
    with_schema,
)
from dsh.store.samples import completed_turn, completed_turns
from tests.patience import patience

APP = (
    "import typer\n"
    "from dsh.cli.tail_cmd import tail\n"
    "import dsh.store.tail, os\n"  # DSH_TEST_SAFETY_POLL: only a NOTIFY can wake a PostgreSQL follower
    "dsh.store.tail.LISTEN_SAFETY_POLL = float(os.environ.get('DSH_TEST_SAFETY_POLL', '2'))\n"
    "app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)\n"
    "app.command()(tail)\n"
    "app()\n"
)
ENV = {**os.environ, "NO_COLOR": "1", "PYTHONUTF8": "1"}
HEADER = SessionHeader(id="s", created_at=1, cwd="/w")


def run_tail(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", APP, *args], capture_output=True, text=True, env=ENV, timeout=60, check=False
    )


async def _store_with_a_turn(store: EventStore) -> EventStore:
    await store.create(HEADER)
    await store.append("s", completed_turns(1))
    return store


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:{tmp_path / 'sessions.db'}"


@pytest.fixture
def pg_url() -> Iterator[str]:
    server = server_url()
    reason = unreachable_reason(server)
    if reason is not None:
        pytest.skip(reason)
    schema = new_schema_name()
    yield with_schema(server, schema)
    drop_schema(server, schema)


def _open(url: str) -> EventStore:
    return (
        PostgresEventStore(url) if url.startswith("postgresql") else SqliteEventStore(url[len("sqlite:") :])
    )


# -- without --follow -------------------------------------------------------------------------


async def test_tail_prints_the_stored_events(sqlite_url: str) -> None:
    store = await _store_with_a_turn(_open(sqlite_url))
    events = (await store.load("s")).events
    await store.close()

    text = run_tail("s", "--store", sqlite_url)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert len(lines) == 6
    assert lines[0].split()[:3] == ["0", "22:13:20.000", "turn/start"]
    chunks = len(events[3].data["stream"]["chunks"])
    assert f'"stream":"<{chunks} chunks>"' in lines[3], "a settlement's stream is summarized"

    as_json = run_tail("s", "--store", sqlite_url, "--json")
    assert [json.loads(line) for line in as_json.stdout.splitlines()] == [e.to_wire() for e in events]

    last = run_tail("s", "--store", sqlite_url, "--json", "--from", "-2")
    assert [json.loads(line)["seq"] for line in last.stdout.splitlines()] == [4, 5]


def test_errors_are_one_line(sqlite_url: str, tmp_path: Path) -> None:
    missing = run_tail("nope", "--store", sqlite_url)
    assert missing.returncode == 1
    assert missing.stderr.splitlines() == [  # a read-only command creates no store (#35)
        f"dsh: error: no store at {sqlite_url}: the database file {tmp_path / 'sessions.db'} "
        "does not exist (nothing was created)"
    ]
    bad = run_tail("s", "--store", "postgresql://me:hunter2@db/x?bogus=1", "--follow")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1
    assert "bad PostgreSQL store URL 'postgresql://me:***@db/x?bogus=1'" in bad.stderr
    assert "hunter2" not in bad.stderr and "Traceback" not in bad.stderr


# -- --follow ---------------------------------------------------------------------------------


class Follower:
    """A running ``tail --follow --json`` subprocess."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, url: str, env: dict[str, str] | None = None) -> Follower:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            APP,
            "s",
            "--follow",
            "--json",
            "--store",
            url,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**ENV, **(env or {})},
        )
        return cls(proc)

    async def lines(self, count: int, limit: float) -> list[dict[str, Any]]:
        assert self.proc.stdout is not None
        out = []
        async with asyncio.timeout(limit):
            for _ in range(count):
                out.append(json.loads(await self.proc.stdout.readline()))
        return out

    async def finish(self, limit: float = patience(30)) -> tuple[int, str, str]:
        async with asyncio.timeout(limit):
            out, err = await self.proc.communicate()
        assert self.proc.returncode is not None
        return self.proc.returncode, out.decode(), err.decode()

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.communicate()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_follow_shows_appends_of_another_process_as_they_come(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """Each batch another process appends is shown before the next is written. PostgreSQL's
    follower is woken by the writer's NOTIFY: its safety poll is set to an hour here, so a
    batch shown at all within the (generous, scaled) guard came by NOTIFY. How soon a batch
    shows is a latency, which a busy machine stretches: no assertion here."""
    url = request.getfixturevalue("sqlite_url" if backend == "sqlite" else "pg_url")
    store = await _store_with_a_turn(_open(url))
    follower = await Follower.start(url, {"DSH_TEST_SAFETY_POLL": "3600"})
    try:
        backlog = await follower.lines(6, limit=patience(60))  # includes interpreter start-up
        assert [e["seq"] for e in backlog] == list(range(6))
        turn = completed_turn(6, 2)
        for batch in (turn[:3], turn[3:5]):
            await store.append("s", batch)
            shown = await follower.lines(len(batch), limit=patience(20))
            assert [e["seq"] for e in shown] == [e.seq for e in batch]
        assert follower.proc.returncode is None, "the turn is still running"
        await store.append("s", turn[5:])
        code, rest, err = await follower.finish()
        assert code == 0 and "Traceback" not in err, err
        assert [json.loads(line) for line in rest.splitlines()] == [turn[5].to_wire()]
    finally:
        await follower.kill()
        await store.close()


async def test_ctrl_c_stops_following_with_status_130(sqlite_url: str) -> None:
    store = await _store_with_a_turn(_open(sqlite_url))
    follower = await Follower.start(sqlite_url)
    try:
        await follower.lines(6, limit=patience(60))
        follower.proc.send_signal(signal.SIGINT)
        code, out, err = await follower.finish()
        assert code == 130
        assert out == "" and "Traceback" not in err and "Aborted" not in err, err
    finally:
        await follower.kill()
        await store.close()
