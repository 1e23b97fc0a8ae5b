"""Resume reads the history, not every delta; a fork of a resumed session still copies them."""

from __future__ import annotations

from pathlib import Path

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply
from dsh.store.sqlite import SqliteEventStore
from dsh.tools.registry import builtin_registry

LONG = "a reply long enough that its stream is stored apart from the message " * 12


async def test_a_resumed_session_reads_no_stream_and_its_fork_copies_them(tmp_path: Path) -> None:
    config = AgentConfig(model="test-model", retry=NO_DELAY)
    store = SqliteEventStore(tmp_path / "s.db")
    first = await Agent.create(
        store, model=ScriptedModel([text_reply(LONG)]), tools=builtin_registry(), config=config, cwd=tmp_path
    )
    await first.run_turn("first")
    await first.aclose()
    whole = (await store.load(first.id)).events
    model = ScriptedModel([text_reply("two")])
    again = await Agent.resume(store, first.id, model=model, tools=builtin_registry(), config=config)
    settlements = [e.seq for e in whole if e.type == "assistant/message"]
    assert [e.seq for e in again.events if e.partial] == settlements
    assert (await again.run_turn("second")).text == "two"
    assert [m["role"] for m in model.requests[0].messages] == ["user", "assistant", "user"]
    assert model.requests[0].messages[1]["content"][0]["text"] == LONG, "the history is whole"
    child = await again.fork()
    stored = (await store.load(child.id)).events
    cut = child.session.inherited_event_count
    assert stored[:cut] == (await store.load(first.id)).events[:cut], "the child holds the streams"
    assert not any(e.partial for e in child.events), "the child's seed was read whole"
    await child.aclose()
    await again.aclose()
    await store.close()
