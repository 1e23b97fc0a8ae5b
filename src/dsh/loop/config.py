"""Agent configuration: model route, system prompt, limits, retry policy, hooks, sandbox and approvals."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from dsh.context import WorkspaceConfig
from dsh.context.questions import QuestionAsker
from dsh.hooks import HookSet
from dsh.loop.compaction_policy import CompactionPolicy
from dsh.loop.retry import RetryPolicy
from dsh.mcp.config import McpServerSpec
from dsh.model import Model
from dsh.model.capabilities import accepts_images
from dsh.tools.approval import ApprovalPolicy, Approver
from dsh.tools.jobs import DEFAULT_JOB_LIMIT
from dsh.tools.sandbox import SandboxPolicy

DEFAULT_SYSTEM_PROMPT = (
    "You are dsh, an AI agent that works in the user's workspace through tools. "
    "Use the tools to read, search, edit files and run commands when the task needs it; "
    "paths are relative to the workspace. Be concise: answer with what was asked, "
    "and report tool results faithfully."
)


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """How an agent calls its model and runs its tools."""

    model: str = ""
    """The model id requests name; empty: the model's own (``OpenAICompatModel``'s ``model=``),
    filled in when the agent is built."""
    system: str | None = DEFAULT_SYSTEM_PROMPT
    max_tokens: int | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_parallel_tools: int = 10
    allow_outside_workspace: bool = False
    max_steps: int = 200
    """A safety bound on steps per turn (a model that never stops calling tools)."""
    hooks: HookSet | None = None
    """Where the session's hook commands come from (``None``: no hooks). Subagent children
    share their parent's config, so the same hooks fire in them."""
    sandbox: SandboxPolicy | None = None
    """The file policy of the session's tools (``None``: none — nothing fenced or confined, as
    replays of recordings run). Logged as ``sandbox/mode`` when a turn first runs under it;
    subagent children share it, so they can never widen it."""
    approver: Approver | None = None
    """Who answers the session's approval requests (escalations, hook asks): the ACP client,
    a terminal prompt, ``--approve``/``--deny``, a scenario's answers. ``None``: nobody, so a
    request under the ``ask`` policy is ``unavailable`` (fails closed)."""
    max_jobs: int = DEFAULT_JOB_LIMIT
    """Background jobs (``bash`` with ``run_in_background``) the session may have running or
    stopping at once; one more is refused with the original's admission error."""
    approval_policy: ApprovalPolicy | None = None
    """``ask`` or ``never``; ``None`` derives it as the original does: ``never`` without a
    policy or under ``danger-full-access``, else ``ask``. Delegated children always ``never``."""

    runtime_context: bool = True
    """Whether each step tells the model the session's file and approval policy (the
    original's runtime-context snapshot, ``dsh.loop.runtime_context``) — when it has one:
    without a :attr:`sandbox` policy there is nothing to state and no snapshot is shown."""
    repeat_reminder: bool = True
    image_input: bool | None = None
    """Whether the model takes images (``read_image``, image prompts); ``None``: by its name
    (``dsh.model.capabilities.accepts_images``)."""
    """Whether the model is reminded when it repeats the exact same tool call (the original's
    repeat-tool reminder, ``dsh.loop.repeat_reminder``: at 3, 5 and 8 identical calls in a row)."""

    def takes_images(self) -> bool:
        """Whether this agent's model takes images (:attr:`image_input`, else by its name)."""
        return accepts_images(self.model) if self.image_input is None else self.image_input

    workspace: WorkspaceConfig | None = None
    """The workspace context each step tells the model (``dsh.context``): AGENTS.md /
    CLAUDE.md instructions and the skill catalog (``None``: neither, the library default)."""
    titles: bool = False
    """Whether the session gets the original's fallback ``session/title`` from its first prompt."""
    title_model: Model | None = None
    """A model that titles top-level sessions from their first prompt (``dsh.loop.titling``;
    ``None``: only the fallback title)."""
    title_model_name: str | None = None
    """The model id title requests name (``None``: :attr:`model`)."""
    questions: QuestionAsker | None = None
    """Who answers ``ask_user_question`` (``None``: nobody is composed to; a subagent never asks)."""
    prompt_inbox: bool = False
    """Log a user prompt as the original does: an ``agent/inbox/spliced`` insert before its
    ``turn/start`` and the claim right after (so event seqs line up with its recordings)."""

    mcp_servers: tuple[McpServerSpec, ...] = ()
    """The session's MCP servers (``dsh.mcp``): started when its first turn starts, their tools
    offered as ``mcp__<server>__<tool>``, shared by its children, stopped with the agent."""
    live_mcp: bool = False
    """In a replay: call the MCP servers for real instead of serving their recorded results."""
    mcp_notice: Callable[[str], None] | None = None
    """Where a server's failure line goes (``None``: the ``dsh.mcp`` logger); the CLI: stderr."""

    compaction: CompactionPolicy = field(default_factory=CompactionPolicy)
    """When the session compacts its history (``dsh.loop.compaction``): the context window,
    the threshold, what is kept, the summary's budget, overflow retries."""

    def approvals_policy(self) -> ApprovalPolicy:
        """The approval policy of a top-level session under this config."""
        if self.approval_policy is not None:
            return self.approval_policy
        return "never" if self.sandbox is None or not self.sandbox.confined else "ask"

    def evolve(self, **changes: Any) -> AgentConfig:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)
