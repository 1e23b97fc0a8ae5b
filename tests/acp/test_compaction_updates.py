"""A compaction in ACP: one settled ``tool_call`` card (``full``), live and on ``session/load``;
nothing in ``dsh-compat``. Sessions the real loop compacted (``tests.compacted``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dsh.acp import DshAcpAgent, ReplayModels, Runtime
from dsh.acp.updates import LiveUpdates, Profile
from dsh.store.sqlite import SqliteEventStore
from tests.compacted import FAILURE, SUMMARY, compacted, failed


class Conn:
    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)


async def _loaded(tmp_path: Path, sid: str, db: Path, profile: Profile = "full") -> list[Any]:
    (tmp_path / "scenario").mkdir(exist_ok=True)
    (tmp_path / "scenario" / "replay.override.json").write_text(json.dumps([]))
    runtime = Runtime(
        store=SqliteEventStore(db),
        models=ReplayModels(tmp_path / "scenario"),
        model_name="m",
        profile=profile,
    )
    agent = DshAcpAgent(runtime)
    conn = Conn()
    agent.on_connect(conn)  # type: ignore[arg-type]
    try:
        await agent.load_session(cwd=str(db.parent / "w"), session_id=sid, mcp_servers=[])
    finally:
        await agent.shutdown()
        await runtime.aclose()
    return conn.updates


def _cards(updates: list[Any]) -> list[Any]:
    return [
        u for u in updates if u.session_update == "tool_call" and u.tool_call_id.startswith("compaction-")
    ]


async def test_load_replays_the_compaction_as_a_card_at_its_checkpoint(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    sid = await compacted(db)
    updates = await _loaded(tmp_path, sid, db)
    (card,) = _cards(updates)
    assert card.status == "completed" and card.kind == "other"
    assert card.title.startswith("compacted turns 1–2: 5 messages, ") and card.title.endswith(" tokens")
    assert [c.content.text for c in card.content] == [SUMMARY]
    record = card.field_meta["dsh/compaction"]
    assert record["replacedMessages"] == 5 and record["turns"] == {"first": 1, "last": 2}
    # the replaced prompts replay where they happened, the checkpoint never as a user message
    users = [u.content.text for u in updates if u.session_update == "user_message_chunk"]
    assert len(users) == 3 and users[-1] == "third" and not any("checkpoint" in t for t in users)
    at = updates.index(card)
    assert [u.content.text for u in updates[at + 1 :] if u.session_update == "agent_message_chunk"] == [
        "third answer"
    ]
    assert _cards(await _loaded(tmp_path, sid, db, "dsh-compat")) == []


async def test_a_failed_compaction_is_a_failed_card_live_and_on_load(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    sid = await failed(db)
    (card,) = _cards(await _loaded(tmp_path, sid, db))
    assert card.status == "failed" and FAILURE in card.title and "unchanged" in card.title
    store = SqliteEventStore(db)
    try:
        events = (await store.load(sid)).events
    finally:
        await store.close()
    live = LiveUpdates("full", sid, str(tmp_path))
    (live_card,) = _cards([u for e in events for u in live.event(sid, e)])
    assert live_card.model_dump() == card.model_dump()
    compat = LiveUpdates("dsh-compat", sid, str(tmp_path))
    assert _cards([u for e in events for u in compat.event(sid, e)]) == []
