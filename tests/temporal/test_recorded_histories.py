"""Workers upgraded under running turns: histories recorded by earlier workflow code replay.

Each file under ``histories/`` is a whole ``dsh-turn`` run recorded by ``histories/record.py``
with the code named here; today's :class:`TurnWorkflow` must make the same decisions for it
(Temporal's ``Replayer`` raises on nondeterminism), which ``workflow.patched`` keeps true.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from dsh.temporal import TurnWorkflow

HISTORIES = Path(__file__).parent / "histories"
RECORDED = {
    "calls_one_by_one.json": "00ee8b8, before dsh-batched-calls: one dsh.tool_call activity per call",
    "calls_batched.json": "dsh-batched-calls: a step's ordinary calls in one dsh.tool_calls activity",
    "steps_hooked.json": "dsh-hooked-steps: dsh.step_tools, the hooks' messages carried to the next step",
    "spawn_unhooked.json": "d3591a0, before dsh-child-hooks: a spawn's hooks carry nothing to the next step",
    "spawn_hooked.json": "dsh-child-hooks: dsh.start_child / dsh.finish_child carry the hooks' messages",
}
CALL_ACTIVITIES = {
    "calls_one_by_one.json": ["dsh.tool_call"] * 3,
    "calls_batched.json": ["dsh.tool_calls"] * 2,
    "steps_hooked.json": ["dsh.step_tools"] * 2,
    "spawn_unhooked.json": ["dsh.start_child", "dsh.finish_child"],
    "spawn_hooked.json": ["dsh.start_child", "dsh.finish_child"],
}


def _activities(history: WorkflowHistory) -> list[str]:
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]


@pytest.mark.parametrize("name", list(RECORDED))
async def test_a_recorded_history_replays_on_todays_workflow(name: str) -> None:
    text = (HISTORIES / name).read_text()
    history = WorkflowHistory.from_json(f"recorded-{name}", json.loads(text))
    calls = [
        a
        for a in _activities(history)
        if a.startswith(("dsh.tool_call", "dsh.step_tools", "dsh.start", "dsh.fin"))
    ]
    assert calls == CALL_ACTIVITIES[name]
    await Replayer(workflows=[TurnWorkflow]).replay_workflow(history)  # raises on nondeterminism
