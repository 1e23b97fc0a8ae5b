"""A recording whose title model answered after the turn (the original's session-title-after-turn
shape, authored from text-turn): the override scripts the title model, the session keeps its
recorded script, and ``waitForTitleAfterTurnEnd`` holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from dsh.replay.files import read_recorded
from dsh.snapshot import run_scenario
from dsh.store.memory import MemoryEventStore

TITLE = "Late durable session title"


def _authored(upstream: Path, tmp_path: Path, *, override: bool, model_title: bool = True) -> Path:
    directory = tmp_path / "session-title-after-turn"
    shutil.copytree(upstream / "text-turn", directory)
    header = json.loads((directory / "session.jsonl").read_text().splitlines()[0])
    loaded = read_recorded(directory).primary
    assert loaded is not None
    events = [e.to_wire() for e in loaded.events]
    prompt = next(e for e in events if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user")
    at = next(i for i, e in enumerate(events) if e["type"] == "request/header") + 1
    request: dict[str, Any] = {
        "type": "session/title-llm-request",
        "seq": 0,
        "time": 0,
        "data": {
            "titleProvider": "session-title-first-prompt-llm",
            "messageSeqs": [prompt["seq"]],
            "route": {"provider": "title-replay", "model": "title-model"},
            "system": "s",
            "messages": [],
            "maxTokens": 32,
        },
    }
    if model_title:
        events.insert(at, request)
    source = {
        "kind": "provider",
        "provider": "session-title-first-prompt-llm",
        "model": {"provider": "title-replay", "model": "title-model"},
    }
    title = {"title": TITLE, "messageSeqs": [prompt["seq"]], "source": source}
    if model_title:
        events.append({"type": "session/title", "seq": 0, "time": 0, "data": title})
    lines = [json.dumps(header)]
    for seq, event in enumerate(events):  # renumber (the log is unpacked: one event per line)
        event["seq"] = seq
        lines.append(json.dumps(event, ensure_ascii=False))
    (directory / "session.jsonl").write_text("\n".join(lines) + "\n")
    steps = json.loads((directory / "input.json").read_text())["steps"]
    (directory / "input.json").write_text(json.dumps({"steps": [*steps, {"op": "waitForTitleAfterTurnEnd"}]}))
    if override:
        chunks = [
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": TITLE},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": TITLE}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ]
        (directory / "replay.override.json").write_text(json.dumps([{"kind": "chunks", "chunks": chunks}]))
    return directory


async def test_the_model_title_lands_after_the_turn(upstream: Path, tmp_path: Path) -> None:
    for override in (True, False):
        store = MemoryEventStore()
        scenario = _authored(upstream, tmp_path / str(override), override=override)
        result = await run_scenario(scenario, "replay", store=store)
        assert result.ok, result.failure_text()
        assert result.sessions[0].final_text == "PONG"
        loaded = await store.load(result.sessions[0].live_id or "")
        types = [e.type for e in loaded.events]
        assert types[-2:] == ["turn/end", "session/title"]
        assert loaded.events[-1].data["title"] == TITLE
        assert loaded.events[-1].data["source"]["model"] == {
            "provider": "title-replay",
            "model": "title-model",
        }
        [request] = [e for e in loaded.events if e.type == "session/title-llm-request"]
        assert request.data["messages"][0]["content"][0]["text"].startswith(
            'Generate the session title from this JSON array of human messages:\n[{"seq":'
        )
        fallback = next(e for e in loaded.events if e.type == "session/title")
        assert fallback.data["source"] == {"kind": "fallback"}


async def test_without_a_model_title_the_wait_fails(upstream: Path, tmp_path: Path) -> None:
    scenario = _authored(upstream, tmp_path, override=False, model_title=False)
    result = await run_scenario(scenario, "replay", step_timeout=0.5)
    assert not result.ok
    assert any("session/title after the last turn/end" in p for p in result.problems)


async def test_over_acp_the_title_comes_after_the_turn_and_compat_shows_no_update(
    upstream: Path, tmp_path: Path
) -> None:
    from tests.acp.test_upstream import _agent_request_ids, drive
    from tests.acp.wire import upstream_normalize

    scenario = _authored(upstream, tmp_path / "scenario", override=True)
    (tmp_path / "run").mkdir()
    run = await drive(scenario, tmp_path / "run")
    assert run.problems == [] and run.exit_code == 0, run.stderr
    frames = [upstream_normalize(f) for f in _agent_request_ids(run.frames[1:])]
    expected = [
        json.loads(x) for x in (upstream / "text-turn" / "stdout.expected.jsonl").read_text().splitlines()
    ]
    assert frames == expected[1:]  # no session_info_update under dsh-compat, as the original
