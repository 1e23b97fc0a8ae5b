"""The turn's step budget, decided once for every driver (``Steps.run`` and Temporal's workflow).

Pure (no I/O, stdlib only), so Temporal's workflow sandbox may import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

STEP_LIMIT_CODE: Final = "MAX_STEPS"
"""The error code of a turn that ran out of steps."""


@dataclass(frozen=True, slots=True)
class StepLimit:
    """A turn's ending for running out of steps: the error ``code`` and one-line ``message``."""

    code: str
    message: str


def steps(max_steps: int) -> range:
    """The step numbers a turn may run: ``1 .. max_steps``."""
    return range(1, max_steps + 1)


def step_limit(turn: int, max_steps: int) -> StepLimit:
    """The error a turn ends with when its ``max_steps`` steps all continued."""
    return StepLimit(STEP_LIMIT_CODE, f"turn {turn} exceeded {max_steps} steps")
