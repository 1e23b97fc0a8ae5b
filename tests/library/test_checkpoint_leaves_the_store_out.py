"""A workspace checkpoint leaves out the session store when it lives in the workspace."""

from __future__ import annotations

from pathlib import Path

from dsh.events import SessionHeader
from dsh.loop.workspace_checkpoints import TurnCheckpoints
from dsh.store.jsonl import JsonlEventStore
from dsh.store.samples import completed_turns
from dsh.store.sqlite import SqliteEventStore


async def test_the_stores_own_files_are_not_checkpointed(tmp_path: Path) -> None:
    for work, store in (
        (tmp_path / "one", SqliteEventStore(tmp_path / "one" / "s.db")),
        (tmp_path / "two", JsonlEventStore(tmp_path / "two" / "sessions")),
    ):
        work.mkdir()
        (work / "a.txt").write_text("work")
        await store.create(SessionHeader(id="s", created_at=1, cwd=str(work)), completed_turns(1))
        lease = await store.lease("s")  # the lease file exists while the checkpoint runs
        _, manifest = await TurnCheckpoints(work, store).checkpointer.take()
        await lease.release()
        await store.close()
        assert sorted(manifest.files) == ["a.txt"], sorted(manifest.files)
