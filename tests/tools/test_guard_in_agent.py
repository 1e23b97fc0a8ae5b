"""The read-before-mutate guard through a live agent: one FileObservations per session."""

from __future__ import annotations

from pathlib import Path

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply, tool_call_reply
from dsh.store.memory import MemoryEventStore
from dsh.tools import builtin_registry


def _results(agent: Agent) -> list[str]:
    return [
        str(e.data["message"]["content"][0]["content"][0]["text"])
        for e in agent.session.events
        if e.type == "tool/result"
    ]


async def test_reads_carry_over_between_calls_and_turns_of_one_session(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    store = MemoryEventStore()
    tools = builtin_registry(spill_dir=tmp_path / "spill")
    script = [
        tool_call_reply("c1", "read", {"file_path": "a.txt"}),
        tool_call_reply("c2", "write", {"file_path": "a.txt", "content": "two\n"}),
        text_reply("written"),
        tool_call_reply("c3", "edit", {"file_path": "a.txt", "old_string": "two", "new_string": "three"}),
        text_reply("edited"),
        tool_call_reply("c4", "write", {"file_path": "a.txt", "content": "other\n"}),
        text_reply("refused"),
    ]
    config = AgentConfig(model="m", retry=NO_DELAY)
    agent = await Agent.create(
        store, model=ScriptedModel(script[:5]), tools=tools, config=config, cwd=tmp_path
    )
    assert (await agent.run_turn("write it")).ok
    assert (await agent.run_turn("edit it")).ok
    results = _results(agent)
    assert (
        results[1] == f"<path>{tmp_path}/a.txt</path>\n<type>file</type>\n<content>\nUpdated file\n</content>"
    )
    assert results[2] == f"The file {tmp_path}/a.txt has been updated successfully."
    assert (tmp_path / "a.txt").read_text() == "three\n"

    other = await Agent.create(
        store, model=ScriptedModel(script[5:]), tools=tools, config=config, cwd=tmp_path
    )
    assert (await other.run_turn("overwrite it")).ok
    assert _results(other) == [
        f'Error: cannot overwrite existing "{tmp_path}/a.txt" without reading it first'
        " — read the file, then retry"
    ]
    assert (tmp_path / "a.txt").read_text() == "three\n"
