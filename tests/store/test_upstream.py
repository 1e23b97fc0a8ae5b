"""The original's recorded version-0 logs: they decode, keep their cut, and survive import/export."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from dsh.events.vocabulary import SESSION_END_SEED
from dsh.store import decode_log, export_session, import_log, read_log_file
from dsh.store.contract import StoreOpener
from tests.store.conftest import OpenerFactory

pytestmark = pytest.mark.fixtures


def _logs(upstream: Path) -> list[Path]:
    logs = sorted(upstream.glob("*/session*.jsonl"))
    assert logs, f"no session logs under {upstream}"
    return logs


async def test_every_log_decodes_with_contiguous_seqs(upstream: Path) -> None:
    for path in _logs(upstream):
        decoded = await read_log_file(path)
        assert decoded.version == 0 and decoded.warnings == (), path
        assert [e.seq for e in decoded.events] == list(range(len(decoded.events))), path
        assert decoded.import_problem is None, path
        physical = len(path.read_bytes().splitlines()) - 1
        assert len(decoded.events) >= physical, path


async def test_packed_rows_expand(upstream: Path) -> None:
    decoded = await read_log_file(upstream / "packed-chunks" / "session.jsonl")
    raw = (upstream / "packed-chunks" / "session.jsonl").read_bytes()
    assert b'"type":"tool-call-chunks"' in raw
    deltas = Counter(e.data["chunk"]["type"] for e in decoded.events if e.type == "assistant/chunk")
    assert deltas["reasoning-delta"] > 0 and deltas["tool-call-delta"] > 0 and deltas["text-delta"] > 0


async def test_fork_child_reports_its_inherited_cut(upstream: Path) -> None:
    decoded = await read_log_file(upstream / "subagent-fork-in-process" / "session.1.jsonl")
    assert decoded.header.is_seeded and decoded.inherited_event_count == 42
    assert decoded.events[42].type == SESSION_END_SEED and decoded.events[42].data == {}
    parent = await read_log_file(upstream / "subagent-fork-in-process" / "session.jsonl")
    assert decoded.header.parent_session == parent.header.id
    assert decoded.events[:42] == parent.events[:42], "the child's prefix is the parent's first turn"
    imported = decoded.for_import()
    assert imported.events[42].data == {"inherited": True} and imported.inherited_event_count == 42


async def test_spawn_child_is_unseeded(upstream: Path) -> None:
    decoded = await read_log_file(upstream / "subagent-spawn-in-process" / "session.1.jsonl")
    assert not decoded.header.is_seeded and decoded.inherited_event_count == 0
    assert decoded.header.origin == "subagent" and decoded.header.delegation_depth == 1


async def test_import_then_export_keeps_every_event_and_the_cut(
    upstream: Path, backend: str, make_opener: OpenerFactory, tmp_path: Path
) -> None:
    # One store per scenario: recordings of different scenarios may share a session id
    # (hook-cc-invalid-matcher reuses text-turn's), and a store refuses a second import.
    for scenario in sorted({p.parent for p in _logs(upstream)}):
        store = await make_opener(backend, tmp_path / scenario.name)()
        for path in sorted(scenario.glob("session*.jsonl")):
            decoded = await read_log_file(path)
            stored = await import_log(store, path)
            sid = stored.header.id  # the recorded id; a fresh one for the token {{sessionId}}
            assert sid == decoded.header.id or (decoded.header.id == "{{sessionId}}" and "{{" not in sid)
            exported = await export_session(store, sid)
            again = decode_log(exported, f"export of {path}")
            assert again.version == 2
            assert again.events == stored.events == decoded.for_import().events, path
            assert again.inherited_event_count == decoded.inherited_event_count, path
            assert again.header == decoded.header.evolve(id=sid), path
            assert Counter(e.type for e in again.events) == Counter(e.type for e in decoded.events), path
        await store.close()


async def test_an_imported_fork_child_keeps_its_cut_across_reopen(
    upstream: Path, opener: StoreOpener
) -> None:
    store = await opener()
    scenario = upstream / "subagent-fork-in-process"
    for path in sorted(scenario.glob("session*.jsonl")):
        await import_log(store, path)
    parent = await read_log_file(scenario / "session.jsonl")
    children = await store.children(parent.header.id)
    assert [(c.header.is_seeded, c.inherited_event_count) for c in children] == [(True, 42)]
    await store.close()
    reopened = await opener()
    child = await read_log_file(scenario / "session.1.jsonl")
    assert (await reopened.load(child.header.id)).inherited_event_count == 42
    await reopened.close()
