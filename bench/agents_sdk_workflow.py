"""The OpenAI Agents SDK side of ``bench/temporal_bench.py``: the workflow and its tool activity.

Workflow code only (``temporalio`` and ``agents``; ``OpenAIAgentsPlugin`` passes ``agents``
and ``openai`` through the workflow sandbox), so the sandbox can import this module. It runs
in the bench's separate Agents SDK venv (``bench/agents_sdk_requirements.txt``), never in
``.venv``; ``bench/agents_sdk_run.py`` starts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from agents import Agent, FunctionTool, RunConfig, RunContextWrapper, Runner, TResponseInputItem
from temporalio import activity, workflow

TOOL_OUTPUT = ("0123456789abcdefghijklmnopqrstuvwxyz\n" * 55)[:2000]
"""What ``yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 2000`` prints: 2,000 bytes."""

WORKFLOW = "bench-agents-sdk"


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: dsh's spec of the same tool (name, description, JSON schema)."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class Conversation:
    """The workflow's input: what the agent is told and asked, and how many model calls it may make."""

    instructions: str | None
    input: list[dict[str, Any]]
    tools: list[ToolSpec] = field(default_factory=list)
    max_turns: int = 20


@activity.defn(name="bench.bash")
async def bash(arguments: str) -> str:
    """The bench's ``bash``: the 2,000 bytes its command prints, without running a shell."""
    return TOOL_OUTPUT


def _tool(spec: ToolSpec) -> FunctionTool:
    """``spec`` as an Agents SDK tool; ``bash`` runs the ``bench.bash`` activity, the others
    (offered to the model as dsh offers them, never called by the bench's script) only say so."""

    async def invoke(context: RunContextWrapper[Any], arguments: str) -> str:
        if spec.name != "bash":
            return f"{spec.name} is not run by this bench"
        return await workflow.execute_activity(bash, arguments, start_to_close_timeout=timedelta(seconds=30))

    return FunctionTool(
        name=spec.name,
        description=spec.description,
        params_json_schema=spec.parameters,
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


@workflow.defn(name=WORKFLOW)
class ConversationWorkflow:
    """One agent run: the model (an activity per call, the plugin's) and its tools until it answers."""

    @workflow.run
    async def run(self, conversation: Conversation) -> str:
        agent: Agent[None] = Agent(
            name="bench",
            instructions=conversation.instructions,
            model="bench",
            tools=[_tool(spec) for spec in conversation.tools],
        )
        items: list[TResponseInputItem] = [dict(item) for item in conversation.input]  # type: ignore[misc]
        result = await Runner.run(
            agent,
            items,
            max_turns=conversation.max_turns,
            run_config=RunConfig(tracing_disabled=True),
        )
        return str(result.final_output)
