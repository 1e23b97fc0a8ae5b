"""The live spool contract checks (part of ``dsh.store.contract.CHECKS``; ``dsh.store.spool``)."""

from __future__ import annotations

from dsh.errors import InvalidEventError, StoreClosedError
from dsh.events.chunks import Chunk
from dsh.store.base import EventStore
from dsh.store.contract_tools import ContractCheck, StoreOpener, ensure, raises, sample_header
from dsh.store.spool import SpoolBatch, SpoolingStore


def _text(text: str) -> Chunk:
    return {"type": "text-delta", "index": 0, "text": text}


def _spooling(store: EventStore) -> SpoolingStore:
    ensure(isinstance(store, SpoolingStore), f"{type(store).__name__} keeps no live spool")
    assert isinstance(store, SpoolingStore)
    return store


async def spooled_batches_come_back_in_writing_order(open_store: StoreOpener) -> None:
    """Batches come back as written, per session, with growing cursors (``after`` skips the
    read ones), from another handle too; the session need not exist."""
    writing = await open_store()
    writer = _spooling(writing)
    think: Chunk = {"type": "reasoning-delta", "index": 0, "text": "hm"}
    batches = [
        SpoolBatch("a", 3, 0, (think, _text("Hel"))),
        SpoolBatch("a", 3, 2, (_text("lo ✓"),)),
        SpoolBatch("b", 3, 0, (_text("again"),)),
    ]
    for batch in batches:
        await writer.spool("s", batch)
    await writer.spool("t", SpoolBatch("c", 0, 0, (_text("other"),)))
    reading = await open_store()
    reader = _spooling(reading)
    try:
        rows = await reader.spooled("s")
        ensure([r.batch for r in rows] == batches, f"the batches in writing order, got {rows}")
        cursors = [r.cursor for r in rows]
        ensure(cursors == sorted(set(cursors)) and cursors[0] > 0, f"growing cursors, got {cursors}")
        later = await reader.spooled("s", cursors[0])
        ensure([r.batch for r in later] == batches[1:], "after a cursor: the later batches")
        ensure(await reader.spooled("s", cursors[-1]) == [], "after the last cursor: none")
        ensure([r.batch.stream for r in await reader.spooled("t")] == ["c"], "each session its own")
        ensure(await reader.spooled("nobody") == [], "a session without batches has none")
    finally:
        await reading.close()
        await writing.close()


async def unspooled_batches_are_gone_and_cursors_keep_growing(open_store: StoreOpener) -> None:
    """``unspool(through)`` drops the streams that began at or before ``through``; a batch
    written afterwards still gets a cursor above every earlier one."""
    opened = await open_store()
    store = _spooling(opened)
    try:
        await store.spool("s", SpoolBatch("a", 3, 0, (_text("one"),)))
        await store.spool("s", SpoolBatch("b", 7, 0, (_text("two"),)))
        top = max(r.cursor for r in await store.spooled("s"))
        await store.unspool("s", 3)
        ensure([r.batch.stream for r in await store.spooled("s")] == ["b"], "the later stream stays")
        await store.unspool("s", 10)
        ensure(await store.spooled("s") == [], "everything dropped")
        await store.unspool("s", 10)  # nothing left: a no-op
        await store.spool("s", SpoolBatch("c", 12, 0, (_text("three"),)))
        rows = await store.spooled("s", top)
        ensure([r.batch.stream for r in rows] == ["c"], f"a new batch is read after the old cursor: {rows}")
    finally:
        await opened.close()


async def a_deleted_session_loses_its_spool(open_store: StoreOpener) -> None:
    """Deleting a session drops its batches; only deltas are kept; a closed store refuses."""
    store = await open_store()
    spooling = _spooling(store)
    await store.create(sample_header("s"))
    await spooling.spool("s", SpoolBatch("a", 0, 0, (_text("x"),)))
    await store.delete("s")
    ensure(await spooling.spooled("s") == [], "the deleted session's batches are gone")
    finish: Chunk = {"type": "finish", "reason": {"kind": "stop"}}
    await raises(InvalidEventError, spooling.spool("s", SpoolBatch("a", 0, 0, (finish,))), "a finish chunk")
    await store.close()
    await raises(StoreClosedError, spooling.spooled("s"), "a closed store")


SPOOL_CHECKS: tuple[ContractCheck, ...] = (
    spooled_batches_come_back_in_writing_order,
    unspooled_batches_are_gone_and_cursors_keep_growing,
    a_deleted_session_loses_its_spool,
)
