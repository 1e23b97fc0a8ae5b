"""The read model of a compaction: one ``Compaction`` item per checkpoint or failed attempt,
made from sessions the real loop compacted (``tests.compacted``)."""

from __future__ import annotations

from pathlib import Path

from dsh.events.tokens import message_price
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply
from dsh.session.digest import derive
from dsh.session.timeline import Compaction, Prompt, Relayed, Timeline
from dsh.store import LoadedSession
from dsh.store.sqlite import SqliteEventStore
from tests.compacted import FAILURE, PROMPT, SECOND, SUMMARY, compacted, failed


async def _load(db: Path, sid: str) -> LoadedSession:
    store = SqliteEventStore(db)
    try:
        return await store.load(sid)
    finally:
        await store.close()


def _fold(loaded: LoadedSession) -> tuple[Timeline, list[object]]:
    timeline = Timeline()
    timeline.begin(loaded.header.id, cut=loaded.inherited_event_count, header=loaded.header)
    return timeline, [i for e in loaded.events for i in timeline.feed(loaded.header.id, e)]


async def test_a_checkpoint_is_one_compaction_item_and_never_a_prompt(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    loaded = await _load(db, await compacted(db))
    timeline, items = _fold(loaded)
    (item,) = [i for i in items if isinstance(i, Compaction)]
    checkpoint = next(e for e in loaded.events if isinstance(e.surface_op, dict))
    summary = next(e for e in loaded.events if e.type == "compaction/summary")
    assert item.event is checkpoint and item.ok and item.error is None
    assert item.compaction_id == summary.data["compactionId"] and item.turn is None  # manual
    assert item.replaced == 5 and item.turns == (1, 2)
    assert item.shadowed_seqs == tuple(summary.data["shadowedSeqs"])
    assert item.tokens_before == summary.data["shadowedTokenCount"]
    assert item.tokens_before is not None
    assert item.tokens_after == message_price(checkpoint.data) < item.tokens_before
    assert item.summary == SUMMARY
    # the originals, typed and in surface order: prompt, call, result, answer, prompt (the
    # last answer stays on the history)
    assert [m.role for m in item.originals] == ["user", "assistant", "user", "assistant", "user"]
    assert item.originals[2].tool_results and item.originals[1].tool_calls[0].name == "bash"
    assert item.originals[0].text == PROMPT and item.originals[-1].text == SECOND
    # the checkpoint is not a prompt, nor a relayed message
    prompts = [i.text for i in items if isinstance(i, Prompt)]
    assert prompts == [PROMPT, SECOND, "third"]
    assert not [i for i in items if isinstance(i, Relayed) and i.event is checkpoint]
    assert timeline.state(loaded.header.id).compactions == 1
    assert timeline.state(loaded.header.id).failed_compactions == 0
    record = item.record()
    assert record["type"] == "compaction" and record["replacedMessages"] == 5
    assert record["turns"] == {"first": 1, "last": 2} and record["summary"] == SUMMARY
    assert record["tokensBefore"] == item.tokens_before and record["error"] is None


async def test_a_failed_compaction_is_one_item_with_its_error(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    loaded = await _load(db, await failed(db))
    timeline, items = _fold(loaded)
    (item,) = [i for i in items if isinstance(i, Compaction)]
    assert item.event.type == "compaction/end" and not item.ok and item.error == FAILURE
    assert item.turn == 1 and item.replaced == 0 and item.originals == () and item.summary == ""
    state = timeline.state(loaded.header.id)
    assert state.compactions == 0 and state.failed_compactions == 1


async def test_the_digest_counts_compactions(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    loaded = await _load(db, await compacted(db))
    derived = derive(loaded.header, loaded.events, loaded.inherited_event_count)
    assert derived.compactions == 1 and derived.first_prompt == PROMPT


async def test_a_second_compaction_spans_the_first_and_shows_its_summary_not_its_framing(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [
            text_reply("first answer"),
            text_reply("second answer"),
            text_reply("FIRST SUMMARY"),
            text_reply("third answer"),
            text_reply("SECOND SUMMARY"),
        ]
    )
    config = AgentConfig(model="test-model", retry=NO_DELAY)
    (tmp_path / "w").mkdir()
    agent = await Agent.create(
        SqliteEventStore(tmp_path / "s.db"), model=model, config=config, cwd=tmp_path / "w"
    )
    await agent.run_turn(PROMPT)
    await agent.run_turn(SECOND)
    assert (await agent.compact()).ok
    await agent.run_turn("third " * 60)
    assert (await agent.compact()).ok
    events = list(agent.session.events)
    await agent.aclose()
    timeline = Timeline()
    items = [i for e in events for i in timeline.feed("s", e)]
    first, second = [i for i in items if isinstance(i, Compaction)]
    assert first.turns == (1, 2) and first.summary == "FIRST SUMMARY"
    assert second.turns == (1, 3) and second.summary == "SECOND SUMMARY"
    assert second.shadowed_seqs[0] == first.event.seq
    assert second.originals[0].text == "FIRST SUMMARY"  # the earlier checkpoint, unframed
    assert timeline.state("s").compactions == 2
