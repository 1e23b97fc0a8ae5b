"""Snapshot scenarios: the runner (record / replay / refresh) and the pytest plugin.

Names load on first use (:mod:`dsh.lazy`), so the pytest plugin registered for every test
run imports the runner only when a scenario runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh.lazy import exports

_HOMES = {
    "SessionReport": "dsh.replay.verdict",
    "AgentFactory": "dsh.snapshot.runner",
    "AgentSetup": "dsh.snapshot.runner",
    "ScenarioResult": "dsh.snapshot.runner",
    "ScenarioSkipped": "dsh.snapshot.runner",
    "default_agent_factory": "dsh.snapshot.runner",
    "run_scenario": "dsh.snapshot.runner",
    "snapshot_mode": "dsh.snapshot.runner",
}

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

__getattr__, __dir__ = exports(__name__, _HOMES)

if TYPE_CHECKING:
    from dsh.replay.verdict import SessionReport
    from dsh.snapshot.runner import (
        AgentFactory,
        AgentSetup,
        ScenarioResult,
        ScenarioSkipped,
        default_agent_factory,
        run_scenario,
        snapshot_mode,
    )
