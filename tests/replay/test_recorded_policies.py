"""What a replay runs under is what the recording says, not the replaying process's defaults:
the approval policy the recorded model was told (its runtime-context snapshot, when the log
holds no ``approval/policy``), with the file policy it was told."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.snapshot import run_scenario
from dsh.tools.approval import APPROVAL_CONTEXT
from dsh.tools.sandbox import SandboxPolicy, runtime_context_text
from tests.replay.test_scenarios import _edited_recording

DFA = runtime_context_text(SandboxPolicy(mode="danger-full-access"), Path("/w"))
READ_ONLY = runtime_context_text(SandboxPolicy(mode="read-only"), Path("/w"))


@pytest.mark.parametrize(
    ("mode_text", "approval"),
    [(READ_ONLY, "never"), (DFA, "ask")],
    ids=["read-only-never", "danger-full-access-ask"],
)
async def test_the_approval_policy_is_the_one_the_recorded_snapshot_states(
    upstream: Path, tmp_path: Path, mode_text: str, approval: str
) -> None:
    """A recording without ``approval/policy`` whose snapshot pairs a file policy with an
    approval text the configuration default would not give it (red with the default rule:
    ``ask`` unless ``danger-full-access``)."""

    def edit(lines: list[str]) -> None:
        never = APPROVAL_CONTEXT["never"]
        lines[:] = [
            line.replace(DFA, mode_text).replace(never, APPROVAL_CONTEXT[approval])  # type: ignore[index]
            for line in lines
        ]

    scenario = _edited_recording(upstream, tmp_path, "text-turn", edit)
    assert APPROVAL_CONTEXT[approval] in (scenario / "session.jsonl").read_text()  # type: ignore[index]
    result = await run_scenario(scenario, "replay")
    assert result.ok, result.failure_text()
    assert result.sessions[0].divergence is None
