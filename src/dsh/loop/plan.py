"""The turn's decisions, made once for every driver (``Steps.run`` and Temporal's workflow):
the step budget, whether another step runs, and how a turn that ran out of work ends.

Pure (no I/O, stdlib only), so Temporal's workflow sandbox may import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

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


def continues(*, called: bool, cut_off: bool, waiting: bool) -> bool:
    """Whether the turn runs another step after one that settled: the model called tools and
    was not cut off at its token limit, or work waits for the next step (a tool's or a hook's
    context, a Stop hook's steer, a notice another session or a job sent)."""
    return (called and not cut_off) or waiting


def ending(cut_off: bool) -> Literal["completed", "max-tokens"]:
    """How a turn whose steps ran out of work ends: ``max-tokens`` once any of its steps was
    cut off at the token limit (sticky), else ``completed``."""
    return "max-tokens" if cut_off else "completed"
