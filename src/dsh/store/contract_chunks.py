"""Contract checks for long runs of stream chunks (what SQLite packs into rows,
``dsh.store.chunk_runs``): every read sees exactly the events appended, whatever the store
does with them, wherever a read starts."""

from __future__ import annotations

from dsh.events import Event
from dsh.events.deferred import DEFERRED_KEYS, OPAQUE_TYPES
from dsh.store.contract_tools import ContractCheck, StoreOpener, ensure, sample_header
from dsh.store.samples import completed_turns

CHUNKS = 1_300
"""Chunks in the long step: more than one packed row holds (1,024)."""


def chunked_log() -> list[Event]:
    """A completed turn, then one whose step streams :data:`CHUNKS` chunks (times going back
    and forth, an ignorable one, a long one, non-ASCII text) before its settlement."""
    events = completed_turns(1)
    seq = len(events)
    t0 = 1_700_000_100_000

    def add(etype: str, data: object, *, time: int = t0, ignorable: bool = False) -> None:
        events.append(Event(etype, len(events), time, data, ignorable=ignorable))

    add("turn/start", {"turn": 2})
    add("user/message", {"role": "user", "content": [{"type": "text", "text": "go on"}]})
    add("step/start", {"turn": 2, "step": 1})
    for k in range(CHUNKS):
        text = "long " * 400 if k == 700 else f"w{k} é\n\u2028 "
        chunk = {"turn": 2, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": text}}
        add("assistant/chunk", chunk, time=t0 + k * 7 - (k % 3) * 5, ignorable=k == 400)
    add("step/end", {"turn": 2, "step": 1})
    add("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
    ensure(events[seq].seq == seq, "contiguous")
    return events


async def _write(opener: StoreOpener, events: list[Event]) -> None:
    """A seed ending inside the chunks, then appends of uneven batches (some buffered)."""
    store = await opener()
    seed = 40
    await store.create(sample_header("s"), events[:seed])
    for n, k in enumerate(range(seed, len(events), 377)):
        await store.append("s", events[k : k + 377], durable=n % 2 == 0)
    await store.close()


def _starts(events: list[Event]) -> list[int]:
    chunks = [e.seq for e in events if e.type == "assistant/chunk"]
    return [0, chunks[0], chunks[1], chunks[500], chunks[1_100], chunks[-1], len(events) - 50, len(events)]


async def chunk_runs_read_back_as_appended(open_store: StoreOpener) -> None:
    """Every read of a long run of chunks — a load, a surface read, ``read_from`` anywhere in
    it, after a reopen — sees the events appended (a surface read may leave a chunk's data out)."""
    events = chunked_log()
    await _write(open_store, events)
    store = await open_store()
    ensure((await store.load("s")).events == events, "a load is every event as appended")
    surface = (await store.load("s", streams=False)).events
    ensure(len(surface) == len(events), "a surface read returns every event")
    for got, want in zip(surface, events, strict=True):
        ensure((got.type, got.seq, got.time) == (want.type, want.seq, want.time), f"envelope of #{want.seq}")
        if got.partial and got.type in OPAQUE_TYPES:
            ensure(got.data is None and got.ignorable == want.ignorable, f"a partial chunk (#{want.seq})")
        elif got.partial:
            kept = {k: v for k, v in want.data.items() if k not in DEFERRED_KEYS}
            ensure(got.data == kept, f"a partial settlement lacks its stream alone (#{want.seq})")
        else:
            ensure(got == want, f"a whole event is as appended (#{want.seq})")
    fresh = (await store.load("s", streams=False)).events  # indexed and sliced before any walk
    seen = list(surface)
    for at in (len(events) - 1, _starts(events)[4] + 3, -len(events) + _starts(events)[2], 0):
        ensure(fresh[at] == seen[at], f"a surface read's event [{at}]")
    ensure(fresh[100:900] == seen[100:900] and fresh[-60:] == seen[-60:], "slices of a surface read")
    ensure(fresh == seen, "a surface read indexed first, then whole")
    backwards = reversed((await store.load("s", streams=False)).events)
    ensure(list(backwards) == seen[::-1], "a surface read walked backwards")
    for start in _starts(events):
        ensure(await store.read_from("s", start) == events[start:], f"read_from({start})")
    cut_short = events[:-2]  # a turn that crashed mid-stream: the log ends with chunks
    await store.create(sample_header("o"), cut_short[:600])
    await store.append("o", cut_short[600:], durable=True)
    ensure((await store.load("o")).events == cut_short, "a log ending with chunks")
    ensure(len((await store.load("o", streams=False)).events) == len(cut_short), "its surface read")
    ensure(await store.read_from("o", len(cut_short) - 5) == cut_short[-5:], "its tail")
    await store.close()


async def forks_of_chunked_sessions_read_back_whole(open_store: StoreOpener) -> None:
    """A fork of a session with long chunk runs holds its prefix exactly; so does a fork of it."""
    events = chunked_log()
    await _write(open_store, events)
    store = await open_store()
    child = await store.fork("s", child_id="c")
    cut = child.inherited_event_count
    ensure(cut == len(events) and child.events[:cut] == events, "the child's prefix is the parent's log")
    await store.append("c", [Event("turn/start", cut + 1, 5, {"turn": 3})], durable=True)
    grandchild = await store.fork("c", child_id="g", at=2)
    ensure(grandchild.events[:cut] == events, "a fork of a fork")
    for start in _starts(events):
        ensure(
            await store.read_from("g", start) == grandchild.events[start:], f"the fork's read_from({start})"
        )
    await store.close()


CHUNK_CHECKS: tuple[ContractCheck, ...] = (
    chunk_runs_read_back_as_appended,
    forks_of_chunked_sessions_read_back_whole,
)
