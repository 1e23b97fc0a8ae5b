"""Live deltas on Temporal without a server: a worker's model step spools its deltas
(``dsh.temporal.spooling``) and ``LiveTurn`` (``dsh.temporal.live_text``) feeds them with the
tail's events in the in-process order, each once, a lost worker's attempt restarted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.events.messages import user_message
from dsh.events.vocabulary import ASSISTANT_MESSAGE
from dsh.loop import Agent, AgentConfig, Feed
from dsh.loop.retry import NO_DELAY
from dsh.model import ModelRequest
from dsh.model.scripted import text_reply
from dsh.store.memory import MemoryEventStore, MemorySpace
from dsh.store.spool import SpoolBatch, Spooled
from dsh.temporal.live_text import LiveTurn
from dsh.temporal.spooling import spooling
from tests.patience import patience


def _text(text: str) -> Chunk:
    return {"type": "text-delta", "index": 0, "text": text}


def _settlement(seq: int, *texts: str) -> Event:
    chunks = [{"type": "block-start", "index": 0, "blockType": "text"}, *map(_text, texts)]
    chunks.append({"type": "finish", "reason": {"kind": "stop"}})
    data = {
        "turn": 1,
        "step": 1,
        "message": {"role": "assistant", "content": [{"type": "text", "text": "".join(texts)}]},
        "stream": {"chunks": chunks, "dt": [0] * (len(chunks) - 1)},
    }
    return Event(type=ASSISTANT_MESSAGE, seq=seq, time=1, data=data)


def _other(seq: int) -> Event:
    return Event(type="step/start", seq=seq, time=1, data={"turn": 1, "step": 1})


class Seen:
    """What a ``TurnOutput`` would be fed, in order: ``event:SEQ``, ``text:...``, ``restart``."""

    def __init__(self, from_seq: int = 0) -> None:
        self.items: list[str] = []
        feed = Feed()
        feed.on_event(lambda _sid, event: self.items.append(f"event:{event.seq}"))
        feed.on_chunk(lambda _sid, chunk: self.items.append(f"text:{chunk.get('text')}"))
        self.live = LiveTurn("s", feed, from_seq, lambda: self.items.append("restart"))

    def batch(self, stream: str, at: int, first: int, *texts: str) -> None:
        self.live.batches([Spooled(0, SpoolBatch(stream, at, first, tuple(map(_text, texts))))])


def test_spooled_deltas_show_before_the_settlement_and_once() -> None:
    seen = Seen()
    seen.live.event(_other(0))
    seen.batch("a", 1, 0, "Hel", "lo")
    seen.batch("a", 1, 1, "lo", " wor")  # a batch seen again (a JSONL rewrite): only what is new
    assert seen.items == ["event:0", "text:Hel", "text:lo", "text: wor"]
    seen.live.event(_settlement(1, "Hel", "lo", " wor", "ld"))
    seen.batch("a", 1, 3, "ld")  # read after the settlement: stale
    assert seen.items == ["event:0", "text:Hel", "text:lo", "text: wor", "text:ld", "event:1"]


def test_a_stream_waits_for_the_events_logged_before_it_and_a_gap_waits_for_the_settlement() -> None:
    seen = Seen()
    seen.batch("a", 2, 0, "Hi")  # began after seq 1, which the tail has not delivered yet
    assert seen.items == []
    seen.live.event(_other(0))
    seen.live.event(_other(1))
    seen.batch("a", 2, 2, " late")  # a batch missed in between: the spool shows no more
    assert seen.items == ["event:0", "event:1", "text:Hi"]
    seen.live.event(_settlement(2, "Hi", " there", " late"))
    assert seen.items[3:] == ["text: there", "text: late", "event:2"]


def test_without_the_spool_the_settlement_streams_the_whole_answer() -> None:
    seen = Seen(from_seq=5)
    seen.batch("old", 3, 0, "an earlier turn's")  # left by a dead worker before this turn
    seen.live.event(_settlement(5, "a", "b"))
    assert seen.items == ["text:a", "text:b", "event:5"]


def test_a_lost_workers_attempt_is_restarted_and_its_late_batches_ignored() -> None:
    seen = Seen()
    seen.batch("lost", 0, 0, "Hel")
    seen.batch("retry", 0, 0, "Hi")  # the step asked again on another worker
    seen.batch("lost", 0, 1, "lo")  # the lost worker was only stalled: ignored
    seen.live.event(_settlement(0, "Hi", " there"))
    assert seen.items == ["text:Hel", "restart", "text:Hi", "text: there", "event:0"]


def test_a_settlement_that_does_not_hold_what_was_shown_restarts_the_text() -> None:
    seen = Seen()
    seen.batch("lost", 0, 0, "Hel")
    seen.live.event(_settlement(0, "Hi"))  # the retry's batches were never read
    assert seen.items == ["text:Hel", "restart", "text:Hi", "event:0"]


class HeldModel:
    """Streams ``texts`` one delta at a time, holding after the first until ``go`` is set."""

    provider = "test"

    def __init__(self, *texts: str) -> None:
        self.texts = texts
        self.held = asyncio.Event()
        self.go = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        for chunk in text_reply("".join(self.texts)):
            if chunk["type"] != "text-delta":
                yield chunk
                continue
            for number, text in enumerate(self.texts):
                yield _text(text)
                if number == 0:
                    self.held.set()
                    await self.go.wait()

    async def aclose(self) -> None:
        return None


async def test_a_workers_model_step_spools_its_deltas_while_it_streams(tmp_path: Path) -> None:
    space = MemorySpace()
    model = HeldModel("Hello", " world")
    config = AgentConfig(model="test-model", retry=NO_DELAY)
    agent = await Agent.create(MemoryEventStore(space), model=model, tools=(), config=config, cwd=tmp_path)
    store = MemoryEventStore(space)
    stepwise = agent.stepwise()
    turn = await stepwise.begin(0)
    async with spooling(agent, store):
        step = asyncio.create_task(stepwise.model_step(turn, 1, 0, user_message("go")))
        await model.held.wait()
        async with asyncio.timeout(patience(10)):
            while not await store.spooled(agent.id):  # written within the flush interval
                await asyncio.sleep(0.01)
        (row,) = await store.spooled(agent.id)
        assert row.batch.chunks == (_text("Hello"),) and row.batch.first == 0
        assert row.batch.at == agent.session.next_seq  # where the settlement goes
        model.go.set()
        await step
    assert await store.spooled(agent.id) == []  # settled: dropped
