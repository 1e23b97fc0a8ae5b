"""``Agent.stepwise()``: a turn one piece at a time, each piece idempotent against the log."""

from __future__ import annotations

from pathlib import Path

from dsh.events.messages import user_message
from dsh.loop import Agent, AgentConfig
from dsh.loop.retry import NO_DELAY
from dsh.model.scripted import ScriptedModel, text_reply, tool_call_reply
from dsh.store.memory import MemoryEventStore, MemorySpace
from dsh.tools import ToolContext, ToolOutput
from dsh.tools.function import tool
from dsh.tools.registry import ToolRegistry


async def test_every_piece_rerun_over_the_stored_log_repeats_nothing(tmp_path: Path) -> None:
    ran: list[str] = []

    @tool
    async def note(text: str, ctx: ToolContext) -> ToolOutput:
        """Note something."""
        ran.append(text)
        return ToolOutput.text("noted")

    space = MemorySpace()
    model = ScriptedModel([tool_call_reply("c1", "note", {"text": "once"}), text_reply("done")])
    config = AgentConfig(model="test-model", retry=NO_DELAY)
    tools = ToolRegistry([note])
    first = await Agent.create(MemoryEventStore(space), model=model, tools=tools, config=config, cwd=tmp_path)

    async def fresh() -> Agent:  # what an activity on another worker attaches to
        loaded = await MemoryEventStore(space).load(first.id)
        return Agent.attach(loaded, store=MemoryEventStore(space), model=model, tools=tools, config=config)

    prompt = user_message("go")
    turn = await (await fresh()).stepwise().begin(0)
    assert await (await fresh()).stepwise().begin(0) == turn
    step1 = await (await fresh()).stepwise().model_step(turn, 1, 0, prompt)
    again = await (await fresh()).stepwise().model_step(turn, 1, 0, prompt)
    assert [c.call_id for c in step1.calls] == ["c1"] and step1.ran and not again.ran
    assert await (await fresh()).stepwise().tool_call(turn, 1, 0, "c1")
    assert not await (await fresh()).stepwise().tool_call(turn, 1, 0, "c1")
    step2 = await (await fresh()).stepwise().model_step(turn, 2, 0, None)
    assert step2.calls == () and step2.ran
    result = await (await fresh()).stepwise().end(turn, 0, {"kind": "completed"})
    await (await fresh()).stepwise().end(turn, 0, {"kind": "completed"})
    assert result.text == "done" and ran == ["once"]
    types = [e.type for e in (await MemoryEventStore(space).load(first.id)).events]
    assert types == [
        "turn/start", "step/start", "user/message", "request/header", "assistant/message",
        "tool/call", "tool/result", "step/end", "step/start", "assistant/message", "step/end", "turn/end",
    ]  # fmt: skip


async def test_a_call_started_but_never_settled_is_settled_unknown_not_rerun(tmp_path: Path) -> None:
    ran: list[str] = []

    @tool
    async def note(text: str, ctx: ToolContext) -> ToolOutput:
        """Note something."""
        ran.append(text)
        return ToolOutput.text("noted")

    space = MemorySpace()
    model = ScriptedModel([tool_call_reply("c1", "note", {"text": "once"})])
    config = AgentConfig(model="test-model", retry=NO_DELAY)
    tools = ToolRegistry([note])
    agent = await Agent.create(MemoryEventStore(space), model=model, tools=tools, config=config, cwd=tmp_path)
    stepwise = agent.stepwise()
    turn = await stepwise.begin(0)
    await stepwise.model_step(turn, 1, 0, user_message("go"))
    await stepwise.start_call(turn, 1, 0, "c1")  # logged as started; its runner "dies" here
    assert not await stepwise.tool_call(turn, 1, 0, "c1")
    (result,) = [e for e in agent.session.events if e.type == "tool/result"]
    assert result.data["error"] == {"code": "TOOL_OUTCOME_UNKNOWN"} and ran == []


async def test_a_model_title_is_asked_at_the_turns_end_by_a_stepwise_driver(tmp_path: Path) -> None:
    """Each piece's agent lives for that piece: the title request is logged where the loop logs
    it and the title model is asked when the turn ends, so the log is the loop's."""

    def config(title: ScriptedModel) -> AgentConfig:
        return AgentConfig(model="test-model", retry=NO_DELAY, title_model=title)

    inline = await Agent.create(
        MemoryEventStore(), model=ScriptedModel([text_reply("hi")]), tools=ToolRegistry([]),
        config=config(ScriptedModel([text_reply("Greeting the user")])), cwd=tmp_path,
    )  # fmt: skip
    await inline.run_turn("hello there")
    space = MemorySpace()
    model, title = ScriptedModel([text_reply("hi")]), ScriptedModel([text_reply("Greeting the user")])
    first = await Agent.create(
        MemoryEventStore(space), model=model, tools=ToolRegistry([]), config=config(title), cwd=tmp_path
    )

    async def fresh() -> Agent:
        loaded = await MemoryEventStore(space).load(first.id)
        return Agent.attach(loaded, store=MemoryEventStore(space), model=model, tools=ToolRegistry([]),
                            config=config(title))  # fmt: skip

    turn = await (await fresh()).stepwise().begin(0)
    await (await fresh()).stepwise().model_step(turn, 1, 0, user_message("hello there"))
    await (await fresh()).stepwise().end(turn, 0, {"kind": "completed"})
    await (await fresh()).stepwise().end(turn, 0, {"kind": "completed"})  # a retried end asks nothing
    stepped = (await MemoryEventStore(space).load(first.id)).events
    assert [e.type for e in stepped] == [e.type for e in inline.session.events]
    assert stepped[-1].type == "session/title" and stepped[-1].data["title"] == "Greeting the user"
    assert len(title.requests) == 1
