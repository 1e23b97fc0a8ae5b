"""The turn's decisions (``dsh.loop.plan.TurnPlan``): what a driver does next after each thing it observed."""

from dsh.loop import plan
from dsh.loop.plan import AskStop, CallModel, EndTurn, RunCalls, TurnPlan


def test_a_turn_calls_the_model_runs_the_calls_and_ends_when_a_step_calls_none() -> None:
    p = TurnPlan(1, 5)
    assert p.start() == CallModel(1)
    assert p.settled(called=True, cut_off=False) == RunCalls(1)
    assert p.ran() == CallModel(2)
    assert p.settled(called=False, cut_off=False) == AskStop(2)
    assert p.stopped(waiting=False) == EndTurn("completed")


def test_a_blocked_prompt_ends_the_turn_with_no_step() -> None:
    assert TurnPlan(1, 5).start(blocked=True) == EndTurn("blocked")
    p = TurnPlan(1, 5)
    p.start()
    assert p.settled(called=False, cut_off=False, blocked=True) == EndTurn("blocked")


def test_a_failure_ends_the_turn_with_its_code_and_message() -> None:
    p = TurnPlan(1, 5)
    p.start()
    assert p.settled(called=True, cut_off=False, failure=("RATE", "slow down")) == EndTurn(
        "error", "RATE", "slow down"
    )


def test_waiting_work_after_stop_opens_another_step() -> None:
    p = TurnPlan(3, 5)
    p.start()
    p.settled(called=False, cut_off=False)
    assert p.stopped(waiting=True) == CallModel(2)


def test_max_tokens_drops_the_calls_and_is_sticky_for_the_turn() -> None:
    p = TurnPlan(1, 5)
    p.start()
    assert p.settled(called=True, cut_off=True) == AskStop(1)  # its calls are dropped
    assert p.stopped(waiting=True) == CallModel(2)  # a Stop block's steer goes on
    assert p.settled(called=True, cut_off=False) == RunCalls(2)
    assert p.ran() == AskStop(2)  # the ending is set: only waiting work goes on
    assert p.stopped(waiting=False) == EndTurn("max-tokens")


def test_past_the_budget_the_turn_ends_max_steps_naming_turn_and_budget() -> None:
    p = TurnPlan(4, 2)
    assert p.start() == CallModel(1)
    p.settled(called=True, cut_off=False)
    assert p.ran() == CallModel(2)
    p.settled(called=True, cut_off=False)
    limit = p.ran()
    assert limit == EndTurn("error", plan.STEP_LIMIT_CODE, "turn 4 exceeded 2 steps")
    assert plan.STEP_LIMIT_CODE == "MAX_STEPS"
    assert TurnPlan(1, 0).start() == EndTurn("error", "MAX_STEPS", "turn 1 exceeded 0 steps")
    assert plan.step_limit(4, 2) == limit


def test_a_settled_step_goes_to_stop_when_it_called_nothing_or_was_cut_off() -> None:
    assert not plan.stops_after(called=True, cut_off=False)
    assert plan.stops_after(called=True, cut_off=True)
    assert plan.stops_after(called=False, cut_off=False)


def test_call_runs_keep_each_delegation_alone_and_ordinary_calls_together() -> None:
    runs = plan.call_runs(["a", "b", "S", "c", "T", "U"], str.isupper)
    assert [(r.delegates, r.calls) for r in runs] == [
        (False, ("a", "b")),
        (True, ("S",)),
        (False, ("c",)),
        (True, ("T",)),
        (True, ("U",)),
    ]
    assert plan.call_runs([], str.isupper) == []
