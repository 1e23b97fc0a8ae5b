"""A surface read of SQLite leaves its packed chunk runs unbuilt (``dsh.events.sparse``):
resuming a session in the original's shape and running a turn builds none of its chunks."""

from __future__ import annotations

import gc
from pathlib import Path

from dsh.events import Event, SessionHeader
from dsh.loop import Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply
from dsh.session.timeline import SessionTree
from dsh.store.sqlite import SqliteEventStore

T0 = 4_242_000_000
"""The chunks' times start here: no other event of the test process has such a time."""

CHUNKS = 300


def _original_shape(turns: tuple[int, ...] = (1, 2), start: int = 0) -> list[Event]:
    """Completed turns (two, from seq 0) whose step streams :data:`CHUNKS` version-0 chunks each."""
    events: list[Event] = []

    def add(etype: str, data: object, time: int = 1_000, op: str | None = None) -> None:
        events.append(Event(etype, start + len(events), time, data, op))

    for turn in turns:
        add("turn/start", {"turn": turn})
        prompt = {"role": "user", "content": [{"type": "text", "text": f"do {turn}"}]}
        add("user/message", prompt, op="append")
        add("step/start", {"turn": turn, "step": 1})
        for k in range(CHUNKS):
            chunk = {"type": "text-delta", "index": 0, "text": f"w{k} "}
            add("assistant/chunk", {"turn": turn, "step": 1, "chunk": chunk}, time=T0 + start + len(events))
        message = {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
        add("assistant/message", {"turn": turn, "step": 1, "message": message}, op="append")
        add("step/end", {"turn": turn, "step": 1})
        add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    return events


def _chunks_alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Event) and T0 <= o.time < T0 + 10_000)


async def test_a_resumed_session_builds_its_chunks_only_when_they_are_read(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    await store.create(SessionHeader(id="s", created_at=1, cwd=str(tmp_path)), _original_shape())
    assert _chunks_alive() == 0
    surface = await store.load("s", streams=False)
    assert len(surface.events) == 2 * (CHUNKS + 6) and _chunks_alive() == 0, "a surface read builds none"
    del surface
    model = ScriptedModel([text_reply("ok")])
    agent = await Agent.resume(store, "s", model=model, config=AgentConfig(model="m"))
    result = await agent.run_turn("next")
    assert result.reason["kind"] == "completed" and agent.session.last_turn() == 3
    assert _chunks_alive() == 0, "resuming and a turn (history, index, cut) read no chunk"
    chunks = agent.session.of_type("assistant/chunk")
    assert [e.time for e in chunks] == [e.time for e in _original_shape() if e.type == "assistant/chunk"]
    assert all(e.partial and e.data is None for e in chunks) and _chunks_alive() == 2 * CHUNKS
    await agent.aclose()
    whole = await store.load("s")
    assert [e.time for e in whole.events[: 2 * (CHUNKS + 6)]] == [e.time for e in _original_shape()]
    await store.close()


async def test_a_session_tree_of_surface_reads_builds_no_chunk(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    await store.create(SessionHeader(id="s", created_at=1, cwd=str(tmp_path)), _original_shape())
    after_marker = (await store.fork("s", child_id="c")).inherited_event_count + 1
    await store.append("c", _original_shape((3,), after_marker), durable=True)  # runs of its own
    tree = await SessionTree.load(store, "s", streams=False)  # what `dsh sessions tree` reads
    assert [n.id for n in tree.walk()] == ["s", "c"] and tree.nodes["c"].kind == "fork"
    assert _chunks_alive() == 0, "the tree's descriptor and call scans skip the chunk runs"
    del tree
    await store.close()
