"""The original's hook recordings under replay: injected hook messages are compared, ids repeat."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dsh.snapshot import run_scenario
from dsh.store.memory import MemoryEventStore
from dsh.tools.landlock import landlock_abi


def _copy(upstream: Path, name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(upstream / name, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    return target


async def test_a_different_hook_context_is_a_divergence(upstream: Path, tmp_path: Path) -> None:
    scenario = _copy(upstream, "hook-cc-posttool-context", tmp_path)
    hooks = scenario / "workspace" / "hooks.json"
    hooks.write_text(hooks.read_text().replace("verified against the audit log", "made up"))
    result = await run_scenario(scenario, "replay")
    assert not result.ok
    (report,) = result.sessions
    assert report.divergence is not None and report.divergence.call == 2
    assert "made up" in report.divergence.live and "audit log" in report.divergence.recorded


async def test_a_stop_hook_that_does_not_block_diverges(upstream: Path, tmp_path: Path) -> None:
    scenario = _copy(upstream, "hook-cc-stop-continue", tmp_path)
    (scenario / "workspace" / "hooks.json").write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [{"command": "true"}]}]}})
    )
    result = await run_scenario(scenario, "replay")
    assert not result.ok
    assert "served 1 of 2" in result.failure_text()


async def test_handler_ids_restart_for_every_scenario_run(upstream: Path) -> None:
    for _ in range(2):
        store = MemoryEventStore()
        result = await run_scenario(upstream / "hook-cc-stop-continue", "replay", store=store)
        assert result.ok, result.failure_text()
        (summary,) = await store.list_sessions()
        loaded = await store.load(summary.header.id)
        ids = [e.data["handlerId"] for e in loaded.events if e.type == "hook/invoked"]
        assert ids == ["claude-code:Stop:1", "claude-code:Stop:2"]


HOOK_RECORDINGS = sorted(
    ["hook-cc-invalid-matcher", "hook-cc-pretool-deny", "hook-cc-posttool-context",
     "hook-cc-promptsubmit-block", "hook-cc-stop-continue", "hook-codex-pretool-block"]
)  # fmt: skip


@pytest.mark.parametrize("name", HOOK_RECORDINGS)
async def test_hook_recordings_replay_strictly_under_landlock(
    upstream: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hooks get bash's write rules under the Landlock backend too: the Stop hook's
    ``touch .stop_fired`` at the top of a workspace holding ``hooks.json`` (a protected entry)
    works, so the recording's second turn happens as recorded."""
    if landlock_abi() < 1:
        pytest.skip("this kernel does not enforce Landlock")
    monkeypatch.setenv("DSH_SANDBOX_BACKEND", "landlock")
    store = MemoryEventStore()
    result = await run_scenario(upstream / name, "replay", store=store)
    assert result.ok, result.failure_text()
    for report in result.sessions:
        assert report.consumed == report.calls and report.divergence is None
    (summary,) = await store.list_sessions()
    invoked = [e for e in (await store.load(summary.header.id)).events if e.type == "hook/invoked"]
    assert all("Permission denied" not in json.dumps(e.data) for e in invoked)
