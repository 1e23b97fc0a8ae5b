"""The scenario runner: drive ``input.json`` against an agent in replay, record or refresh mode."""

from __future__ import annotations

import asyncio
import difflib
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from dsh.context import WorkspaceConfig
from dsh.errors import ScenarioError, UsageError
from dsh.hooks import HookSet, reset_handler_ids
from dsh.loop import CLEAN_ENDS, NO_DELAY, Agent, AgentConfig, CompactionPolicy, Feed, RetryPolicy
from dsh.mcp import McpServerSpec, workspace_servers
from dsh.model import Model
from dsh.model.settings import DEFAULT_MODEL, resolve_provider
from dsh.redact import Redactor
from dsh.replay.fidelity import DRIFTS, Drift
from dsh.replay.files import RecordedLogs, declared_input, load_replay_model, read_input, read_tolerances
from dsh.replay.layout import PRIMARY
from dsh.replay.model import ReplayModel
from dsh.replay.permissions import RecordedAnswers, read_permission_answers, replay_policy
from dsh.replay.reuse import Reuse, tree_reuse
from dsh.replay.upstream import Composition, composed_tools, composition
from dsh.replay.verdict import SessionReport, replay_verdict
from dsh.session.spend import TreeSpend, tree_spend
from dsh.session.timeline import Timeline, TurnEnd
from dsh.session.usage import Ledger
from dsh.snapshot.cache_check import CacheCheck, accepted_breaks, cache_drops, unaccepted_breaks
from dsh.snapshot.recording import TRANSCRIPT, recover, scenario_logs, write_failed, write_recording
from dsh.snapshot.redaction import (
    DEFAULT_REDACTION,
    RecordingRule,
    RedactOptions,
    input_file,
    read_input_document,
    redact_lines,
    redact_sessions,
)
from dsh.snapshot.save import session_steps
from dsh.snapshot.steps import StepPlayer, validate_steps
from dsh.snapshot.transcript import dumps_lines, normalize, walk_transcript
from dsh.store import EventStore, LoadedSession
from dsh.store.bulk import paused_gc
from dsh.store.memory import MemoryEventStore
from dsh.subagents import standard_tools
from dsh.subagents.shutdown import settle_background, stop_background
from dsh.tools import ToolLike
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
    runtime_context: bool = True
    """Whether the agent shows the runtime-context snapshot (as the recording did)."""
    workspace: WorkspaceConfig | None = None
    """The workspace context the recording ran with (``dsh.replay.upstream``; ``None``: none)."""
    extra_tools: tuple[ToolLike, ...] = ()
    """Tools the recording's composition adds over the standard ones (fixtures replace theirs)."""
    spill_dir: Path | None = None
    """Where long results spill (``None``: the default root)."""
    spill: bool = True
    """Whether long results spill at all (as the recording's composition did)."""
    titles: bool = False
    """Whether sessions get the fallback ``session/title`` (as the recording's did)."""
    title_model: Model | None = None
    """The model that titles the session (the recording asked one)."""
    glob_cap: int = 100
    """``glob``'s result cap (a recording's own, when its results show one)."""
    mcp_servers: tuple[McpServerSpec, ...] = ()
    """The MCP servers a live-MCP replay (or a recording) starts: the workspace's ``.mcp.json``."""
    live_mcp: bool = False
    """Whether MCP calls run for real in a replay (``--live-mcp``) instead of being served."""
    context_window: int | None = None
    """The context window the recording logged (compaction happens where it did)."""


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
        runtime_context=setup.runtime_context,
        workspace=setup.workspace,
        titles=setup.titles,
        prompt_inbox=setup.workspace is not None,
        title_model=setup.title_model,
        mcp_servers=setup.mcp_servers,
        live_mcp=setup.live_mcp,
        compaction=CompactionPolicy(context_window=setup.context_window),
    )
    return await Agent.create(
        setup.store,
        model=setup.model,
        tools=composed_tools(
            standard_tools(
                spill_dir=setup.spill_dir,
                max_inline_bytes=800 if setup.spill else None,
                glob_max_results=setup.glob_cap,
            ),
            setup.extra_tools,
        ),
        config=config,
        cwd=setup.cwd,
        feed=setup.feed,
    )


@dataclass(slots=True, repr=False)
class ScenarioResult:
    """What a scenario run produced and whether it passed (its repr is a summary: see
    :meth:`__repr__`)."""

    scenario: str
    mode: Mode
    transcript: list[dict[str, Any]]
    sessions: list[SessionReport] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    diff: str = ""
    changed: list[str] = field(default_factory=list)
    """Files a record or refresh wrote (added, changed or removed), by name."""
    notes: list[str] = field(default_factory=list)
    """What the replay said once without failing (recorded ids already in the target store)."""
    reuse: list[Reuse] = field(default_factory=list)
    """Each request's prefix reuse in the run (:func:`dsh.replay.prefix.tree_reuse`)."""
    spend: TreeSpend | None = None
    """The run's calls, tokens and cost per session and tree (:func:`dsh.session.spend.tree_spend`)."""

    @property
    def ok(self) -> bool:
        return not self.problems and not self.diff

    def __repr__(self) -> str:
        """The scenario, mode, verdict and problems; the transcript, reports and reuse rows
        counted, not spelled out. ``asyncio.run`` reprs the task that returned a result twice
        as it puts SIGINT's handler back (Python 3.11): a field-by-field repr of a 5,000-call
        replay's result cost ~0.04 s CPU each time."""
        return (
            f"ScenarioResult(scenario={self.scenario!r}, mode={self.mode!r}, ok={self.ok}, "
            f"problems={self.problems!r}, transcript={len(self.transcript)} lines, "
            f"sessions={len(self.sessions)}, diff={len(self.diff)} chars, changed={self.changed!r}, "
            f"notes={self.notes!r}, reuse={len(self.reuse)} requests, "
            f"spend={'yes' if self.spend is not None else 'none'})"
        )

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


def read_steps(directory: Path, recorded: Mapping[str, LoadedSession] | None = None) -> list[dict[str, Any]]:
    """The validated steps of ``input.json`` (see :mod:`dsh.snapshot.steps` for the ops).

    A recording the ``dsh_recording`` fixture wrote has no steps (its ``input.json`` holds
    only the redaction settings, or it has none): given its ``recorded`` sessions, the steps
    are the prompts of their logs (and the children code started), as ``dsh scenario save``
    derives them."""
    primary = (recorded or {}).get(PRIMARY)
    document = declared_input(directory) if primary is not None else read_input(directory)
    if "steps" not in document and primary is not None and recorded is not None:
        return session_steps({s.header.id: s for s in recorded.values()}, primary.header.id)
    return validate_steps(document.get("steps"), directory.name)


def prepare_workspace(directory: Path, tmp: Path) -> Path:
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


def _record_model() -> tuple[Model, str]:
    try:
        settings = resolve_provider(key_option=None)  # a library or pytest run has no --api-key
    except UsageError as exc:
        raise ScenarioSkipped(f"record mode needs a provider: {exc}") from exc
    return settings.open_model(), settings.model


def record_failure(sessions: Mapping[str, LoadedSession], problems: list[str]) -> str | None:
    """Why a recording must not be kept (a problem, a turn not completed), or ``None``."""
    if problems:
        return problems[0]
    for sid, loaded in sessions.items():
        timeline = Timeline()
        for event in loaded.own_events:
            for item in timeline.feed(sid, event):
                if isinstance(item, TurnEnd) and item.reason not in CLEAN_ENDS:
                    failure = item.failure or {}
                    detail = f" ({failure.get('code')}: {failure.get('message')})" if failure else ""
                    return f"session {loaded.header.id} turn {item.turn} ended {item.reason}{detail}"
    return None


@dataclass(frozen=True, slots=True)
class _Prepared:
    """What the prepare phase hands on: the scenario, its workspace, its model and its agent setup."""

    name: str
    directory: Path
    mode: Mode
    steps: list[dict[str, Any]]
    cwd: Path
    model: Model
    replay_model: ReplayModel | None
    """The keyless model (replay and refresh); ``None`` when recording."""
    recorded: dict[str, LoadedSession]
    """The recorded sessions by script label (empty when recording)."""
    answers: RecordedAnswers
    setup: AgentSetup
    owns_model: bool
    """Whether the run made the model (and so closes it)."""
    rule: RecordingRule | None
    """How a record redacts what it writes (``None`` when replaying)."""
    redactor: Redactor | None
    """What the run's transcript goes through: the record's rule, or the recording's on replay."""


@dataclass(frozen=True, slots=True)
class _Played:
    """What the run phase produced: the top-level agents, every stored session, the transcript."""

    agents: list[Agent]
    problems: list[str]
    sessions: dict[str, LoadedSession]
    transcript: list[dict[str, Any]]
    text: bytes
    """The transcript as ``transcript.expected.jsonl`` bytes."""
    ledgers: dict[str, Ledger]
    """The sessions' own calls the transcript's fold made (the spend does not fold them again)."""


async def _prepare(
    directory: Path,
    mode: Mode,
    tmp: Path,
    *,
    store: EventStore,
    feed: Feed,
    record_model: Model | None,
    model_name: str | None,
    sliced: bool,
    drift: Drift,
    sandbox: SandboxPolicy | Literal["recorded"] | None,
    redact: RedactOptions,
    live_mcp: bool = False,
    recorded: RecordedLogs | None = None,
) -> _Prepared:
    """Read the steps, copy the workspace, load the recording (or pick the live model)."""
    name = directory.name
    cwd = await asyncio.to_thread(prepare_workspace, directory, tmp)
    replay_model: ReplayModel | None = None
    by_label: dict[str, LoadedSession] = {}
    model: Model
    composed = Composition(name, None, None, context=False)  # a new recording: the standard tools
    rule: RecordingRule | None = None
    redactor: Redactor | None = None
    if mode == "record":
        rule = redact.rule(await asyncio.to_thread(read_input_document, directory))
        redactor = rule.redactor
        if record_model is not None:
            model, model_name = record_model, model_name or DEFAULT_MODEL
        else:
            model, model_name = _record_model()
    else:
        tolerances = read_tolerances(directory, drift)
        redactor = tolerances.redactor
        replay_model, logs = load_replay_model(
            directory, cwd=cwd, sliced=sliced, tolerances=tolerances, recorded=recorded
        )
        model = replay_model
        composed = composition(directory, logs)
        await asyncio.to_thread(composed.prepare, cwd)
        by_label = logs.by_label()
        model_name = model_name or replay_model.model_name or DEFAULT_MODEL
    steps = read_steps(directory, by_label)
    policy = replay_policy(directory, by_label.get(PRIMARY))
    answers = policy.answers
    chosen = policy.sandbox
    if sandbox != "recorded":  # run under another policy, still shown the recorded context
        answers = RecordedAnswers(read_permission_answers(directory), name)
        given = sandbox or SandboxPolicy(mode="danger-full-access")
        shown = policy.sandbox.stated_mode if policy.sandbox is not None else None
        chosen = replace(given, logged=policy.sandbox is not None and policy.sandbox.logged, shown=shown)
    setup = AgentSetup(
        store,
        model,
        model_name,
        cwd,
        feed,
        replay=mode != "record",
        sandbox=chosen,
        approver=answers,
        approval_policy=policy.approval,
        runtime_context=policy.runtime_context,
        workspace=composed.workspace,
        extra_tools=tuple(composed.tools(live_mcp=live_mcp)),
        spill_dir=composed.spill_dir,
        spill=composed.spill,
        titles=composed.titles,
        title_model=composed.title_model(),
        glob_cap=policy.glob_cap or 100,
        mcp_servers=workspace_servers(cwd) if live_mcp or mode == "record" else (),
        live_mcp=live_mcp,
        context_window=composed.context_window,
    )
    owns = mode == "record" and record_model is None
    return _Prepared(
        name, directory, mode, steps, cwd, model, replay_model, by_label, answers, setup, owns, rule, redactor
    )


async def _run(prep: _Prepared, factory: AgentFactory, step_timeout: float) -> _Played:
    """Play the steps, let background children settle, stop everything, read the logs back."""
    setup, store = prep.setup, prep.setup.store
    player = StepPlayer(
        prep.name, lambda: factory(setup), store=store, feed=setup.feed, cwd=prep.cwd, timeout=step_timeout
    )
    try:
        await player.play(prep.steps)
        await _settle_background(player.agents, step_timeout, player.problems, prep.name)
    finally:
        await stop_background([*player.agents, *player.children])
        if prep.owns_model:
            aclose = getattr(prep.model, "aclose", None)
            if aclose is not None:
                await aclose()
        if prep.replay_model is not None:
            await prep.replay_model.aclose()  # the recording's frozen heap (its scripts stay readable)
    problems = player.problems
    problems.extend(prep.answers.problems)
    with paused_gc():  # every log read back and walked: many objects, no cycle (frozen after)
        ids = [s.header.id for s in await store.list_sessions()]
        sessions = {sid: await store.load(sid) for sid in ids}
        lines: list[dict[str, Any]] = []
        ledgers: dict[str, Ledger] = {}
        for agent in player.agents:
            walk = walk_transcript(sessions, agent.id)
            lines.extend(walk.lines)
            ledgers.update(walk.ledgers)
        transcript = redact_lines(normalize(lines, cwd=str(prep.cwd)), prep.redactor)
    text = dumps_lines(transcript).encode()
    return _Played(player.agents, problems, sessions, transcript, text, ledgers)


def _check(prep: _Prepared, played: _Played, cache: CacheCheck) -> ScenarioResult:
    """The result: the run's problems and its prefix reuse, and under replay the replay
    verdict (:func:`dsh.replay.verdict.replay_verdict`: divergence, consumption, per-session
    reports) and the cache check (a request rewriting its prefix, unless accepted)."""
    result = ScenarioResult(prep.name, prep.mode, played.transcript, problems=played.problems)
    if played.agents:
        result.reuse = tree_reuse(played.sessions, played.agents[0].id)
        result.spend = tree_spend(played.sessions, played.agents[0].id, played.ledgers)
    replay_model = prep.replay_model
    if replay_model is not None:
        result.notes = list(replay_model.notes)
        found = replay_verdict(
            prep.name, replay_model, played.sessions, prep.recorded, prep.cwd, problems=played.problems
        )
        result.problems = list(found.problems)
        result.sessions = list(found.sessions)
        if cache != "off":
            breaks = unaccepted_breaks(result.reuse, accepted_breaks(read_input_document(prep.directory)))
            lines = [f"scenario {prep.name}: {b}" for b in breaks]
            (result.problems if cache == "fail" else result.notes).extend(lines)
    return result


async def _write(
    prep: _Prepared, played: _Played, result: ScenarioResult, *, keep_failed: bool, cache: CacheCheck
) -> None:
    """Record: keep the new recording only when it is clean (``cache``: and its prefix reuse
    did not drop against the committed one's, :mod:`dsh.snapshot.cache_check`); refresh:
    rewrite the transcript when nothing else differs; replay: diff the transcript against
    the expected one."""
    name, directory, text = prep.name, prep.directory, played.text
    if prep.mode == "record":
        if not played.agents:
            raise ScenarioError(f"scenario {name}: no session was started")
        files = _recorded_files(prep, played)
        if cache != "off":
            drops = await asyncio.to_thread(cache_drops, directory, played.sessions, played.agents[0].id)
            if cache == "warn":
                result.notes.extend(f"scenario {name}: warning: {d}" for d in drops)
            else:
                result.problems.extend(f"scenario {name}: {d}" for d in drops)
        failure = record_failure(played.sessions, result.problems)
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
    elif prep.mode == "refresh":
        if not result.problems:
            result.changed = await asyncio.to_thread(
                write_recording, directory, {**_kept_logs(directory), TRANSCRIPT: text}
            )
    else:
        result.diff = _transcript_diff(directory, name, text.decode())


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
    redact: RedactOptions = DEFAULT_REDACTION,
    live_mcp: bool = False,
    cache: CacheCheck = "fail",
    recorded: RecordedLogs | None = None,
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
    MCP servers are not started in a replay (their calls are served from the recording)
    unless ``live_mcp``, which starts the workspace's ``.mcp.json`` servers and calls them.
    Approval requests are answered from ``input.json``'s ``permissionAnswers``.
    ``redact``: how a record redacts what it writes (:mod:`dsh.snapshot.redaction`); a replay
    applies the recording's own rule to the live side. ``cache``: at record, a request whose
    prefix reuse dropped against the committed recording's fails the record (``fail``), is
    only said (``warn``), or is not looked for (``off``); at replay and refresh, a request
    that rewrites its prefix does the same unless ``input.json`` accepts its region
    (:mod:`dsh.snapshot.cache_check`). ``recorded``: the recording, when the caller has read
    it already (``dsh scenario replay`` warns about its commands from the same read).

    Four phases: prepare (steps, workspace, model, agent setup), run (play the steps, read
    the logs back), check (the recording's checks), write (record / refresh / diff).
    """
    directory = await asyncio.to_thread(directory.resolve)
    await asyncio.to_thread(recover, directory)
    if mode == "once":
        mode = "replay" if (directory / PRIMARY).exists() else "record"
    with tempfile.TemporaryDirectory(prefix="dsh-snap-") as tmp:
        prep = await _prepare(
            directory,
            mode,
            Path(tmp),
            store=store or MemoryEventStore(),
            feed=feed or Feed(),
            record_model=record_model,
            model_name=model_name,
            sliced=sliced,
            drift=drift,
            sandbox=sandbox,
            redact=redact,
            live_mcp=live_mcp,
            recorded=recorded,
        )
        played = await _run(prep, factory, step_timeout)
        result = _check(prep, played, cache)
        await _write(prep, played, result, keep_failed=keep_failed, cache=cache)
        return result


async def _settle_background(agents: list[Agent], within: float, problems: list[str], name: str) -> None:
    """Let background children and the parent turns their notices woke finish, as the
    original's harness does before it closes the session."""
    if not await settle_background(agents, within):
        problems.append(f"scenario {name}: background subagents still ran {within:g} s after the end")


def _recorded_files(prep: _Prepared, played: _Played) -> dict[str, bytes]:
    """What a record writes, redacted by its rule: the logs, the transcript and — when the
    rule's salt or regexes are new to it — ``input.json``."""
    rule = prep.rule
    assert rule is not None  # a record always has its rule
    sessions = redact_sessions(played.sessions, rule.redactor)
    files = {**scenario_logs(sessions, played.agents[0].id, str(prep.cwd)), TRANSCRIPT: played.text}
    return {**files, **input_file(prep.directory, rule)}


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
