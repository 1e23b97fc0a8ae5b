"""Durable turns on Temporal: a workflow per turn run, each model step and tool call an activity.

Activities carry references (session id, the seq a turn starts after, call ids); the events
go to the dsh store inside them, so a workflow history stays small however long the
conversation. See the package README for the contract.
"""

from __future__ import annotations

from dsh.temporal.connect import connect
from dsh.temporal.submit import SubmittedTurn, submit_turn
from dsh.temporal.worker import Worker
from dsh.temporal.workflow import TurnWorkflow, workflow_id

__all__ = ["SubmittedTurn", "TurnWorkflow", "Worker", "connect", "submit_turn", "workflow_id"]
