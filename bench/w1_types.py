"""What one W1 run of one system produces."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class W1Run:
    per_turn: list[float]
    """Seconds per turn, durable at each turn end."""
    fork_s: float
    """Seconds to create a child holding the first T/2 turns."""
    fork_bytes: int
    """Bytes the fork added on disk."""
    size: int
    """Bytes on disk after the T turns (store closed)."""
