"""A scenario result's repr is a summary, whatever the run's size."""

from __future__ import annotations

from dsh.snapshot import run_scenario
from dsh.snapshot.runner import SCENARIOS


async def test_a_result_repr_names_the_verdict_and_counts_the_rest() -> None:
    result = await run_scenario(SCENARIOS / "tool-call-turn", "replay")
    assert result.ok, result.failure_text()
    text = repr(result)
    assert text.startswith("ScenarioResult(scenario='tool-call-turn', mode='replay', ok=True, problems=[]")
    assert f"transcript={len(result.transcript)} lines" in text
    assert f"reuse={len(result.reuse)} requests" in text
    assert not any(str(line.get("text", "")) in text for line in result.transcript if line.get("text"))
    assert "Reuse(" not in text and "SessionSpend(" not in text
