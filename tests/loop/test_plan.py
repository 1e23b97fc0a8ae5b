"""The step budget's one home: the steps a turn may run and the error it ends with past them."""

from dsh.loop import plan


def test_steps_run_from_one_to_the_budget() -> None:
    assert list(plan.steps(3)) == [1, 2, 3]
    assert list(plan.steps(0)) == []


def test_the_step_limit_names_the_turn_and_the_budget() -> None:
    limit = plan.step_limit(4, 2)
    assert limit.code == "MAX_STEPS" == plan.STEP_LIMIT_CODE
    assert limit.message == "turn 4 exceeded 2 steps"


def test_another_step_runs_after_tool_calls_unless_cut_off_or_when_work_waits() -> None:
    assert plan.continues(called=True, cut_off=False, waiting=False)
    assert not plan.continues(called=True, cut_off=True, waiting=False)  # max-tokens drops the calls
    assert not plan.continues(called=False, cut_off=False, waiting=False)
    assert plan.continues(called=False, cut_off=True, waiting=True)  # a notice keeps a cut-off turn going
    assert plan.ending(True) == "max-tokens" and plan.ending(False) == "completed"
