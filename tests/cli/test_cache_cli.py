"""``dsh log --cache`` (issue 43): each request's prefix reuse against the session's previous
request, and where a request rewrote its prefix — sessions made by the real loop (a
ScriptedModel) and an imported log, read by the CLI in a subprocess."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply, tool_call_reply
from dsh.store.jsonl import JsonlEventStore
from dsh.tools.registry import builtin_registry
from tests.compacted import compacted

from .conftest import Dsh


async def _two_turns(root: Path, systems: tuple[str, str]) -> str:
    """A session of two turns (the first calls a tool: two requests), each turn's system prompt given."""
    work = root / "w"
    work.mkdir(parents=True, exist_ok=True)
    model = ScriptedModel(
        [
            tool_call_reply("call_1", "bash", '{"command": "echo alpha"}'),
            text_reply("first answer"),
            text_reply("second answer"),
        ]
    )
    config = AgentConfig(model="test-model", retry=NO_DELAY, system=systems[0])
    store = JsonlEventStore(root / "sessions")
    agent = await Agent.create(store, model=model, tools=builtin_registry(), config=config, cwd=work)
    try:
        await agent.run_turn("first question")
        agent.config = agent.config.evolve(system=systems[1])
        await agent.run_turn("second question")
        return agent.id
    finally:
        await agent.aclose()


def _dsh(root: Path) -> Dsh:
    return Dsh(f"jsonl:{root / 'sessions'}", root)


def test_requests_that_extend_each_other_report_no_break(tmp_path: Path) -> None:
    sid = asyncio.run(_two_turns(tmp_path, ("You are terse.", "You are terse.")))
    out = _dsh(tmp_path)("log", sid, "--cache").ok().stdout
    assert "no break: every request extends the one before it (3 requests, 1 session)" in out
    lines = [
        json.loads(line) for line in _dsh(tmp_path)("log", sid, "--cache", "--json").ok().stdout.splitlines()
    ]
    requests = [line for line in lines if line["type"] == "request"]
    assert [r["against"] for r in requests] == ["nothing", "the previous request", "the previous request"]
    assert all(r["sharedBytes"] > 0 and r["sharedTokens"] > 0 for r in requests[1:])
    assert requests[2]["sharedBytes"] > requests[1]["sharedBytes"], "each extends the last"
    assert lines[-1] == {"type": "cache", "requests": 3, "breaks": []}


def test_a_per_request_timestamp_in_the_system_prompt_is_flagged_at_the_system_prompt(tmp_path: Path) -> None:
    systems = ("You are terse.\n\nNow: 2026-12-07T01:00:00Z", "You are terse.\n\nNow: 2026-12-07T01:05:00Z")
    sid = asyncio.run(_two_turns(tmp_path, systems))
    result = _dsh(tmp_path)("log", sid, "--cache").ok()
    (line,) = [line for line in result.stdout.splitlines() if "the cache prefix broke at" in line]
    assert "the cache prefix broke at: the system prompt (section 2: 'Now: 2026-12-07T01:05:00Z')" in line
    assert "call 3 (turn 2 step 1)" in line and "no break" not in result.stdout


def test_a_compaction_is_an_expected_break(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    sid = asyncio.run(compacted(db))
    out = Dsh(f"sqlite:{db}", tmp_path)("log", sid, "--cache").ok().stdout
    assert "expected: a compaction" in out and "no break" in out


def test_an_imported_log_whose_second_request_rewrites_a_history_message_names_it(tmp_path: Path) -> None:
    sid = asyncio.run(_two_turns(tmp_path / "made", ("You are terse.", "You are terse.")))
    lines = (tmp_path / "made" / "sessions" / f"{sid}.jsonl").read_text().splitlines()
    header, events = lines[0], [json.loads(line) for line in lines[1:]]
    second = [i for i, e in enumerate(events) if e["type"] == "assistant/message"][1]
    prompt = next(e for e in events if e["type"] == "user/message")
    rewritten = {  # the first prompt, rewritten in place before the second request
        **prompt,
        "seq": events[second]["seq"],
        "data": {
            **prompt["data"],
            "id": "rewritten",
            "content": [{"type": "text", "text": "a different question"}],
        },
        "surfaceOp": {"op": "replace", "start": prompt["seq"], "end": prompt["seq"]},
    }
    later = [{**e, "seq": e["seq"] + 1} for e in events[second:]]
    log = tmp_path / "rewritten.jsonl"
    log.write_text("\n".join([header, *map(json.dumps, [*events[:second], rewritten, *later])]) + "\n")
    dsh = Dsh(f"sqlite:{tmp_path / 'imported.db'}", tmp_path)
    dsh("sessions", "import", log).ok()
    out = dsh("log", sid, "--cache").ok().stdout
    assert (
        "the cache prefix broke at: message 1 (user: 'a different question') — call 2 (turn 1 step 2)" in out
    )


def test_dsh_diff_shows_both_runs_prefix_reuse_per_request_and_flags_a_drop(tmp_path: Path) -> None:
    a = asyncio.run(_two_turns(tmp_path, ("You are terse.", "You are terse.")))
    b = asyncio.run(_two_turns(tmp_path, ("You are terse.\n\nNow: 01:00", "You are terse.\n\nNow: 01:05")))
    dsh = _dsh(tmp_path)
    out = dsh("diff", a, b, "--json")
    assert out.code == 1, out.stderr  # the system prompts differ
    cache = json.loads(out.stdout)["cache"]
    assert [r["flagged"] for r in cache["a"]] == [False, False, False]
    assert [r["flagged"] for r in cache["b"]] == [False, False, True]
    (drop,) = cache["drops"]
    assert drop.startswith("the cache prefix broke at: the system prompt (section 2: 'Now: 01:05') — call 3")
    assert "(the root session): shared bytes " in drop
    md = dsh("diff", a, b, "--markdown").stdout
    assert "| prefix reuse (shared/total bytes) | A | B |" in md and "| root call 3 |" in md
    assert "⚠ cache drop: the cache prefix broke at: the system prompt" in md
