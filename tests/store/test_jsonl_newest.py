"""A JSONL store's bounded listings (``ListsNewest``): picked from the files' headers, only the
sessions shown decoded — the same rows as the whole listing (the contract checks of
``dsh.store.contract_newest`` run on JSONL too)."""

from __future__ import annotations

from pathlib import Path

from dsh.events import SessionHeader
from dsh.store import JsonlEventStore, LoadedSession
from dsh.store.newest import newest_sessions
from dsh.store.samples import completed_turns


async def _tree(root: Path) -> JsonlEventStore:
    """20 top-level sessions; the oldest has a child created last of all."""
    store = JsonlEventStore(root)
    batch = [
        LoadedSession(SessionHeader(id=f"s{i:02d}", created_at=1_000 + i, cwd="/w"), 0, completed_turns(1))
        for i in range(20)
    ]
    kid = SessionHeader(id="kid", created_at=5_000, cwd="/w", parent_session="s00")
    await store.create_batch([*batch, LoadedSession(kid, 0, completed_turns(1))])
    await store.close()
    return JsonlEventStore(root)


async def test_newest_decodes_only_the_sessions_it_returns(tmp_path: Path, jsonl_decodes: list[str]) -> None:
    store = await _tree(tmp_path)
    jsonl_decodes.clear()
    shown = [s.header.id for s in await newest_sessions(store, 3)]
    assert shown == ["s18", "s19", "kid"]
    assert sorted(jsonl_decodes) == ["kid.jsonl", "s18.jsonl", "s19.jsonl"]
    await store.close()


async def test_newest_roots_decode_only_the_page(tmp_path: Path, jsonl_decodes: list[str]) -> None:
    store = await _tree(tmp_path)
    jsonl_decodes.clear()
    total, shown = await store.newest_roots(2)
    assert (total, [s.header.id for s in shown]) == (21, ["s18", "s19"]), "kid is under s00, not a top row"
    assert sorted(jsonl_decodes) == ["s18.jsonl", "s19.jsonl"]
    total, shown = await store.newest_roots(20)
    assert (
        total == 21
        and [s.header.id for s in shown][:2] == ["s00", "s01"]
        and "kid" in {s.header.id for s in shown}
    )
    await store.close()
