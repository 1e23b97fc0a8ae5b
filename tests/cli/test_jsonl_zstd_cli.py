"""The zstd JSONL store by its URL spelling, ``jsonl+zstd:DIR``, through the real CLI: sessions
written by the library are listed, shown, forked, exported, imported and removed; the same root opened
as plain ``jsonl:DIR`` is one error line naming the file."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dsh.events import SessionHeader
from dsh.store import LoadedSession, encode_log, open_store
from dsh.store.samples import completed_turns

from .conftest import Dsh, assert_user_error

HEADER = SessionHeader(id="s1", created_at=1_700_000_000_000, cwd="/w")
EVENTS = completed_turns(2)


async def _write(url: str) -> None:
    store = open_store(url)
    await store.create(HEADER)
    await store.append("s1", EVENTS[:6])
    await store.append("s1", EVENTS[6:])
    await store.close()


def test_a_zstd_store_is_spelled_jsonl_zstd_on_the_command_line(tmp_path: Path) -> None:
    root = tmp_path / "zs"
    url = f"jsonl+zstd:{root}"
    asyncio.run(_write(url))
    dsh = Dsh(url, tmp_path)
    (listed,) = dsh("sessions", "list", "--json").json()
    assert (listed["id"], listed["eventCount"], listed["status"]) == ("s1", len(EVENTS), "completed")
    assert dsh("sessions", "show", "s1", "--json").json()["eventCount"] == len(EVENTS)
    dsh("sessions", "fork", "s1", "--id", "kid").ok()
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == [
        "kid.jsonl.zst",
        "s1.jsonl.zst",
    ]
    exported = dsh("sessions", "export", "s1").ok().stdout
    assert exported.encode() == encode_log(LoadedSession(HEADER, 0, EVENTS)), "exports stay plain v2 logs"
    log = tmp_path / "s2.jsonl"
    log.write_bytes(encode_log(LoadedSession(HEADER.evolve(id="s2"), 0, EVENTS)))
    dsh("sessions", "import", str(log)).ok()
    assert (root / "s2.jsonl.zst").read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    ids = [s["id"] for s in dsh("sessions", "list", "--json").json()]
    assert sorted(ids) == ["kid", "s1", "s2"]
    dsh("sessions", "rm", "s2", "--yes").ok()
    assert not (root / "s2.jsonl.zst").exists() and not (root / ".s2.jsonl.zst.seal").exists()


def test_a_zstd_root_opened_as_plain_jsonl_is_one_error_line_naming_a_file(tmp_path: Path) -> None:
    root = tmp_path / "zs"
    asyncio.run(_write(f"jsonl+zstd:{root}"))
    dsh = Dsh(f"jsonl:{root}", tmp_path)
    for argv in (("sessions", "list"), ("sessions", "show", "s1")):
        assert_user_error(dsh(*argv), "encoding mismatch", str(root / "s1.jsonl.zst"), "jsonl+zstd:")
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["s1.jsonl.zst"]
