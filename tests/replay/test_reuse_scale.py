"""Prefix reuse at scale (issue 40, item 3): a request that extends the one before it is
measured from running sizes and token estimates, not rebuilt part by part — building every
request's parts made a session of N calls cost N² (5,000 calls: most of ``dsh scenario
replay``). What is reported is unchanged: equal to comparing every pair of whole requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply, tool_call_reply
from dsh.replay import prefix, reuse
from dsh.replay.derive import RecordedCall, derive
from dsh.replay.prefix import Wire, compare
from dsh.store import LoadedSession
from dsh.store.memory import MemoryEventStore
from dsh.tools.registry import builtin_registry


async def _session(tmp_path: Path, turns: int) -> LoadedSession:
    replies = []
    for i in range(turns):
        if i % 3 == 1:  # some turns call a tool: two requests in one turn
            replies.append(tool_call_reply(f"call_{i}", "bash", '{"command": "echo hi"}'))
        replies.append(text_reply(f"answer {i} " + "word " * (i % 7)))
    store = MemoryEventStore()
    config = AgentConfig(model="test-model", retry=NO_DELAY, system="You are terse.")
    agent = await Agent.create(
        store, model=ScriptedModel(replies), tools=builtin_registry(), config=config, cwd=tmp_path
    )
    for i in range(turns):
        if i == turns // 2:  # a changed system prompt: one break, compared part by part
            agent.config = agent.config.evolve(system="You are terse. Be brief.")
        await agent.run_turn(f"question {i}")
    loaded = await store.load(agent.id)
    await agent.aclose()
    return loaded


def _by_whole_requests(loaded: LoadedSession) -> list[tuple[int, int, int, str | None]]:
    """(size, shared bytes, shared tokens, break) per request, every pair compared whole."""
    wire = Wire(derive(loaded.events, "s", strict=False))
    out: list[tuple[int, int, int, str | None]] = []
    before: prefix.Request | None = None
    for call in wire.derived.calls:
        request = wire.request(call)
        shared, broke = compare(before, request) if before is not None else (0, None)
        out.append(
            (
                request.size,
                shared,
                request.shared_tokens(shared) if shared else 0,
                broke.text() if broke is not None else None,
            )
        )
        before = request
    return out


async def test_reuse_equals_comparing_every_pair_of_whole_requests(tmp_path: Path) -> None:
    loaded = await _session(tmp_path, 12)
    found = reuse.session_reuse("s", loaded.events, 0)
    got = [(r.size, r.shared, r.estimate, r.broke.text() if r.broke else None) for r in found]
    assert got == _by_whole_requests(loaded)
    assert sum(r.broke is not None for r in found) == 1


async def test_requests_that_extend_the_one_before_are_not_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = await _session(tmp_path, 12)
    built: list[int] = []
    real = prefix.Wire.request

    def counted(self: Wire, call: RecordedCall) -> prefix.Request:
        built.append(call.history)
        return real(self, call)

    monkeypatch.setattr(prefix.Wire, "request", counted)
    found = reuse.session_reuse("s", loaded.events, 0)
    assert len(found) > 12
    assert len(built) == 2  # only the break's two requests, compared part by part
