"""The step budget's one home: the steps a turn may run and the error it ends with past them."""

from dsh.loop import plan


def test_steps_run_from_one_to_the_budget() -> None:
    assert list(plan.steps(3)) == [1, 2, 3]
    assert list(plan.steps(0)) == []


def test_the_step_limit_names_the_turn_and_the_budget() -> None:
    limit = plan.step_limit(4, 2)
    assert limit.code == "MAX_STEPS" == plan.STEP_LIMIT_CODE
    assert limit.message == "turn 4 exceeded 2 steps"
