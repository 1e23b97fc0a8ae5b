"""Session leases beyond the contract: lock files, a SIGKILLed holder process, the agent under its lease."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from dsh.errors import SessionBusyError
from dsh.events import SessionHeader
from dsh.loop import Agent, AgentConfig
from dsh.model.scripted import ScriptedModel
from dsh.store import EventStore, JsonlEventStore, MemoryEventStore, MemorySpace, SqliteEventStore
from dsh.store.lease import decode_holder
from dsh.store.samples import completed_turns, open_turn
from dsh.tools.registry import ToolRegistry
from tests.patience import patience

HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    from dsh.store import open_store

    async def main():
        store = open_store(sys.argv[1])
        await store.lease("s")
        print("held", flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


def _url(kind: str, root: Path) -> str:
    return f"sqlite:{root / 'db' / 'sessions.db'}" if kind == "sqlite" else f"jsonl:{root / 'sessions'}"


def _open(kind: str, root: Path) -> EventStore:
    if kind == "sqlite":
        return SqliteEventStore(root / "db" / "sessions.db")
    return JsonlEventStore(root / "sessions")


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
async def test_the_lock_file_names_the_holder_and_goes_with_the_release(kind: str, tmp_path: Path) -> None:
    store = _open(kind, tmp_path)
    await store.create(SessionHeader(id="s", created_at=1))
    lease = await store.lease("s")
    if kind == "sqlite":
        lock = tmp_path / "db" / "sessions.db-leases" / "s.lock"
    else:
        lock = tmp_path / "sessions" / ".s.jsonl.lock"
    holder = decode_holder(lock.read_bytes())
    assert holder is not None and holder.pid == os.getpid() and holder == lease.holder
    assert [s.header.id for s in await store.list_sessions()] == ["s"], "the lock file is not a session"
    await lease.release()
    assert not lock.exists(), "releasing removes the lock file"
    await store.close()


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
async def test_a_sigkilled_holder_process_frees_the_lease_at_once(kind: str, tmp_path: Path) -> None:
    url = _url(kind, tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "held"
        store = _open(kind, tmp_path)
        with pytest.raises(SessionBusyError, match=rf"^session s is busy \(held by pid {proc.pid} on "):
            await store.lease("s")
        os.kill(proc.pid, signal.SIGKILL)
        # the kernel frees the lock with the process: no staleness to wait out, so the lease
        # comes within the poll's guard (how soon is a latency, which load stretches)
        lease = await store.lease("s", wait=patience(10))
        assert lease.holder.pid == os.getpid()
        await store.close()
    finally:
        proc.kill()
        proc.communicate()


def _agent_args() -> dict[str, Any]:
    return {"model": ScriptedModel([]), "tools": ToolRegistry(), "config": AgentConfig(model="m")}


async def test_resume_of_a_busy_session_appends_nothing() -> None:
    space = MemorySpace()
    live, other = MemoryEventStore(space), MemoryEventStore(space)
    await live.create(SessionHeader(id="s", created_at=1))
    await live.append("s", [*completed_turns(1), *open_turn(6, 2)])  # a live turn, not a crash
    holder = await live.lease("s")
    with pytest.raises(SessionBusyError, match="session s is busy"):
        await Agent.resume(other, "s", **_agent_args())
    loaded = await other.load("s")
    assert loaded.events[-1].type != "turn/end", "the live turn was not closed by the refused writer"
    await holder.release()
    agent = await Agent.resume(other, "s", **_agent_args())
    assert agent.session.events[-1].data["reason"] == {"kind": "interrupted"}
    with pytest.raises(SessionBusyError):
        await live.lease("s")
    async with agent:
        pass
    await (await live.lease("s")).release()
    await live.close()
    await other.close()


async def test_an_agent_holds_the_lease_of_the_session_it_creates(tmp_path: Path) -> None:
    store = JsonlEventStore(tmp_path)
    agent = await Agent.create(store, cwd=tmp_path, **_agent_args())
    other = JsonlEventStore(tmp_path)
    with pytest.raises(SessionBusyError):
        await Agent.resume(other, agent.id, **_agent_args())
    again = await Agent.resume(store, agent.id, **_agent_args())
    await agent.aclose()
    with pytest.raises(SessionBusyError):
        await other.lease(agent.id)  # the second agent on the same handle still holds it
    await again.aclose()
    await (await other.lease(agent.id)).release()
    await store.close()
    await other.close()
    assert json.loads((tmp_path / f"{agent.id}.jsonl").read_text().splitlines()[0])["id"] == agent.id
