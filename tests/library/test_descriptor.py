"""One ``subagent/descriptor`` parser and one ``child_kind`` rule, used by every reader."""

from __future__ import annotations

from pathlib import Path

from dsh.cli.sessions_cmd import session_kind
from dsh.events import Event, SessionHeader
from dsh.model import Delegation
from dsh.session.digest import derive
from dsh.snapshot.transcript import child_kind
from dsh.store import LoadedSession
from dsh.store.memory import MemoryEventStore
from dsh.subagents.lifecycle import stored_children


async def test_an_unseeded_sessions_fork_child_is_a_fork_for_every_reader(tmp_path: Path) -> None:
    store = MemoryEventStore()
    await store.create(SessionHeader(id="parent", created_at=1, cwd=str(tmp_path)))
    child = await store.fork("parent", child_id="child")  # what `dsh sessions fork` does: no turn yet
    assert (child.inherited_event_count, child.header.is_seeded, child.header.origin) == (0, False, None)
    assert session_kind(child.header, child.own_events) == "fork"
    assert child_kind(child) == "fork"  # the scenario transcript agrees with `dsh sessions tree`


def _descriptor(provider: str) -> Event:
    data = {
        "mode": "one-shot",
        "provider": provider,
        "label": "x",
        "delegation": {"parentSession": "p", "callId": "c1"},
    }
    return Event("subagent/descriptor", 1, 0, data)


def test_the_descriptor_decides_then_the_header() -> None:
    sub = SessionHeader(id="c", created_at=1, parent_session="p", origin="subagent", delegation_depth=1)
    start = Event("turn/start", 0, 0, {"turn": 1})
    for provider in ("spawn", "fork"):
        loaded = LoadedSession(sub, 0, [start, _descriptor(provider)])
        assert child_kind(loaded) == provider == session_kind(sub, loaded.own_events)
    plain = LoadedSession(sub, 0, [start])
    assert child_kind(plain) == "spawn" == session_kind(sub, plain.own_events)
    top = SessionHeader(id="t", created_at=1)
    assert child_kind(LoadedSession(top, 0, [])) == "primary" and session_kind(top, []) is None


async def test_every_reader_takes_label_call_id_and_mode_from_the_one_parser(tmp_path: Path) -> None:
    store = MemoryEventStore()
    await store.create(SessionHeader(id="p", created_at=1, cwd=str(tmp_path)))
    sub = SessionHeader(id="c", created_at=2, parent_session="p", origin="subagent", delegation_depth=1)
    await store.create(sub)
    data = {
        "mode": "continuable",
        "provider": "fork",
        "label": "scout",
        "delegation": {"parentSession": "p", "callId": "call-7"},
    }
    start = Event("turn/start", 0, 0, {"turn": 1})
    await store.append("c", [start, Event("subagent/descriptor", 1, 0, data)])
    loaded = await store.load("c")
    derived = derive(loaded.header, loaded.events, loaded.inherited_event_count)
    assert (derived.kind, derived.label, derived.call_id) == ("fork", "scout", "call-7")
    (stored,) = await stored_children(store, "p")
    assert (stored.label, stored.delegation) == ("scout", Delegation("p", "call-7"))
    assert session_kind(loaded.header, loaded.own_events) == "fork" == child_kind(loaded)
