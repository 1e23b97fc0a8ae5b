"""Issue #41 item 3 through the library: workspace checkpoints at each turn, rewind, undo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.errors import UsageError
from dsh.events.vocabulary import WORKSPACE_CHECKPOINT, WORKSPACE_REWIND
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.loop.rewind import RewindRefusedError, rewind_session, undo_rewind
from dsh.loop.workspace_checkpoints import StoreBlobs, TurnCheckpoints
from dsh.model.scripted import ScriptedModel, text_reply, tool_call_reply
from dsh.store.sqlite import SqliteEventStore
from dsh.tools.registry import builtin_registry
from dsh.workspace import Checkpointer, Limits

COMMANDS = (
    "echo one > notes.txt && echo '*.log' > .gitignore",
    "echo two > notes.txt && echo kept > debug.log",
    "echo three > notes.txt && echo new > extra.txt && echo later > debug.log",
)


def _model() -> ScriptedModel:
    replies = []
    for i, command in enumerate(COMMANDS, 1):
        replies += [
            tool_call_reply(f"call_{i}", "bash", json.dumps({"command": command, "description": "write"})),
            text_reply(f"done {i}"),
        ]
    return ScriptedModel(replies, model="m")


async def _three_turns(tmp_path: Path) -> tuple[SqliteEventStore, Agent, Path]:
    work = tmp_path / "work"
    work.mkdir()
    store = SqliteEventStore(tmp_path / "s.db")
    config = AgentConfig(model="m", retry=NO_DELAY)
    agent = await Agent.create(store, model=_model(), tools=builtin_registry(), config=config, cwd=work)
    agent.workspace_checkpoints = TurnCheckpoints(work, store)
    for n in range(1, 4):
        await agent.run_turn(f"step {n}")
    return store, agent, work


async def test_rewind_restores_what_bash_wrote_and_undo_brings_the_later_version_back(tmp_path: Path) -> None:
    store, agent, work = await _three_turns(tmp_path)
    async with store, agent:
        parent = await store.load(agent.id)
        checkpoints = [e for e in parent.events if e.type == WORKSPACE_CHECKPOINT]
        assert [e.data["turn"] for e in checkpoints] == [1, 2, 3] and all(e.ignorable for e in checkpoints)
        async with await agent.rewind(to=2) as branch:
            assert (work / "notes.txt").read_text() == "two\n"
            assert not (work / "extra.txt").exists()
            assert (work / "debug.log").read_text() == "later\n", "ignored files are left alone"
            log = await store.load(branch.id)
            cut = log.inherited_event_count
            assert log.events[:cut] == parent.events[:cut] and log.events[cut - 1].data["turn"] == 2
            (rewind,) = [e for e in log.events[cut:] if e.type == WORKSPACE_REWIND]
            assert rewind.data["source"] == agent.id and rewind.data["turn"] == 2 and rewind.data["replaced"]
            assert (await store.load(agent.id)).events == parent.events, "the original session is untouched"
            done = await undo_rewind(store, branch.id, root=work)
            assert done.plan.write == ["extra.txt", "notes.txt"]
            assert (work / "notes.txt").read_text() == "three\n" and (
                work / "extra.txt"
            ).read_text() == "new\n"
            assert (await store.load(branch.id)).events[-1].data["undo"] is True
            # the branch's own turn 2 is inherited: its checkpoint is the parent's, found up the lineage
            async with await branch.rewind(to=2) as again:
                assert (work / "notes.txt").read_text() == "two\n"
                assert (await store.load(again.id)).header.parent_session == branch.id


async def test_conversation_only_and_files_only_and_refusals(tmp_path: Path) -> None:
    store, agent, work = await _three_turns(tmp_path)
    async with store, agent:
        async with await agent.rewind(to=1, files=False) as talk:
            assert (work / "notes.txt").read_text() == "three\n", "conversation only: files untouched"
            assert (await store.load(talk.id)).inherited_event_count < len(agent.session.events)
        async with await agent.rewind(to=1, conversation=False) as files:
            assert (work / "notes.txt").read_text() == "one\n"
            loaded = await store.load(files.id)
            assert loaded.events[loaded.inherited_event_count - 1].data["turn"] == 3, (
                "files only: every turn kept"
            )
        with pytest.raises(UsageError, match="no workspace checkpoint at turn 9"):
            await agent.rewind(to=9)

        async def no(_plan: object) -> bool:
            return False

        with pytest.raises(RewindRefusedError):
            await rewind_session(store, agent.id, 3, root=work, confirm=no)
        assert (work / "notes.txt").read_text() == "one\n", "a refused rewind changes nothing"


async def test_checkpoints_are_incremental_and_capped(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    (work / "a.txt").write_text("a")
    (work / "big.bin").write_bytes(b"x" * 2000)
    store = SqliteEventStore(tmp_path / "s.db")
    async with store:
        blobs = StoreBlobs(store)
        puts: list[int] = []
        real_put = blobs.put

        async def counting(data: bytes, media_type: str) -> str:
            puts.append(len(data))
            return await real_put(data, media_type)

        blobs.put = counting  # type: ignore[method-assign]
        taker = Checkpointer(work, blobs, Limits(max_file_bytes=1000))
        _, first = await taker.take()
        assert set(first.files) == {"a.txt"} and first.skipped == [("big.bin", "over 1000 bytes")]
        puts.clear()
        await taker.take()
        assert len(puts) == 1, "an unchanged file is not stored again (only the manifest is)"
