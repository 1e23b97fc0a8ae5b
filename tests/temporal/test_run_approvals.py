"""``dsh run --temporal`` answers the turn's approval requests as ``dsh run`` does:
``--approve``, ``--deny``, and without a terminal nobody (one line saying how)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dsh.events.vocabulary import APPROVAL_DECIDED
from dsh.loop import AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.store import EventStore
from dsh.temporal import Worker
from dsh.testing import RecordedRequest, Response, WireToolCall, stream_reply
from dsh.tools.sandbox import SandboxPolicy
from tests.temporal.conftest import Model, dsh_env

pytestmark = [pytest.mark.postgres]

ESCALATION = (
    '{"command": "echo ok > approved.txt", "description": "write", '
    '"sandbox_permissions": "danger-full-access", "justification": "it must write a file"}'
)


def _asking(request: RecordedRequest) -> Response:
    if any(m.get("role") == "tool" for m in request.messages):  # the call's result came back
        return stream_reply(text="done asking")
    return stream_reply(tool_calls=[WireToolCall.split("a1", "bash", ESCALATION, 2)])


@pytest.fixture
async def queue(temporal_address: str, model: Model, store: EventStore, tmp_path: Path) -> AsyncIterator[str]:
    """A worker of its own whose sandbox is read-only, so the bash call asks for approval."""
    name = f"run-approvals-{tmp_path.name}"
    worker_model = OpenAICompatModel(base_url=model.server.base_url, api_key="test", default_model="scripted")
    config = AgentConfig(model="scripted", sandbox=SandboxPolicy(mode="read-only"))
    worker = Worker(temporal_address, task_queue=name, store=store, model=worker_model, config=config)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:
        yield name
    finally:
        stop.set()
        await running
        await worker_model.aclose()


async def _run(
    address: str, queue: str, pg: str, cwd: Path, model: Model, *flags: str
) -> tuple[int, str, str]:
    argv = ["run", "write it", "--temporal", address, "--task-queue", queue, "--store", pg, "--cwd", str(cwd)]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dsh.cli", *argv, *flags,
        env=dsh_env(cwd / "home", model.server.base_url),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize(
    ("flags", "outcome", "written"),
    [(("--approve",), "allowed-once", True), (("--deny",), "rejected", False), ((), "unavailable", False)],
)
async def test_run_on_temporal_answers_the_approval_request(
    flags: tuple[str, ...],
    outcome: str,
    written: bool,
    temporal_address: str,
    queue: str,
    pg_store: str,
    model: Model,
    store: EventStore,
    tmp_path: Path,
) -> None:
    model.script = _asking
    code, out, err = await _run(temporal_address, queue, pg_store, tmp_path, model, *flags)
    assert code == 0, err
    assert out.strip().splitlines()[-1] == "done asking"
    assert (tmp_path / "approved.txt").exists() is written
    sessions = [s for s in await store.list_sessions() if s.header.cwd == str(tmp_path)]
    (session,) = sessions
    decided = [e for e in (await store.load(session.header.id)).events if e.type == APPROVAL_DECIDED]
    assert [e.data["outcome"] for e in decided] == [outcome]
    if not flags:
        assert "needed an approval, but stdin is not a terminal" in err
