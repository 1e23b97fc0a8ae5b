"""When and how much a session compacts (the original's ``BasicCompactionConfig`` keys)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from dsh.errors import UsageError

OVERFLOW_CODES: Final = frozenset({"CONTEXT_OVERFLOW", "CONTEXT_WINDOW_EXCEEDED"})
"""Failure codes meaning the request was longer than the model's context window: dsh's
classification and the original's."""


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """``context_window``: the model's window in tokens (``None``: the model's known window,
    else the last logged ``request/context``; with none, no pressure compaction — an
    overflow still compacts). A request whose pressure reaches ``threshold_ratio`` of the
    window compacts the history's head, keeping ``retain_ratio`` of the window of its newest
    messages; a summary may write ``max_tokens``; an overflow compacts and retries the step
    ``max_overflow_retries`` times. ``auto=False``: only manual compaction."""

    context_window: int | None = None
    threshold_ratio: float = 0.8
    retain_ratio: float = 0.16
    max_tokens: int = 8192
    max_overflow_retries: int = 1
    auto: bool = True

    def __post_init__(self) -> None:
        if self.context_window is not None and self.context_window <= 0:
            raise UsageError(f"context window must be a positive number of tokens, not {self.context_window}")
        if not 0 < self.threshold_ratio <= 1:
            raise UsageError(f"compaction threshold ratio must be in (0, 1], not {self.threshold_ratio}")
        if not 0 < self.retain_ratio < self.threshold_ratio:
            raise UsageError(
                f"compaction retain ratio must be above 0 and below the threshold ratio "
                f"{self.threshold_ratio}, not {self.retain_ratio}"
            )
        if self.max_tokens <= 0 or self.max_overflow_retries < 0:
            raise UsageError("compaction max_tokens must be positive and max_overflow_retries not negative")

    def threshold(self, window: int) -> int:
        """The pressure that compacts: ``floor(window × threshold_ratio)``."""
        return math.floor(window * self.threshold_ratio)

    def retain(self, window: int) -> int:
        """The newest tokens a pressure compaction keeps: ``floor(window × retain_ratio)``."""
        return math.floor(window * self.retain_ratio)
