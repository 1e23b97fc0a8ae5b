"""The ``subagent`` and ``subagent_fork`` tools: in-process child sessions, waited for or in the background.

A spawn child starts empty; a fork child's log is the parent's completed-turn prefix plus
the tagged ``session/end-seed`` marker, and its cut (the prefix length) is passed
explicitly from here to the store and to the child agent — never recomputed. With
``run_in_background: true`` the call returns the child's id at once and the child goes on
as a continuable child (:mod:`dsh.subagents.children`). Either is given its policies
(:func:`~dsh.loop.delegation.log_delegated_policies`) where the original logs them: right
after the seed, or after a continuable child's descriptor.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from dsh.context.tools import with_context_tools
from dsh.events.messages import user_message
from dsh.loop import Agent
from dsh.loop.delegation import log_delegated_policies
from dsh.session import final_assistant_text
from dsh.subagents import delegate, texts
from dsh.subagents.children import Child, Children, continuable
from dsh.subagents.control import InterruptAgentTool, ListAgentsTool, SendMessageTool
from dsh.subagents.live import LiveReach, with_report
from dsh.tools import Tool, ToolArgs, ToolContext, ToolLike, ToolOutput
from dsh.tools.base import A, AgentHandle, TurnOutcome, arg_text
from dsh.tools.registry import ToolRegistry, builtin_registry
from dsh.tools.spill import DEFAULT_MAX_INLINE_BYTES

DEFAULT_MAX_DEPTH = 2
"""Top level is depth 0, a child 1, a grandchild 2; deeper delegation is refused."""

Mode = Literal["spawn", "fork"]


class SpawnArgs(ToolArgs):
    """Arguments of ``subagent``."""

    description: str = Field(description="A short (3-5 word) label for the delegated task.")
    prompt: str = Field(
        description="The complete, self-contained task for the child agent. The child sees "
        "nothing of this conversation, so include every fact it needs."
    )
    run_in_background: bool | None = Field(
        default=None,
        description="true: start the child in the background and get its id at once; it keeps "
        "its conversation for `send_message`, and a notice tells you when it settles. Leave it "
        "out or false to wait for the child's answer.",
    )


class ForkArgs(ToolArgs):
    """Arguments of ``subagent_fork``."""

    description: str = Field(description="A short (3-5 word) label for the delegated task.")
    prompt: str = Field(
        description="The task for the child. The child already sees every completed turn of "
        "this conversation, so the prompt may refer to it."
    )


class ForkBackgroundArgs(ForkArgs):
    """Arguments of a ``subagent_fork`` that may run in the background."""

    run_in_background: bool | None = Field(
        default=None,
        description="true: start the child in the background and get its id at once (see `subagent`).",
    )


_DESCRIPTIONS: dict[Mode, str] = {
    "spawn": (
        "Delegate a self-contained task to a fresh child agent that starts with no history. "
        "The child has the same tools and workspace; its final answer comes back as this "
        "tool's result. Several calls in one message run concurrently."
    ),
    "fork": (
        "Delegate a task to a child agent that inherits every completed turn of this "
        "conversation (not the current turn). Use it when the task depends on what was "
        "already discussed; its final answer comes back as this tool's result."
    ),
}


class SubagentTool(Tool[A], ABC):
    """A delegation tool over the :class:`~dsh.tools.AgentHandle` of the calling agent:
    :class:`SpawnTool` (``subagent``) or :class:`ForkTool` (``subagent_fork``).

    ``background`` (default: spawn yes, fork no — the original's shipped composition) adds
    ``run_in_background``; background children are kept in ``children``, which the
    ``send_message``/``list_agents``/``interrupt_agent`` tools of the same set share.
    """

    concurrency_safe = True
    mode: Mode

    def __init__(
        self,
        *,
        max_depth: int = DEFAULT_MAX_DEPTH,
        children: Children | None = None,
        background: bool | None = None,
    ) -> None:
        self.max_depth = max_depth
        self.children = children or Children()
        self.background = self.mode == "spawn" if background is None else background

    @property
    def name(self) -> str:
        return "subagent" if self.mode == "spawn" else "subagent_fork"

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self.mode]

    def acp_title(self, args: Mapping[str, Any]) -> str | None:
        label = arg_text(args, "description")
        return f"Subagent ({self.mode})" + (f": {label}" if label else "")

    @abstractmethod
    def in_background(self, args: A) -> bool:
        """Whether the call asked for a background child."""

    @abstractmethod
    def task(self, args: A) -> _Task:
        """The child's label and prompt."""

    @abstractmethod
    async def start_child(self, parent: AgentHandle, call_id: str) -> AgentHandle:
        """The stored child (depth = the parent's + 1), through the parent's ``fork`` /
        ``spawn``: the fork rule of ``dsh.events.fork``, its cut persisted."""

    async def call(self, args: A, ctx: ToolContext) -> ToolOutput:
        parent = ctx.agent
        if parent is None:
            return ToolOutput.error(f"{self.name} needs a running agent", "NO_AGENT")
        background = self.in_background(args)
        parent_depth = parent.header.delegation_depth
        refused = delegate.refusal(
            background=background,
            background_allowed=self.background,
            parent_depth=parent_depth,
            max_depth=self.max_depth,
        )
        if refused is not None:
            return ToolOutput.error(refused, None)
        depth = delegate.child_depth(parent_depth)
        task = self.task(args)
        if background:
            host = continuable(parent)
            if host is None:
                return ToolOutput.error(
                    f"{self.name} needs a running agent to run in the background", "NO_AGENT"
                )
            return await self._start_background(host, depth, ctx.call_id, task)
        child = await self.start_child(parent, ctx.call_id)
        log_delegated_policies(child, parent.sandbox)
        descriptor = delegate.descriptor_event(
            continuable=False,
            mode=self.mode,
            label=task.description,
            parent_session=parent.id,
            call_id=ctx.call_id,
        )
        result = await child.run_turn(task.prompt, preamble=[descriptor])
        return _child_output(child, result)

    async def _start_background(self, parent: Agent, depth: int, call_id: str, task: _Task) -> ToolOutput:
        """Create the child under its own lease, log its descriptor, queue the task, return its id.

        A spawned child gets ``report``; a fork child keeps its parent's tools as they are
        (``report`` only when the parent has it), so its first request repeats the parent's
        prefix byte for byte — a tool added ahead of the inherited history would throw away
        the prompt cache a fork exists to reuse (issue 43; the original made forks one-shot)."""
        if self.mode == "fork":
            child = await parent.fork(call_id=call_id)
        else:
            child = await parent.spawn(call_id=call_id, tools=with_report(parent, self.children))
        try:
            await child.take_lease()
        except BaseException:
            await child.aclose()
            raise
        child.append(
            *delegate.descriptor_event(
                continuable=True,
                mode=self.mode,
                label=task.description,
                parent_session=parent.id,
                call_id=call_id,
            )
        )
        log_delegated_policies(child, parent.sandbox)
        self.children.start(Child(child, parent, task.description, depth), user_message(task.prompt))
        await child.checkpoint()
        return ToolOutput.text(texts.started(child.id))


@dataclass(frozen=True, slots=True)
class _Task:
    """What a delegation call asks of its child."""

    description: str
    prompt: str


class SpawnTool(SubagentTool[SpawnArgs]):
    """``subagent``: a fresh child that starts with no history."""

    mode: Mode = "spawn"

    @property
    def args_model(self) -> type[SpawnArgs]:
        return SpawnArgs

    def task(self, args: SpawnArgs) -> _Task:
        return _Task(args.description, args.prompt)

    def in_background(self, args: SpawnArgs) -> bool:
        return bool(args.run_in_background)

    async def start_child(self, parent: AgentHandle, call_id: str) -> AgentHandle:
        return await parent.spawn(call_id=call_id)


class ForkTool(SubagentTool[ForkArgs]):
    """``subagent_fork``: a child that inherits the parent's completed turns (its arguments
    are :class:`ForkBackgroundArgs` when ``background``)."""

    mode: Mode = "fork"

    @property
    def args_model(self) -> type[ForkArgs]:
        return ForkBackgroundArgs if self.background else ForkArgs

    def task(self, args: ForkArgs) -> _Task:
        return _Task(args.description, args.prompt)

    def in_background(self, args: ForkArgs) -> bool:
        return isinstance(args, ForkBackgroundArgs) and bool(args.run_in_background)

    async def start_child(self, parent: AgentHandle, call_id: str) -> AgentHandle:
        return await parent.fork(call_id=call_id)


_HEADLINES: dict[str, str] = {
    "aborted": "subagent run was cancelled",
    "error": "subagent run failed",
    "max-tokens": "subagent run hit its token limit before finishing",
}


def non_completion_text(kind: str, partial: str) -> str:
    """The original's text for a child turn that ended ``kind`` (not ``completed``), without ``Error: ``."""
    text = _HEADLINES.get(kind, f"subagent run ended abnormally ({kind})")
    if partial:
        text += f"\nPartial output before the run ended:\n{partial}"
    return text


def _child_output(child: AgentHandle, result: TurnOutcome) -> ToolOutput:
    """The child's last non-empty answer from its own events (after the cut), or the error text.

    Only a ``completed`` turn is a success; a child that hit its token limit, failed or was
    cancelled is an error result (no code, as in the original) with its partial output.
    """
    text = final_assistant_text(child.own_events)
    kind = str(result.reason.get("kind", "error"))
    if kind == "completed":
        return ToolOutput.text(text)
    return ToolOutput.error(non_completion_text(kind, text), None)


def subagent_tools(*, max_depth: int = DEFAULT_MAX_DEPTH, children: Children | None = None) -> list[ToolLike]:
    """Both delegation tools and the three that steer background children, sharing one
    :class:`Children`, ready to register."""
    children = children or Children()
    reach = LiveReach(children)
    return [
        SpawnTool(max_depth=max_depth, children=children),
        ForkTool(max_depth=max_depth, children=children),
        SendMessageTool(reach),
        ListAgentsTool(reach),
        InterruptAgentTool(reach),
    ]


def standard_tools(
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    spill_dir: str | Path | None = None,
    max_inline_bytes: int | None = DEFAULT_MAX_INLINE_BYTES,
    glob_max_results: int = 100,
) -> ToolRegistry:
    """The built-in tools plus the subagent tools (:func:`subagent_tools`): what ``dsh run`` uses.

    As in the original's composition, ``bash`` defaults to a 60 s timeout; long results
    spill under ``spill_dir`` (default: ``$DSH_SPILL_DIR`` or the per-user temp directory)
    past ``max_inline_bytes`` (``None``: never).
    """
    registry = builtin_registry(
        bash_default_timeout_ms=60_000,
        spill_dir=spill_dir,
        max_inline_bytes=max_inline_bytes,
        glob_max_results=glob_max_results,
    )
    for tool in subagent_tools(max_depth=max_depth):
        registry.register(tool)
    return registry


def live_tools() -> ToolRegistry:
    """A live session's tools: :func:`standard_tools` and the workspace-context tools (what
    ``dsh run``, ``dsh acp`` and a recording continued live offer the model)."""
    return with_context_tools(standard_tools())
