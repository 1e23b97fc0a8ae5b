"""Scenario replay: the original's recordings, our bundled scenarios, the slice, binding."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from dsh.events.chunks import Chunk
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model import ModelRequest
from dsh.replay.files import load_replay_model
from dsh.replay.model import ReplayModel
from dsh.snapshot import AgentSetup, default_agent_factory, run_scenario
from dsh.store.memory import MemoryEventStore
from dsh.subagents import standard_tools
from dsh.tools import ToolContext, ToolOutput, ToolRegistry
from dsh.tools.builtin import BashArgs, BashTool
from tests.patience import patience
from tests.scenario_recipes import RECIPES, SNAPSHOTS, record

STRICT = [
    "text-turn",
    "tool-call-turn",
    "fs-read",
    "fs-read-window",
    "fs-write",
    "fs-write-overwrite",
    "fs-delete-recreate",
    "bash-spill",
    "empty-response-retry",
    "max-tokens-continue",
    "handshake",
    "cancel-tool-calls",
    "error-finish",
    "subagent-spawn-in-process",
    "subagent-fork-in-process",
    "hook-cc-invalid-matcher",  # the original drops the whole hooks file: no hook runs there either
    "hook-cc-pretool-deny",
    "hook-cc-posttool-context",
    "hook-cc-promptsubmit-block",
    "hook-cc-stop-continue",
    "hook-codex-pretool-block",
    "packed-chunks",
    "subagent-continuable",
    "subagent-report",
    "escalation-approved",  # the escalation is asked and answered from input.json's permissionAnswers
    "fs-escalation-approved",
    "missing-sandbox-runner",  # the recorded missing runner: refused in the foreground, a job's spawn failure
    "agent-instructions",  # AGENTS.md baseline, its re-send after the compaction fixture, nested files
    "skill-load",  # the skill catalog and the skill tool
    "todo-write",
    "read-image",  # the recorded workspace's red.png, stored as an attachment
    "web-fetch",  # served from the recording: web_fetch cannot re-run keylessly (no network)
]
"""The original's recordings whose tools and behaviour dsh has: they replay strictly."""

NOT_REPRODUCED: dict[str, str] = {}
"""Recordings whose only difference is a message the original injected and dsh does not
produce yet: they pass, and the report names the kind under ``notReproduced``."""

NOT_YET: dict[str, str] = {}
"""Recordings that need later work: they must fail the check, never pass it."""


def test_every_upstream_recording_is_classified(upstream: Path) -> None:
    assert sorted(STRICT + list(NOT_YET) + list(NOT_REPRODUCED)) == sorted(
        p.name for p in upstream.iterdir() if p.is_dir()
    )


@pytest.mark.parametrize("name", STRICT)
async def test_upstream_recording_replays_strictly(upstream: Path, name: str) -> None:
    result = await run_scenario(upstream / name, "replay")
    assert result.ok, result.failure_text()
    assert result.sessions[0].kind == "primary"
    for report in result.sessions:
        assert report.live_id is not None or report.calls == 0
        assert report.consumed == report.calls
        assert report.divergence is None and report.tolerated == []
        assert report.tool_results.equal == report.tool_results.total
        assert report.final_text == report.recorded_text


def _edited_recording(upstream: Path, tmp_path: Path, name: str, edit: Callable[[list[str]], None]) -> Path:
    """A copy of the upstream recording ``name`` whose ``session.jsonl`` lines ``edit`` changed."""
    directory = tmp_path / name
    shutil.copytree(upstream / name, directory)
    log = directory / "session.jsonl"
    lines = log.read_text().splitlines()
    edit(lines)
    log.write_text("\n".join(lines) + "\n")
    return directory


def _insert_after_seq(lines: list[str], seq: int, data: dict[str, Any]) -> None:
    """Insert a ``user/message`` after event ``seq``, renumbering the later (packed) rows."""
    at = next(i for i, line in enumerate(lines) if json.loads(line).get("seq") == seq) + 1
    for i in range(at, len(lines)):
        row = json.loads(lines[i])
        for key in ("seq", "seq0"):
            if key in row:
                row[key] += 1
        lines[i] = json.dumps(row, ensure_ascii=False, separators=(",", ":"))
    event = {"type": "user/message", "seq": seq + 1, "time": 0, "data": data, "surfaceOp": "append"}
    lines.insert(at, json.dumps(event, separators=(",", ":")))


async def test_injected_messages_dsh_does_not_produce_are_listed(upstream: Path, tmp_path: Path) -> None:
    catalog = {
        "content": [{"type": "text", "text": '<skill_content name="x">\n</skill_content>'}],
        "source": {"kind": "skill-invocation", "name": "x", "form": "instructions"},
        "role": "user",
        "id": "9f1d1b35-5f0e-4b8e-9a53-0c6d2b7a1e11",
    }
    scenario = _edited_recording(
        upstream, tmp_path, "text-turn", lambda lines: _insert_after_seq(lines, 5, catalog)
    )
    result = await run_scenario(scenario, "replay")
    report = result.sessions[0]
    assert report.not_reproduced == ["skill-invocation"]  # the runtime-context snapshot is compared now
    assert report.harness_actions is None and result.ok, result.failure_text()


async def test_the_runtime_context_snapshot_is_compared(upstream: Path, tmp_path: Path) -> None:
    """A recording whose model saw another runtime context diverges at its first call
    (red with the snapshot's plugin left out of REPRODUCED_KINDS)."""

    def edit(lines: list[str]) -> None:
        lines[:] = [
            line.replace("Approval prompts are disabled", "Approval prompts are off") for line in lines
        ]

    result = await run_scenario(_edited_recording(upstream, tmp_path, "text-turn", edit), "replay")
    assert not result.ok
    divergence = result.sessions[0].divergence
    assert divergence is not None and divergence.call == 1
    assert "Approval prompts are off" in result.failure_text()


async def test_upstream_recordings_needing_later_work_fail_the_check(upstream: Path) -> None:
    for name, needs in sorted(NOT_YET.items()):  # each must fail until built
        result = await run_scenario(upstream / name, "replay", step_timeout=2.0)
        assert not result.ok, f"{name} passed but needs: {needs}"


async def test_upstream_fork_child_answers_marmalade(upstream: Path) -> None:
    result = await run_scenario(upstream / "subagent-fork-in-process", "replay")
    child = result.sessions[1]
    assert child.kind == "fork" and child.final_text == "MARMALADE"
    assert child.inherited_event_count > 0
    assert result.sessions[0].final_text == "PARENT_DONE"


@pytest.mark.parametrize("name", ["subagent-fork-in-process"])
async def test_upstream_fork_is_red_without_the_slice(upstream: Path, name: str) -> None:
    strict = await run_scenario(upstream / name, "replay", sliced=False)
    assert not strict.ok  # the check sees the child asked with its own prompt, not the parent's
    assert "session session.1.jsonl" in strict.failure_text()
    assert "diverged at call 1" in strict.failure_text()
    drifting = await run_scenario(upstream / name, "replay", sliced=False, drift="warn")
    assert not drifting.ok
    child = drifting.sessions[1]
    assert child.final_text == "OK"  # the parent's recorded turn-1 answer
    assert "answered 'OK'" in drifting.failure_text()


@pytest.mark.parametrize("name", ["subagent-fork", "subagent-mixed"])
async def test_bundled_fork_scenarios_are_red_without_the_slice(name: str) -> None:
    sliced = await run_scenario(SNAPSHOTS / name, "replay")
    assert sliced.ok, sliced.failure_text()
    unsliced = await run_scenario(SNAPSHOTS / name, "replay", sliced=False, drift="warn")
    assert not unsliced.ok
    assert unsliced.diff  # the fork child says OK instead of the codeword
    assert '"text":"OK"' in unsliced.diff
    assert (await run_scenario(SNAPSHOTS / name, "replay", sliced=False)).sessions[-1].divergence


class _Shuffled:
    """Delays each session's first call by a random moment, so concurrent children start in
    a different order on every run."""

    def __init__(self, inner: object, rng: random.Random) -> None:
        self._inner = inner
        self._rng = rng
        self._seen: set[str] = set()

    @property
    def provider(self) -> str:
        return str(getattr(self._inner, "provider", "replay"))

    async def aclose(self) -> None:
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        if request.session_id not in self._seen:
            self._seen.add(request.session_id)
            await asyncio.sleep(self._rng.uniform(0, 0.004))
        async for chunk in self._inner.stream(request):  # type: ignore[attr-defined]
            yield chunk


def _shuffling(wrapper: type[_Shuffled], rng: random.Random) -> Callable[[AgentSetup], Awaitable[Agent]]:
    """The default agent factory with its model wrapped in ``wrapper``."""

    async def factory(setup: AgentSetup) -> Agent:
        shuffled = wrapper(setup.model, rng)
        return await default_agent_factory(dataclasses.replace(setup, model=shuffled))

    return factory


async def test_parallel_distinct_children_replay_50_times_shuffled() -> None:
    rng = random.Random(20261130)
    orders: set[tuple[str, ...]] = set()

    for _ in range(50):
        factory = _shuffling(_Shuffled, rng)
        result = await run_scenario(SNAPSHOTS / "subagent-parallel-distinct", "replay", factory=factory)
        assert result.ok, result.failure_text()
        texts = {r.final_text for r in result.sessions[1:]}
        assert texts == {"ALPHA", "BETA"}
        orders.add(tuple(r.recorded_id for r in sorted(result.sessions[1:], key=lambda r: r.live_id or "")))
    assert len(orders) > 1  # the children really did bind in different orders


class _ShuffledInOrder(_Shuffled):
    """:class:`_Shuffled`, still passing the replay's recorded cross-session order through."""

    async def before_delivery(self, *args: Any, **kwargs: Any) -> None:
        await self._inner.before_delivery(*args, **kwargs)  # type: ignore[attr-defined]

    async def before_claim(self, *args: Any, **kwargs: Any) -> None:
        await self._inner.before_claim(*args, **kwargs)  # type: ignore[attr-defined]

    def progressed(self, session: str, event: Any = None) -> None:
        self._inner.progressed(session, event)  # type: ignore[attr-defined]


async def test_background_children_replay_50_times_shuffled() -> None:
    """Two background children start (and so finish) in a random order on every run; each
    binds to its own script and their notices reach the parent where the recording has them."""
    rng = random.Random(20261201)
    orders: set[tuple[str, ...]] = set()
    for _ in range(50):
        factory = _shuffling(_ShuffledInOrder, rng)
        store = MemoryEventStore()
        result = await run_scenario(SNAPSHOTS / "subagent-background", "replay", factory=factory, store=store)
        assert result.ok, result.failure_text()
        assert {r.final_text for r in result.sessions[1:]} == {"ALPHA", "BETA"}
        parent = await store.load(result.sessions[0].live_id or "")
        notices = [
            e.data["content"][2]["text"]
            for e in parent.events
            if e.type == "user/message" and e.data["source"]["kind"] == "subagent-settled"
        ]
        assert sorted(notices) == ["ALPHA", "BETA"]
        orders.add(tuple(r.recorded_id for r in sorted(result.sessions[1:], key=lambda r: r.live_id or "")))
    assert len(orders) > 1  # the children really did start in different orders


@pytest.mark.parametrize("name", sorted(RECIPES))
async def test_record_then_replay_round_trip(tmp_path: Path, name: str) -> None:
    directory = tmp_path / name
    result, server = await record(RECIPES[name], directory)
    assert result.ok, result.failure_text()
    assert server.requests, "recording went over HTTP"
    bundled = (SNAPSHOTS / name / "transcript.expected.jsonl").read_text()
    if RECIPES[name].deterministic:
        assert (directory / "transcript.expected.jsonl").read_text() == bundled
    replayed = await run_scenario(directory, "replay")
    assert replayed.ok, replayed.failure_text()
    for report in replayed.sessions:
        assert report.consumed == report.calls


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


async def test_unconsumed_script_fails_naming_scenario_and_session(tmp_path: Path) -> None:
    scenario = _copy(SNAPSHOTS / "text-turn", tmp_path)
    extra = {"kind": "chunks", "chunks": [{"type": "finish", "reason": {"kind": "stop"}}]}
    (scenario / "replay.override.json").write_text(json.dumps({"patches": [{"at": 1, "entry": extra}]}))
    result = await run_scenario(scenario, "replay")
    assert not result.ok
    text = result.failure_text()
    assert "text-turn" in text and "session.jsonl" in text and "served 1 of 2" in text
    [problem] = result.problems
    assert "\n" not in problem
    hint = "to accept a model-side change, re-record: `pytest --dsh-snapshot=record"
    assert text.splitlines()[-1].startswith(hint)


async def test_exhausted_script_fails_naming_scenario_and_session(tmp_path: Path) -> None:
    scenario = _copy(SNAPSHOTS / "tool-call-turn", tmp_path)
    recorded = (scenario / "session.jsonl").read_text().splitlines()
    first_call = next(json.loads(x) for x in recorded[1:] if '"assistant/message"' in x)
    override = [{"kind": "chunks", "chunks": first_call["data"]["stream"]["chunks"]}]
    (scenario / "replay.override.json").write_text(json.dumps(override))
    result = await run_scenario(scenario, "replay")
    assert not result.ok
    problem = next(p for p in result.problems if "exhausted" in p)
    assert "tool-call-turn" in problem and "session.jsonl" in problem
    assert "\n" not in problem


async def test_extra_live_session_fails(tmp_path: Path) -> None:
    scenario = _copy(SNAPSHOTS / "text-turn", tmp_path)
    steps = json.loads((scenario / "input.json").read_text())["steps"]
    steps += [{"op": "newSession"}, {"op": "prompt", "text": "again"}]
    (scenario / "input.json").write_text(json.dumps({"steps": steps}))
    result = await run_scenario(scenario, "replay")
    assert not result.ok
    problem = next(p for p in result.problems if "second top-level session" in p)
    assert "scenario text-turn:" in problem and "\n" not in problem


async def test_malformed_override_is_refused_on_load(tmp_path: Path) -> None:
    from dsh.errors import OverrideError

    scenario = _copy(SNAPSHOTS / "text-turn", tmp_path)
    (scenario / "replay.override.json").write_text(json.dumps([{"kind": "chunks", "chunks": [], "x": 1}]))
    with pytest.raises(OverrideError) as info:
        await run_scenario(scenario, "replay")
    assert "text-turn" in str(info.value) and "replay.override.json" in str(info.value)
    assert "\n" not in str(info.value)


async def test_transcript_mismatch_shows_a_unified_diff(tmp_path: Path) -> None:
    scenario = _copy(SNAPSHOTS / "text-turn", tmp_path)
    path = scenario / "transcript.expected.jsonl"
    path.write_text(path.read_text().replace("PONG", "PING"))
    result = await run_scenario(scenario, "replay")
    assert not result.ok
    assert "-" in result.diff and "+" in result.diff and "PING" in result.diff


async def test_refresh_rewrites_only_the_transcript(tmp_path: Path) -> None:
    scenario = _copy(SNAPSHOTS / "subagent-spawn", tmp_path)
    logs = {p.name: p.read_bytes() for p in scenario.glob("session*.jsonl")}
    (scenario / "transcript.expected.jsonl").write_text("stale\n")
    result = await run_scenario(scenario, "refresh")
    assert result.ok
    assert (scenario / "transcript.expected.jsonl").read_text() == (
        SNAPSHOTS / "subagent-spawn" / "transcript.expected.jsonl"
    ).read_text()
    assert {p.name: p.read_bytes() for p in scenario.glob("session*.jsonl")} == logs


class _JobSettlesFirst(BashTool):
    """``bash`` whose background call answers only once the job has settled, so its notice is
    due before the next step's claim (the order the original's recording did not have)."""

    async def call(self, args: BashArgs, ctx: ToolContext) -> ToolOutput:
        output = await super().call(args, ctx)
        if args.run_in_background and ctx.jobs is not None:
            for job in ctx.jobs.jobs():
                await asyncio.wait_for(job.done.wait(), patience(30))
            await asyncio.sleep(0.05)  # any delivery not held by the recorded order happens now
        return output


async def _settling_first_factory(setup: AgentSetup) -> Agent:
    """The default agent, with :class:`_JobSettlesFirst` as its ``bash``."""
    standard = standard_tools()
    tools = [standard.get(n) for n in standard.names() if n != "bash"]
    registry = ToolRegistry(
        [_JobSettlesFirst(default_timeout_ms=60_000), *(t for t in tools if t is not None)]
    )
    config = AgentConfig(
        model=setup.model_name,
        retry=NO_DELAY,
        sandbox=setup.sandbox,
        approver=setup.approver,
        approval_policy=setup.approval_policy,
    )
    return await Agent.create(setup.store, model=setup.model, tools=registry, config=config, cwd=setup.cwd)


async def test_a_job_notice_is_claimed_where_the_recording_claimed_it(upstream: Path) -> None:
    """missing-sandbox-runner spliced its notice after step 2's end, past that step's claim:
    held until step 3 began, it is claimed by step 4 even when the job settles at once."""
    result = await run_scenario(
        upstream / "missing-sandbox-runner", "replay", factory=_settling_first_factory
    )
    assert result.ok, result.failure_text()
    assert result.sessions[0].not_reproduced == []  # the notice and the runtime context are compared


async def test_the_recorded_order_is_awaited_while_another_session_still_progresses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hold gives up only after ``ORDER_WAIT`` s in which no session appended anything: a
    child that keeps appending, however slowly (a loaded machine), is waited for. (A bound
    on the whole wait let a parent end its turn before a slow child's notice: the ACP
    ``subagent-report`` recording came out of order on a busy machine.)"""
    model, _ = load_replay_model(SNAPSHOTS / "text-turn")
    monkeypatch.setattr(ReplayModel, "ORDER_WAIT", patience(1.0))
    gap = ReplayModel.ORDER_WAIT / 4
    reached = False

    async def slow_child() -> None:
        nonlocal reached
        for _ in range(8):  # twice ORDER_WAIT in all, never ORDER_WAIT without an event
            await asyncio.sleep(gap)
            model.progressed("child")
        reached = True
        model.progressed("child")

    child = asyncio.create_task(slow_child())
    async with asyncio.timeout(patience(30)):  # a hang guard
        await model._until(lambda: reached)
        assert reached, "the hold went on while the child was still appending"
        await child
        await model._until(lambda: False)  # nothing progresses: it goes on after ORDER_WAIT
