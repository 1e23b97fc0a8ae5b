"""The listing digest is kept with the log: when the agent that wrote a session closes, or a turn
run piece by piece ends, a store that keeps digests (SQLite) holds the session's, valid for its
event count, so a listing reads it instead of folding the log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dsh.events.messages import user_message
from dsh.loop import Agent, AgentConfig
from dsh.loop.retry import NO_DELAY
from dsh.model.scripted import ScriptedModel, text_reply
from dsh.store.sqlite import SqliteEventStore


async def _kept(db: Path, sid: str) -> dict[str, object]:
    store = SqliteEventStore(db)
    try:
        (summary,) = [s for s in await store.list_sessions() if s.header.id == sid]
        kept = await store.kept_digests([sid])
    finally:
        await store.close()
    count, raw = kept[sid]
    assert count == summary.event_count  # valid for the log as stored
    digest: dict[str, object] = json.loads(raw)
    return digest


async def test_an_agent_keeps_the_digest_a_listing_reads_when_it_closes(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SqliteEventStore(db)
    model = ScriptedModel([text_reply("first answer"), text_reply("second answer")])
    config = AgentConfig(model="test-model", retry=NO_DELAY)
    async with await Agent.create(store, model=model, config=config, cwd=tmp_path) as agent:
        await agent.run_turn("name the rivers of Europe")
        await agent.run_turn("and of Asia")
        sid = agent.id
    await store.close()
    kept = await _kept(db, sid)
    assert kept["status"] == "completed" and kept["title"] == "name the rivers of Europe"
    assert kept["first_prompt"] == "name the rivers of Europe" and kept["model"] == "test-model"

    code = (
        "import sys, json\nfrom dsh.cli.app import app\n"
        f"try:\n    app(['sessions', 'list', '--store', 'sqlite:{db}'], standalone_mode=False)\n"
        "except SystemExit:\n    pass\nprint(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "name the rivers" in done.stdout
    assert "dsh.session.timeline.fold" not in json.loads(done.stdout.splitlines()[-1])  # nothing derived


async def test_a_turn_run_piece_by_piece_keeps_it_when_it_ends(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SqliteEventStore(db)
    config = AgentConfig(model="test-model", retry=NO_DELAY)
    model = ScriptedModel([text_reply("done")])
    agent = await Agent.create(store, model=model, config=config, cwd=tmp_path)
    stepwise = agent.stepwise()
    turn = await stepwise.begin(0)
    await stepwise.model_step(turn, 1, 0, user_message("piece by piece"))
    await stepwise.end(turn, 0, {"kind": "completed"})
    sid = agent.id
    await agent.aclose()
    await store.close()
    assert (await _kept(db, sid))["title"] == "piece by piece"


async def test_a_resumed_session_keeps_the_digest_a_listing_would_derive(tmp_path: Path) -> None:
    """A resumed agent folds the surface it loaded (no streams): its digest is the one derived
    from the whole log."""
    from dsh.session.digest import derive, digest_json

    db = tmp_path / "s.db"
    store = SqliteEventStore(db)
    config = AgentConfig(model="test-model", retry=NO_DELAY, max_tokens=64)
    model = ScriptedModel([text_reply("one"), text_reply("two")])
    async with await Agent.create(store, model=model, config=config, cwd=tmp_path) as agent:
        await agent.run_turn("first")
        sid = agent.id
    async with await Agent.resume(store, sid, model=model, config=config) as resumed:
        await resumed.run_turn("second")
    loaded = await store.load(sid)
    derived = digest_json(derive(loaded.header, loaded.events, loaded.inherited_event_count))
    await store.close()
    assert derived is not None
    assert await _kept(db, sid) == json.loads(json.dumps(derived))
