"""What a JSONL directory keeps of every file's header (``dsh.store.jsonl_kept.Facts``): the
walks that pick sessions — a bounded listing, a parent's children, ``--continue`` — open no
unchanged file to decide; facts of a changed file, or naming another file, are not used, and
facts that lie never show a row or resume a session their header does not vouch for."""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from dsh.events import SessionHeader
from dsh.store import JsonlEventStore, LoadedSession
from dsh.store.jsonl_kept import KEPT_NAME, Facts
from dsh.store.newest import newest_sessions
from dsh.store.notices import warnings_to
from dsh.store.samples import completed_turns


async def _tree(root: Path) -> None:
    """20 top-level sessions in /w, then one in /x created last, and a child of s00."""
    store = JsonlEventStore(root)
    batch = [
        LoadedSession(SessionHeader(id=f"s{i:02d}", created_at=1_000 + i, cwd="/w"), 0, completed_turns(1))
        for i in range(20)
    ]
    other = SessionHeader(id="x", created_at=9_000, cwd="/x")
    kid = SessionHeader(id="kid", created_at=5_000, cwd="/w", parent_session="s00")
    await store.create_batch([*batch, LoadedSession(other, 0, completed_turns(1)), LoadedSession(kid, 0, [])])
    await store.close()


async def _newest(root: Path, count: int = 3) -> list[tuple[str, int]]:
    store = JsonlEventStore(root)
    try:
        return [(s.header.id, s.header.created_at) for s in await newest_sessions(store, count)]
    finally:
        await store.close()


def _facts(root: Path) -> dict[str, list[object]]:
    facts: dict[str, list[object]] = orjson.loads((root / KEPT_NAME).read_bytes())["facts"]
    return facts


def _forge(root: Path, name: str, **fields: object) -> None:
    """Rewrite some of the kept facts of the file ``name`` (by ``Facts`` field), its key kept."""
    raw = _facts(root)[name]
    for field, value in fields.items():
        raw[3 + Facts._fields.index(field)] = value
    _rewrite(root, {name: raw})


def _rewrite(root: Path, edit: dict[str, object]) -> None:
    raw = orjson.loads((root / KEPT_NAME).read_bytes())
    raw["facts"].update(edit)
    (root / KEPT_NAME).write_bytes(orjson.dumps(raw))


async def test_a_second_bounded_listing_opens_no_file_to_pick(
    tmp_path: Path, jsonl_header_reads: list[str], jsonl_decodes: list[str]
) -> None:
    await _tree(tmp_path)
    first = await _newest(tmp_path)
    assert first == [("s19", 1_019), ("kid", 5_000), ("x", 9_000)]
    assert len(jsonl_header_reads) == 22, "the first walk reads every file's header"
    assert len(_facts(tmp_path)) == 22, "and keeps the facts of every file"
    jsonl_header_reads.clear()
    jsonl_decodes.clear()
    assert await _newest(tmp_path) == first, "a fresh store picks the same rows"
    assert jsonl_header_reads == [] and jsonl_decodes == [], (jsonl_header_reads, jsonl_decodes)


async def test_the_facts_of_a_file_changed_since_are_read_again(
    tmp_path: Path, jsonl_header_reads: list[str]
) -> None:
    await _tree(tmp_path)
    await _newest(tmp_path)
    store = JsonlEventStore(tmp_path)
    await store.append(
        "s05", completed_turns(1, start_seq=len(completed_turns(1)), first_turn=2), durable=True
    )
    await store.close()
    jsonl_header_reads.clear()
    assert await _newest(tmp_path) == [("s19", 1_019), ("kid", 5_000), ("x", 9_000)]
    assert jsonl_header_reads == ["s05.jsonl"]


async def test_facts_naming_another_file_are_not_used(tmp_path: Path, jsonl_header_reads: list[str]) -> None:
    await _tree(tmp_path)
    await _newest(tmp_path)
    _forge(tmp_path, "s03.jsonl", id="s99", created_at=99_999)
    jsonl_header_reads.clear()
    assert await _newest(tmp_path) == [("s19", 1_019), ("kid", 5_000), ("x", 9_000)]
    assert jsonl_header_reads == ["s03.jsonl"], "read from its file instead"
    assert _facts(tmp_path)["s03.jsonl"][3:5] == ["s03", 1_003], "and kept right"


async def test_facts_naming_no_file_at_all_are_not_used(
    tmp_path: Path, jsonl_header_reads: list[str]
) -> None:
    await _tree(tmp_path)
    await _newest(tmp_path)
    _forge(tmp_path, "s04.jsonl", id="x" * 300)
    jsonl_header_reads.clear()
    assert await _newest(tmp_path) == [("s19", 1_019), ("kid", 5_000), ("x", 9_000)]
    assert jsonl_header_reads == ["s04.jsonl"], "an id no file can be named: read from its file"


async def test_facts_that_lie_pick_rows_but_never_show_them_wrong(tmp_path: Path) -> None:
    await _tree(tmp_path)
    await _newest(tmp_path)
    _forge(tmp_path, "s03.jsonl", created_at=99_999)
    shown = await _newest(tmp_path, 1)
    assert shown == [("s03", 1_003)], "picked by its forged creation, shown by its header"


async def test_continue_checks_the_session_facts_found(tmp_path: Path) -> None:
    await _tree(tmp_path)
    store = JsonlEventStore(tmp_path)
    assert await store.latest_top_level("/w") == "s19"
    await store.close()
    _forge(tmp_path, "x.jsonl", cwd="/w")  # x claims /w: the newest there
    store = JsonlEventStore(tmp_path)
    assert await store.latest_top_level("/w") == "s19", "x's header says /x"
    assert await store.latest_top_level("/x") == "x"
    await store.close()


async def test_continue_skips_a_file_whose_header_no_longer_reads(tmp_path: Path) -> None:
    await _tree(tmp_path)
    store = JsonlEventStore(tmp_path)
    assert await store.latest_top_level("/w") == "s19"
    await store.close()
    path = tmp_path / "s19.jsonl"
    st, raw = path.stat(), path.read_bytes()
    path.write_bytes(b"#" * raw.index(b"\n") + raw[raw.index(b"\n") :])  # same size, same time
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    warned: list[str] = []
    store = JsonlEventStore(tmp_path)
    with warnings_to(warned.append):
        assert await store.latest_top_level("/w") == "s18", "s19's facts still say /w: its header is read"
    await store.close()
    assert len(warned) == 1 and "s19.jsonl" in warned[0], warned


async def test_a_parents_children_are_checked_against_their_headers(tmp_path: Path) -> None:
    await _tree(tmp_path)
    await _newest(tmp_path)
    _forge(tmp_path, "s07.jsonl", parent_session="s00")
    store = JsonlEventStore(tmp_path)
    assert [s.header.id for s in await store.children("s00")] == ["kid"]
    await store.close()


async def test_facts_of_deleted_or_unreadable_shape_are_dropped(tmp_path: Path) -> None:
    await _tree(tmp_path)
    await _newest(tmp_path)
    _rewrite(
        tmp_path,
        {
            "s01.jsonl": 5,
            "s02.jsonl": ["not", "facts"],
            "gone.jsonl": [1, 2, 3, "gone", 1, None, None, False],
        },
    )
    assert await _newest(tmp_path) == [("s19", 1_019), ("kid", 5_000), ("x", 9_000)]
    kept = _facts(tmp_path)
    assert "gone.jsonl" not in kept and kept["s01.jsonl"][3] == "s01" and kept["s02.jsonl"][3] == "s02"
    store = JsonlEventStore(tmp_path)
    await store.delete("s01")
    await store.close()
    assert "s01.jsonl" not in _facts(tmp_path)
