"""``/compact`` as a logged command (``dsh.loop.commands``): ``command/run``, the compaction
owned by no turn and naming the command, ``command/done`` pointing at the summary."""

from __future__ import annotations

from pathlib import Path

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.loop.commands import parse_command, run_command
from dsh.model.scripted import ScriptedModel, text_reply
from dsh.store.sqlite import SqliteEventStore
from dsh.tools.registry import builtin_registry
from tests.invariants import check_log_invariants

LONG = "Note these facts for later: " + "the sky is blue, water is wet. " * 30


async def _agent(tmp_path: Path, model: ScriptedModel) -> Agent:
    (tmp_path / "w").mkdir(exist_ok=True)
    config = AgentConfig(model="test-model", retry=NO_DELAY)
    store = SqliteEventStore(tmp_path / "s.db")
    return await Agent.create(store, model=model, tools=builtin_registry(), config=config, cwd=tmp_path / "w")


def test_parse_command_knows_compact_only() -> None:
    assert parse_command("/compact") == ("compact", "")
    assert parse_command("  /compact now please ") == ("compact", "now please")
    assert parse_command("/unknown") is None and parse_command("compact") is None


async def test_compact_command_logs_run_the_compaction_and_done(tmp_path: Path) -> None:
    model = ScriptedModel([text_reply("first"), text_reply("second"), text_reply("## Current Work\n- two")])
    agent = await _agent(tmp_path, model)
    empty = await run_command(agent, "compact")
    assert empty.ok and empty.text == "nothing to compact yet"
    await agent.run_turn(LONG)
    await agent.run_turn("and again " * 40)
    outcome = await run_command(agent, "compact")
    assert (
        outcome.ok and outcome.text.startswith("compacted 3 messages, ") and outcome.text.endswith(" tokens")
    )
    events = agent.session.events
    types = [e.type for e in events]
    run = [e for e in events if e.type == "command/run"][-1]
    command_id = run.data["commandId"]
    assert run.data == {"commandId": command_id, "name": "compact", "args": "", "source": {"kind": "user"}}
    at = types.index("command/run", types.index("turn/end"))
    assert types[at + 1 : at + 6] == [
        "compaction/start",
        "compaction/summary",
        "user/message",
        "compaction/end",
        "command/done",
    ]
    start, summary, done = events[at + 1], events[at + 2], events[at + 5]
    assert start.data["turn"] is None and start.data["sourceCommandId"] == command_id
    assert summary.data["sourceCommandId"] == command_id
    assert done.data == {
        "commandId": command_id,
        "kind": "success",
        "text": outcome.text,
        "sourceEventSeq": summary.seq,
    }
    first_done = next(e for e in events if e.type == "command/done")
    assert first_done.data["text"] == "nothing to compact yet" and "sourceEventSeq" not in first_done.data
    check_log_invariants(events)
    await agent.aclose()


async def test_arguments_are_refused_and_nothing_is_compacted(tmp_path: Path) -> None:
    agent = await _agent(tmp_path, ScriptedModel([]))
    outcome = await run_command(agent, "compact", "everything")
    assert not outcome.ok and outcome.text == "/compact takes no arguments"
    assert [e.type for e in agent.session.events][-2:] == ["command/run", "command/done"]
    assert agent.session.events[-1].data["kind"] == "error"
    await agent.aclose()
