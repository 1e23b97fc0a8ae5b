"""The turn's decisions, made once for every driver (``Steps.run`` and Temporal's workflow).

:class:`TurnPlan` is the turn as a state machine: a driver tells it what it observed (the step
settled with or without calls, cut off at the token limit or not; the calls ran; the ``Stop``
hooks left work waiting or not) and gets the next :data:`Action` back — call the model for a
step, run the step's calls, ask the ``Stop`` hooks, or end the turn with a reason. A driver
executes actions and decides nothing: the step budget, when another step runs, the sticky
``max-tokens`` ending and how a turn that ran out of steps ends are all here. How a step's calls
split between ordinary calls and delegations is :func:`call_runs`. (A step's compaction is decided
by :mod:`dsh.loop.compaction_policy` when the step opens, for both drivers alike.)

Pure (no I/O, stdlib only), so Temporal's workflow sandbox may import it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Generic, Literal, TypeVar

STEP_LIMIT_CODE: Final = "MAX_STEPS"
"""The error code of a turn that ran out of steps."""

C = TypeVar("C")


@dataclass(frozen=True, slots=True)
class CallModel:
    """Open step ``step`` (its claim, compaction and opening messages) and settle its model call."""

    step: int


@dataclass(frozen=True, slots=True)
class RunCalls:
    """Run the tool calls step ``step`` settled (:func:`call_runs`), then report :meth:`TurnPlan.ran`."""

    step: int


@dataclass(frozen=True, slots=True)
class AskStop:
    """Step ``step`` left the turn without work: close it, fire the ``Stop`` hooks (a block steers
    the turn on), look for work waiting for a next step, then report :meth:`TurnPlan.stopped`."""

    step: int


@dataclass(frozen=True, slots=True)
class EndTurn:
    """End the turn: ``kind`` is its ``turn/end`` reason; an ``error`` carries ``code`` and ``message``."""

    kind: Literal["completed", "max-tokens", "blocked", "error"]
    code: str | None = None
    message: str | None = None


Action = CallModel | RunCalls | AskStop | EndTurn
"""What a driver does next."""


@dataclass(frozen=True, slots=True)
class CallRun(Generic[C]):
    """Consecutive calls of a step run alike: ordinary calls together (the loop's scheduler), or
    one delegation (a subagent a driver may run apart: Temporal's child workflow)."""

    delegates: bool
    calls: tuple[C, ...]


class TurnPlan:
    """The decisions of turn ``turn``, which may run ``max_steps`` steps (module docstring)."""

    def __init__(self, turn: int, max_steps: int) -> None:
        self.turn = turn
        self.max_steps = max_steps
        self.step = 0
        """The step the last :class:`CallModel` opened (0 before the first)."""
        self.cut_off = False
        """A step of this turn hit the token limit: the turn ends ``max-tokens`` (sticky)."""

    def start(self, *, blocked: bool = False) -> Action:
        """The turn's first action; ``blocked``: a ``UserPromptSubmit`` hook refused the prompt."""
        return EndTurn("blocked") if blocked else self._next_step()

    def settled(
        self,
        *,
        called: bool,
        cut_off: bool,
        failure: tuple[str, str] | None = None,
        blocked: bool = False,
    ) -> Action:
        """After the step's model call: it ``called`` tools, was ``cut_off`` at the token limit
        (its calls are dropped), failed for good (``failure``: code, message), or its prompt was
        ``blocked`` (a driver that fires ``UserPromptSubmit`` with the first call)."""
        if failure is not None:
            return EndTurn("error", *failure)
        if blocked:
            return EndTurn("blocked")
        self.cut_off = self.cut_off or cut_off
        return AskStop(self.step) if stops_after(called=called, cut_off=cut_off) else RunCalls(self.step)

    def ran(self) -> Action:
        """After the step's calls ran: the next step, unless an earlier step was cut off (the
        turn's ending is set: only work waiting after the ``Stop`` hooks keeps it going)."""
        return AskStop(self.step) if self.cut_off else self._next_step()

    def stopped(self, *, waiting: bool) -> Action:
        """After :class:`AskStop`: ``waiting``, a message waits for the next step (a ``Stop``
        block's steer, a hook's or a tool's context, a notice another session or a job sent)."""
        if waiting:
            return self._next_step()
        return EndTurn("max-tokens" if self.cut_off else "completed")

    def _next_step(self) -> Action:
        if self.step >= self.max_steps:
            return self.limit()
        self.step += 1
        return CallModel(self.step)

    def limit(self) -> EndTurn:
        """How the turn ends when all of its ``max_steps`` steps went on."""
        return EndTurn("error", STEP_LIMIT_CODE, f"turn {self.turn} exceeded {self.max_steps} steps")


def stops_after(*, called: bool, cut_off: bool) -> bool:
    """Whether a settled step goes to the ``Stop`` hooks rather than to its calls: it called
    none, or was cut off at the token limit, which drops its calls (:meth:`TurnPlan.settled`,
    and a driver's piece that fires ``Stop`` with the step: ``dsh.loop.stepwise``)."""
    return not called or cut_off


def call_runs(calls: Sequence[C], delegates: Callable[[C], bool]) -> list[CallRun[C]]:
    """``calls`` in model order as runs: each delegation alone, the ordinary calls between them together."""
    runs: list[CallRun[C]] = []
    for call in calls:
        if delegates(call):
            runs.append(CallRun(True, (call,)))
        elif runs and not runs[-1].delegates:
            runs[-1] = CallRun(False, (*runs[-1].calls, call))
        else:
            runs.append(CallRun(False, (call,)))
    return runs


def steps(max_steps: int) -> range:
    """The step numbers a turn may run: ``1 .. max_steps`` (the pre-plan workflow path)."""
    return range(1, max_steps + 1)


def step_limit(turn: int, max_steps: int) -> EndTurn:
    """How a turn ends when its ``max_steps`` steps all went on (the pre-plan workflow path)."""
    return TurnPlan(turn, max_steps).limit()
