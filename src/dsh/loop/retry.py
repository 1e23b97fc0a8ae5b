"""Retry policy for failed model calls: bounded attempts, exponential backoff with jitter."""

from __future__ import annotations

import random
from dataclasses import dataclass

from dsh.events.chunks import RETRYABLE_CODES


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``delay(n) = min(min(initial * 2**(n-1), max) * U[1-j, 1+j], max)`` seconds."""

    max_retries: int = 5
    initial_delay: float = 0.5
    max_delay: float = 10.0
    jitter: float = 0.1
    retryable_codes: frozenset[str] = RETRYABLE_CODES

    def should_retry(self, code: str, retries_so_far: int) -> bool:
        return code in self.retryable_codes and retries_so_far < self.max_retries

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        if self.initial_delay <= 0:
            return 0.0
        base = min(self.initial_delay * 2 ** (retry - 1), self.max_delay)
        factor = random.uniform(1 - self.jitter, 1 + self.jitter)
        return float(min(base * factor, self.max_delay))


NO_DELAY = RetryPolicy(initial_delay=0.0, max_delay=0.0, jitter=0.0)
"""The policy replay uses: recorded failures retry instantly."""
