"""The scenario runner: drive ``input.json`` against an agent in replay, record or refresh mode."""

from __future__ import annotations

import asyncio
import difflib
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dsh.errors import ReplayError, ScenarioError, UsageError
from dsh.hooks import HookSet, reset_handler_ids
from dsh.loop import CLEAN_ENDS, NO_DELAY, Agent, AgentConfig, Feed, RetryPolicy
from dsh.model import Model
from dsh.model.settings import resolve_provider
from dsh.replay.fidelity import DRIFTS, Divergence, Drift, ToolTally, harness_actions, tool_results
from dsh.replay.files import PRIMARY, load_replay_model, read_input, read_tolerances
from dsh.replay.model import ReplayModel
from dsh.replay.permissions import RecordedAnswers, read_permission_answers, replay_policy
from dsh.session import final_assistant_text
from dsh.snapshot.recording import TRANSCRIPT, recover, scenario_logs, write_failed, write_recording
from dsh.snapshot.steps import StepPlayer, validate_steps
from dsh.snapshot.transcript import build_transcript, child_kind, dumps_lines, normalize
from dsh.store import EventStore, LoadedSession
from dsh.store.memory import MemoryEventStore
from dsh.subagents import SubagentTool, standard_tools
from dsh.tools.approval import ApprovalPolicy, Approver
from dsh.tools.sandbox import SandboxPolicy

Mode = Literal["replay", "once", "record", "refresh"]
MODES: tuple[Mode, ...] = ("replay", "once", "record", "refresh")
SCENARIOS = Path(__file__).resolve().parent / "scenarios"
"""The bundled scenarios shipped with dsh."""


class ScenarioSkipped(ScenarioError):
    """The scenario cannot run in this mode here (e.g. record mode without a provider)."""


def drift_mode(value: str | None = None) -> Drift:
    """The drift mode from ``value`` or ``DSH_DRIFT`` (default ``strict``)."""
    raw = (value if value is not None else os.environ.get("DSH_DRIFT", "")).strip() or "strict"
    if raw not in DRIFTS:
        raise UsageError(f"drift mode {raw!r} is not one of strict, warn")
    return raw


def snapshot_mode(value: str | None = None) -> Mode:
    """The mode from ``value`` or ``DSH_SNAPSHOT`` (default ``replay``)."""
    raw = value if value is not None else os.environ.get("DSH_SNAPSHOT", "")
    raw = raw.strip() or "replay"
    if raw not in MODES:
        raise UsageError(f"snapshot mode {raw!r} is not one of replay, once, record, refresh")
    return raw


@dataclass(frozen=True, slots=True)
class AgentSetup:
    """What an agent factory gets to build the scenario's agent."""

    store: EventStore
    model: Model
    model_name: str
    cwd: Path
    feed: Feed
    replay: bool
    sandbox: SandboxPolicy | None = None
    """The policy the scenario's commands run under (``None``: unconfined, a trusted run)."""
    approver: Approver | None = None
    """Who answers approval requests (the scenario's recorded ``permissionAnswers``)."""
    approval_policy: ApprovalPolicy | None = None
    """The recording's approval policy (``None``: derived from ``sandbox``)."""


AgentFactory = Callable[[AgentSetup], Awaitable[Agent]]


async def default_agent_factory(setup: AgentSetup) -> Agent:
    """The built-in tools plus both subagent tools; zero-delay retries under replay; the
    workspace's hooks (never the user-level ones: a recording is its workspace), numbered
    from 1 for the scenario's first session as in a fresh process."""
    if not await setup.store.list_sessions():
        reset_handler_ids()
    config = AgentConfig(
        model=setup.model_name,
        retry=NO_DELAY if setup.replay else RetryPolicy(),
        hooks=HookSet(),
        sandbox=setup.sandbox,
        approver=setup.approver,
        approval_policy=setup.approval_policy,
    )
    return await Agent.create(
        setup.store,
        model=setup.model,
        tools=standard_tools(),
        config=config,
        cwd=setup.cwd,
        feed=setup.feed,
    )


@dataclass(frozen=True, slots=True)
class SessionReport:
    """One recorded session and the live session it was bound to."""

    recorded_id: str
    live_id: str | None
    kind: str
    inherited_event_count: int
    calls: int
    consumed: int
    final_text: str
    recorded_text: str
    tool_results: ToolTally = field(default_factory=lambda: ToolTally(0, 0))
    divergence: Divergence | None = None
    not_reproduced: list[str] = field(default_factory=list)
    tolerated: list[Divergence] = field(default_factory=list)
    harness_actions: tuple[list[str], list[str]] | None = None
    """(recorded, live) hook runs and approvals when they differ."""

    def to_json(self) -> dict[str, Any]:
        return {
            "recordedId": self.recorded_id,
            "liveId": self.live_id,
            "kind": self.kind,
            "inheritedEventCount": self.inherited_event_count,
            "calls": self.calls,
            "consumed": self.consumed,
            "finalText": self.final_text,
            "toolResults": self.tool_results.to_json(),
            "divergence": self.divergence.to_json() if self.divergence else None,
            "notReproduced": self.not_reproduced,
            "tolerated": [t.to_json() for t in self.tolerated],
            "harnessActions": (
                None
                if self.harness_actions is None
                else {"recorded": self.harness_actions[0], "live": self.harness_actions[1]}
            ),
        }


@dataclass(slots=True)
class ScenarioResult:
    """What a scenario run produced and whether it passed."""

    scenario: str
    mode: Mode
    transcript: list[dict[str, Any]]
    sessions: list[SessionReport] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    diff: str = ""
    changed: list[str] = field(default_factory=list)
    """Files a record or refresh wrote (added, changed or removed), by name."""

    @property
    def ok(self) -> bool:
        return not self.problems and not self.diff

    def failure_text(self) -> str:
        parts = [*self.problems]
        if self.diff:
            parts.append(f"scenario {self.scenario}: transcript differs from {TRANSCRIPT}:\n{self.diff}")
        if parts and self.mode in ("replay", "refresh"):
            parts.append(accept_hint(self.scenario, model_side=not self.diff or bool(self.problems)))
        return "\n".join(parts)


def accept_hint(name: str, *, model_side: bool) -> str:
    """How to accept a deliberate change (one line)."""
    refresh = f"pytest --dsh-snapshot=refresh -k {name}` (or `dsh scenario refresh DIR`)"
    record = f"pytest --dsh-snapshot=record -k {name}` (or `dsh scenario record DIR`)"
    if model_side:
        return f"to accept a model-side change, re-record: `{record}; an expected-output change: `{refresh}"
    return f"to accept an expected-output change: `{refresh}; a model-side change: `{record}"


def read_steps(directory: Path) -> list[dict[str, Any]]:
    """The validated steps of ``input.json`` (see :mod:`dsh.snapshot.steps` for the ops)."""
    return validate_steps(read_input(directory).get("steps"), directory.name)


def _prepare_workspace(directory: Path, tmp: Path) -> Path:
    """A writable copy of the scenario's ``workspace/`` (or an empty dir) to run in."""
    cwd = tmp.resolve() / "work"
    workspace = directory / "workspace"
    if workspace.is_dir():
        shutil.copytree(workspace, cwd)
        for path in [cwd, *cwd.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)
    else:
        cwd.mkdir()
    return cwd


def _reports(
    model: ReplayModel, sessions: dict[str, LoadedSession], recorded: dict[str, LoadedSession], cwd: Path
) -> list[SessionReport]:
    out = []
    for script in model.scripts:
        rec = recorded.get(script.label)
        live = sessions.get(script.bound_to) if script.bound_to else None
        live_own = live.events[live.inherited_event_count :] if live else []
        rec_own = rec.events[rec.inherited_event_count :] if rec else []
        out.append(
            SessionReport(
                recorded_id=script.recorded_id,
                live_id=script.bound_to,
                kind=child_kind(rec) if rec else "primary",
                inherited_event_count=live.inherited_event_count if live else 0,
                calls=len(script.entries),
                consumed=script.cursor,
                final_text=final_assistant_text(live_own) if live else "",
                recorded_text=final_assistant_text(rec_own) if rec else "",
                tool_results=tool_results(rec_own, live_own, cwd),
                divergence=script.divergence,
                not_reproduced=script.check.not_reproduced if script.check else [],
                tolerated=list(script.tolerated),
                harness_actions=harness_actions(rec_own, live_own) if live else None,
            )
        )
    return out


def _check_reports(name: str, reports: list[SessionReport], problems: list[str]) -> None:
    """Per session: the same final answer, and every recorded tool result reproduced (or a
    difference tolerated and listed)."""
    diverged = any(report.divergence for report in reports)
    for report in reports:
        if report.live_id and not diverged and report.final_text != report.recorded_text:
            problems.append(
                f"scenario {name}: session {report.recorded_id} answered "
                f"{report.final_text!r}, the recording says {report.recorded_text!r}"
            )
        if report.harness_actions is not None and report.divergence is None:
            recorded, live = report.harness_actions
            problems.append(
                f"scenario {name}: session {report.recorded_id}: the recorded harness did "
                f"{'; '.join(recorded) or 'nothing'}, the live run did {'; '.join(live) or 'nothing'} "
                "(hooks and approvals must act as recorded)"
            )
        tally = report.tool_results
        if tally.equal < tally.total and report.divergence is None and not report.tolerated:
            problems.append(
                f"scenario {name}: session {report.recorded_id}: {tally.total - tally.equal} of "
                f"{tally.total} tool result(s) differ from the recording ({', '.join(tally.differing)})"
            )


def recorded_model_name(loaded: LoadedSession | None) -> str | None:
    """The model the recording's primary session last asked for (its ``request/header``)."""
    for event in reversed(loaded.events if loaded else []):
        if event.type == "request/header":
            config = event.data.get("header", {}).get("config", {})
            name = config.get("model") if isinstance(config, dict) else None
            return name if isinstance(name, str) and name else None
    return None


def _record_model() -> tuple[Model, str]:
    # Imported here, not at module top: the SDK costs ~250 ms of start-up that replay never needs.
    from dsh.model.openai_compat import OpenAICompatModel

    try:
        settings = resolve_provider()
    except UsageError as exc:
        raise ScenarioSkipped(f"record mode needs a provider: {exc}") from exc
    model = OpenAICompatModel(
        base_url=settings.base_url, api_key=settings.api_key, default_model=settings.model
    )
    return model, settings.model


def record_failure(sessions: Mapping[str, LoadedSession], problems: list[str]) -> str | None:
    """Why a recording must not be kept (a problem, a turn not completed), or ``None``."""
    if problems:
        return problems[0]
    for loaded in sessions.values():
        for event in loaded.events[loaded.inherited_event_count :]:
            if event.type == "turn/end":
                reason = event.data.get("reason", {})
                if reason.get("kind") not in CLEAN_ENDS:
                    failure = reason.get("failure") or {}
                    detail = f" ({failure.get('code')}: {failure.get('message')})" if failure else ""
                    turn = event.data.get("turn")
                    return f"session {loaded.header.id} turn {turn} ended {reason.get('kind')}{detail}"
    return None


async def run_scenario(
    directory: Path,
    mode: Mode = "replay",
    *,
    factory: AgentFactory = default_agent_factory,
    store: EventStore | None = None,
    feed: Feed | None = None,
    record_model: Model | None = None,
    model_name: str | None = None,
    sliced: bool = True,
    drift: Drift = "strict",
    step_timeout: float = 10.0,
    keep_failed: bool = False,
    sandbox: SandboxPolicy | Literal["recorded"] | None = "recorded",
) -> ScenarioResult:
    """Run the scenario in ``directory``.

    ``replay`` (keyless; a missing recording fails), ``once`` (record when the scenario has
    no recording yet, else replay), ``record`` (always re-record), ``refresh`` (keyless;
    rewrite only the expected transcript when the replay is otherwise clean). In replay and
    refresh every model call is checked against the recording (:mod:`dsh.replay.fidelity`).
    A record replaces the recorded files as one step and only when every turn completed;
    otherwise nothing is written (``keep_failed``: the failed run goes to ``NAME.failed/``).
    ``sandbox``: the policy the scenario's commands and hooks run under: by default the
    recording's mode, confined (:mod:`dsh.replay.permissions`); ``None``: unconfined.
    Approval requests are answered from ``input.json``'s ``permissionAnswers``.
    """
    directory = await asyncio.to_thread(directory.resolve)
    await asyncio.to_thread(recover, directory)
    if mode == "once":
        mode = "replay" if (directory / PRIMARY).exists() else "record"
    name = directory.name
    steps = read_steps(directory)
    store = store or MemoryEventStore()
    feed = feed or Feed()
    with tempfile.TemporaryDirectory(prefix="dsh-snap-") as tmp:
        cwd = await asyncio.to_thread(_prepare_workspace, directory, Path(tmp))
        replay_model: ReplayModel | None = None
        recorded: dict[str, LoadedSession] = {}
        if mode == "record":
            if record_model is not None:
                model, model_name = record_model, model_name or "deepseek-chat"
            else:
                model, model_name = _record_model()
        else:
            tolerances = read_tolerances(directory, drift)
            replay_model, logs = load_replay_model(directory, cwd=cwd, sliced=sliced, tolerances=tolerances)
            model = replay_model
            if logs.primary is not None:
                recorded[PRIMARY] = logs.primary
            recorded.update(dict(logs.children))
            model_name = model_name or recorded_model_name(logs.primary) or "deepseek-chat"
        policy = replay_policy(directory, recorded.get(PRIMARY))
        answers = policy.answers
        if sandbox != "recorded":
            answers = RecordedAnswers(read_permission_answers(directory), name)
        setup = AgentSetup(
            store,
            model,
            model_name,
            cwd,
            feed,
            replay=mode != "record",
            sandbox=policy.sandbox if sandbox == "recorded" else sandbox,
            approver=answers,
            approval_policy=policy.approval if sandbox == "recorded" else None,
        )
        player = StepPlayer(
            name, lambda: factory(setup), store=store, feed=feed, cwd=cwd, timeout=step_timeout
        )
        try:
            await player.play(steps)
            await _settle_background(player.agents, step_timeout, player.problems, name)
        finally:
            await _stop_background(player.agents)
            if mode == "record" and record_model is None:
                aclose = getattr(model, "aclose", None)
                if aclose is not None:
                    await aclose()
        agents, problems = player.agents, player.problems
        problems.extend(answers.problems)
        ids = [s.header.id for s in await store.list_sessions()]
        sessions = {sid: await store.load(sid) for sid in ids}
        lines: list[dict[str, Any]] = []
        for agent in agents:
            lines.extend(build_transcript(sessions, agent.id))
        transcript = normalize(lines, cwd=str(cwd))
        result = ScenarioResult(name, mode, transcript, problems=problems)
        if replay_model is not None:
            for divergence in replay_model.divergences[:1]:
                problems.insert(0, f"{divergence.headline(name)}\n{divergence.diff(40)}")
            try:
                replay_model.assert_consumed()
            except ReplayError as exc:
                if not replay_model.divergences:
                    problems.append(str(exc))
            result.sessions = _reports(replay_model, sessions, recorded, cwd)
            _check_reports(name, result.sessions, problems)
        text = dumps_lines(transcript).encode()
        if mode == "record":
            if not agents:
                raise ScenarioError(f"scenario {name}: no session was started")
            files = {**scenario_logs(sessions, agents[0].id, str(cwd)), TRANSCRIPT: text}
            failure = record_failure(sessions, problems)
            if failure is not None:
                kept = ""
                if keep_failed:
                    failed = await asyncio.to_thread(write_failed, directory, files)
                    kept = f"; the failed recording is in {failed}"
                result.problems[:] = [
                    f"scenario {name}: not recorded: {failure.removeprefix(f'scenario {name}: ')}; "
                    f"nothing was written, the previous recording is unchanged{kept}"
                ]
            else:
                result.changed = await asyncio.to_thread(write_recording, directory, files)
        elif mode == "refresh":
            if not problems:
                result.changed = await asyncio.to_thread(
                    write_recording, directory, {**_kept_logs(directory), TRANSCRIPT: text}
                )
        else:
            result.diff = _transcript_diff(directory, name, text.decode())
        return result


def _children_of(agents: list[Agent]) -> list[SubagentTool]:
    return [t for a in agents for n in a.tools.names() if isinstance(t := a.tools.get(n), SubagentTool)]


async def _settle_background(agents: list[Agent], within: float, problems: list[str], name: str) -> None:
    """Let background children and the parent turns their notices woke finish, as the
    original's harness does before it closes the session."""
    for tool in _children_of(agents):
        if not await tool.children.settle(within):
            problems.append(f"scenario {name}: background subagents still ran {within:g} s after the end")
            return


async def _stop_background(agents: list[Agent]) -> None:
    for tool in _children_of(agents):
        await tool.children.aclose()
    for agent in agents:
        await agent.aclose()


def _kept_logs(directory: Path) -> dict[str, bytes]:
    """The scenario's recorded logs as they are (a refresh rewrites only the transcript)."""
    return {p.name: p.read_bytes() for p in directory.glob("session*.jsonl")}


def _transcript_diff(directory: Path, name: str, text: str) -> str:
    expected_path = directory / TRANSCRIPT
    if not expected_path.exists():
        return ""
    expected = expected_path.read_text()
    if expected == text:
        return ""
    return "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=f"{name}/{TRANSCRIPT}",
            tofile=f"{name} (replayed)",
        )
    )
