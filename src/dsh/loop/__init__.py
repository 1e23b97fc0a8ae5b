"""The agent loop: turns, steps, settlements, tool scheduling, persistence checkpoints."""

from dsh.loop.agent import CLEAN_ENDS, Agent, TurnResult
from dsh.loop.config import DEFAULT_SYSTEM_PROMPT, AgentConfig
from dsh.loop.feed import Feed
from dsh.loop.retry import NO_DELAY, RetryPolicy

__all__ = [
    "CLEAN_ENDS",
    "DEFAULT_SYSTEM_PROMPT",
    "NO_DELAY",
    "Agent",
    "AgentConfig",
    "Feed",
    "RetryPolicy",
    "TurnResult",
]
