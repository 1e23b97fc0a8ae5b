"""Snapshot scenarios: the runner (record / replay / refresh) and the pytest plugin."""

from dsh.snapshot.reports import SessionReport
from dsh.snapshot.runner import (
    AgentFactory,
    AgentSetup,
    ScenarioResult,
    ScenarioSkipped,
    default_agent_factory,
    run_scenario,
    snapshot_mode,
)

__all__ = [
    "AgentFactory",
    "AgentSetup",
    "ScenarioResult",
    "ScenarioSkipped",
    "SessionReport",
    "default_agent_factory",
    "run_scenario",
    "snapshot_mode",
]
