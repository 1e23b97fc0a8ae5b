"""Contract checks for the cheap reads: surface reads (``load(streams=False)``,
``dsh.events.deferred``) and ``header(id)``, every backend."""

from __future__ import annotations

from dataclasses import replace

from dsh.errors import InvalidEventError, SessionNotFoundError
from dsh.events import Event
from dsh.events.deferred import DEFERRED_KEYS, OPAQUE_TYPES, SPLIT_TYPES
from dsh.store.contract_tools import ContractCheck, StoreOpener, ensure, raises, sample_header
from dsh.store.samples import completed_turn, completed_turns


def long_log() -> list[Event]:
    """Two completed turns whose settlements carry long streams, then a version-0 chunk."""
    events = completed_turns(1) + completed_turn(6, 2, reply="a long reply " * 120)
    chunk = {"turn": 2, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x"}}
    return [*events, Event("assistant/chunk", len(events), 9, chunk)]


async def surface_reads_defer_only_streams(open_store: StoreOpener) -> None:
    """A surface read returns every event; a partial one is a settlement without its deferred
    keys or a chunk without data; every other event is as appended; a load is whole again."""
    store = await open_store()
    events = long_log()
    await store.create(sample_header("s"), events)
    surface = (await store.load("s", streams=False)).events
    ensure(len(surface) == len(events), "a surface read returns every event")
    for got, want in zip(surface, events, strict=True):
        ensure((got.type, got.seq, got.time) == (want.type, want.seq, want.time), f"envelope of #{want.seq}")
        if not got.partial:
            ensure(got == want, f"a whole event is as appended (#{want.seq})")
        elif got.type in OPAQUE_TYPES:
            ensure(got.data is None, f"a partial chunk has no data (#{want.seq})")
        else:
            ensure(got.type in SPLIT_TYPES, f"only settlements and chunks are partial (#{want.seq})")
            kept = {k: v for k, v in want.data.items() if k not in DEFERRED_KEYS}
            ensure(got.data == kept, f"a partial settlement keeps all but its stream and wire (#{want.seq})")
    ensure((await store.load("s")).events == events, "a load after a surface read is whole")
    await store.close()


async def partial_events_are_never_written(open_store: StoreOpener) -> None:
    """A partial event is refused by ``create`` and ``append``: its stream would be lost."""
    store = await open_store()
    events = long_log()
    await store.create(sample_header("s"), events)
    await store.create(sample_header("t"))
    partial = replace(events[-1], partial=True)
    await raises(InvalidEventError, store.create(sample_header("u"), [*events[:-1], partial]), "create")
    await raises(InvalidEventError, store.append("t", [partial.with_seq(0)]), "append")
    ensure(not await store.exists("u") and (await store.load("t")).events == [], "nothing was stored")
    await store.close()


async def header_reads_the_header_alone(open_store: StoreOpener) -> None:
    """``header(id)`` is the stored header; an unknown id is ``SessionNotFoundError``."""
    store = await open_store()
    header = sample_header("s", created_at=7)
    await store.create(header, long_log())
    ensure(await store.header("s") == header == (await store.load("s")).header, "the stored header")
    await raises(SessionNotFoundError, store.header("nope"), "an unknown id")
    await store.close()


async def listings_know_the_last_time_or_say_not(open_store: StoreOpener) -> None:
    """A summary's ``last_time`` is the last event's time, or ``None`` (not read, or no event)."""
    store = await open_store()
    events = long_log()
    await store.create(sample_header("s"), events)
    await store.create(sample_header("empty", created_at=2_000))
    by_id = {s.header.id: s for s in await store.list_sessions()}
    ensure(by_id["s"].last_time in (None, events[-1].time), "the last event's time")
    ensure(by_id["empty"].last_time is None, "no event, no time")
    await store.close()


def envelope_log() -> list[Event]:
    """A completed turn, then every envelope a row stores apart from its data: a surface op
    (``"append"``, a replace with and without ``sourceEventSeqs``), source seqs alone, an
    ignorable event of an unknown type, with and without the others."""
    events = completed_turns(1)
    n = len(events)
    message = {"role": "user", "content": [{"type": "text", "text": "summary"}], "source": {"kind": "user"}}
    replace_op = {"op": "replace", "start": 0, "end": 1}
    return [
        *events,
        Event("user/message", n, 9, message, "append"),
        Event("user/message", n + 1, 9, message, replace_op),
        Event("user/message", n + 2, 9, message, replace_op, (0, n)),
        Event("session/title", n + 3, 9, {"title": "t"}, None, (n + 1,)),
        Event("x-future/note", n + 4, 9, {"any": [1, {"thing": None}]}, None, None, True),
        Event("x-future/mark", n + 5, 9, {}, "append", (2,), True),
    ]


async def every_envelope_reads_back(open_store: StoreOpener) -> None:
    """Surface op, source seqs and ignorable read back as appended: in a load, a surface read
    and a tail (the SQL stores select the three as one column, ``dsh.store.rows.EventRow``)."""
    store = await open_store()
    events = envelope_log()
    await store.create(sample_header("s"), events)
    ensure((await store.load("s")).events == events, "a load")
    surface = (await store.load("s", streams=False)).events
    ensure(surface[-6:] == events[-6:], "a surface read")
    ensure(await store.read_from("s", len(events) - 6) == events[-6:], "a tail")
    await store.close()


SURFACE_CHECKS: tuple[ContractCheck, ...] = (
    every_envelope_reads_back,
    listings_know_the_last_time_or_say_not,
    surface_reads_defer_only_streams,
    partial_events_are_never_written,
    header_reads_the_header_alone,
)
