"""The agent loop: turns, steps, settlements, tool scheduling, persistence checkpoints."""

from dsh.loop.agent import Agent
from dsh.loop.compaction import Compacted
from dsh.loop.compaction_policy import CompactionPolicy
from dsh.loop.config import DEFAULT_SYSTEM_PROMPT, AgentConfig
from dsh.loop.feed import Feed
from dsh.loop.result import CLEAN_ENDS, TurnResult
from dsh.loop.retry import NO_DELAY, RetryPolicy
from dsh.loop.stream import (
    ChildFinished,
    ChildStarted,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
)
from dsh.loop.sync import run_sync

__all__ = [
    "CLEAN_ENDS",
    "DEFAULT_SYSTEM_PROMPT",
    "NO_DELAY",
    "Agent",
    "AgentConfig",
    "ChildFinished",
    "ChildStarted",
    "Compacted",
    "CompactionPolicy",
    "Feed",
    "ReasoningDelta",
    "RetryPolicy",
    "StreamEvent",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "TurnFinished",
    "TurnResult",
    "run_sync",
]
