"""Issue #41 item 1 through the library: fork a six-turn session at turn 3.

The branch holds the parent's first events, its first request is byte-identical to what the
parent sent at turn 4, and it replays keylessly from its own events.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh import Agent, AgentConfig, SqliteEventStore
from dsh.errors import ForkBoundaryError, ForkOpenTurnError, SessionNotFoundError
from dsh.events.fork import branch_turn
from dsh.model.openai_compat import OpenAICompatModel
from dsh.model.scripted import ScriptedModel, text_reply
from dsh.replay.fidelity import Tolerances
from dsh.replay.model import ReplayModel, script_for
from dsh.store.samples import open_turn
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, stream_reply
from tests.compacted import PROMPT, SUMMARY, compacted

KEY = "sk-test-fork"


def _answer(request: RecordedRequest) -> Response:
    return stream_reply(text=f"answer to {request.prompt}")


def _config() -> AgentConfig:
    return AgentConfig(model="m", system="You are terse.")


async def test_a_branch_at_turn_3_holds_the_prefix_asks_the_same_and_replays_keylessly(
    tmp_path: Path,
) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=_answer) as server, store:
        model = OpenAICompatModel(base_url=server.base_url, api_key=KEY)
        parent = await Agent.create(store, model=model, config=_config(), cwd=tmp_path, standard_tools=False)
        async with parent:
            for n in range(1, 7):
                await parent.run_turn(f"question {n}")
            turn4 = server.requests[3]
            assert turn4.prompt == "question 4"
            parent_log = await store.load(parent.id)
            async with await parent.fork(at=3) as branch:
                loaded = await store.load(branch.id)
                cut = loaded.inherited_event_count
                assert loaded.events[:cut] == parent_log.events[:cut]
                assert branch_turn(loaded.events, cut) == 3
                assert loaded.header.parent_session == parent.id and not loaded.header.is_subagent
                await branch.run_turn("question 4")
                first = server.requests[6]
                assert first.body == turn4.body  # byte-identical up to the cut, and the same prompt
            with pytest.raises(ForkBoundaryError, match="turn 7"):
                await parent.fork(at=7)
            with pytest.raises(SessionNotFoundError):
                await store.fork("nobody", at=1)
        await model.aclose()
        child = await store.load(branch.id)

    # keyless: a fresh store holding the parent, the branch made again, served from the branch's own events
    replay_store = SqliteEventStore(tmp_path / "replay.db")
    async with replay_store:
        await replay_store.create(parent_log.header, parent_log.events)
        script = script_for(
            "branch", child.header.id, child.header.created_at, child.events, cut, tolerances=Tolerances()
        )
        replay = ReplayModel(script, model_name="m")
        again = await replay_store.fork(parent.id, at=3, child_id=child.header.id)
        agent = await Agent.resume(
            replay_store, again.header.id, model=replay, config=_config(), standard_tools=False
        )
        async with agent:
            await agent.run_turn("question 4")
        assert replay.divergences == []
        replay.assert_consumed()
        replayed = await replay_store.load(again.header.id)
        assert [e.type for e in replayed.events] == [e.type for e in child.events]


async def test_a_branch_at_an_open_turn_is_refused(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    async with OpenAICompatServer(handler=_answer) as server, store:
        model = OpenAICompatModel(base_url=server.base_url, api_key=KEY)
        async with await Agent.create(
            store, model=model, config=_config(), cwd=tmp_path, standard_tools=False
        ) as a:
            await a.run_turn("question 1")
            await store.append(a.id, open_turn(len((await store.load(a.id)).events), 2))
            with pytest.raises(ForkOpenTurnError, match="turn 2"):
                await store.fork(a.id, at=2)
        await model.aclose()


async def test_forks_of_a_compacted_session_before_and_after_the_compaction(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    sid = await compacted(db)
    model = ScriptedModel([text_reply("before"), text_reply("after")], model="test-model")
    config = AgentConfig(model="test-model")
    async with SqliteEventStore(db) as store:
        parent = await store.load(sid)
        for turn in (2, 3):
            child = await store.fork(sid, at=turn)
            cut = child.inherited_event_count
            assert child.events[:cut] == parent.events[:cut] and branch_turn(child.events, cut) == turn
            async with await Agent.resume(store, child.header.id, model=model, config=config) as agent:
                await agent.run_turn("next")
        before, after = (" ".join(str(m.get("content")) for m in r.messages) for r in model.requests)
        assert PROMPT[:40] in before and SUMMARY not in before  # cut before the compaction: the originals
        assert SUMMARY[:14] in after and PROMPT[:40] not in after  # after it: the checkpoint
