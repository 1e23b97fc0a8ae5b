"""``dsh_recording``: a recorded scenario bound to an ordinary test that drives its own code.

The test gets a model (replaying the scenario's logs keylessly, or the configured provider
in ``record``/``once`` mode), a temp store and a temp workspace, and can build a ready agent.
A failure is reported once, where it happened: in replay a request that diverges from the
recording raises ``ReplayDivergenceAtCallError`` (a ``ReplayDivergenceError``: the one-line
reason, the diff, how to accept the change) out of the model call — out of the test's own
``run_turn`` — and every later call raises it again; in record a model call that fails (not
retried) raises ``RecordFailedError`` (``AUTH: ...; nothing was written``). When a passed
test ends: in replay, the replay verdict the scenario runner applies
(:func:`dsh.replay.verdict.replay_verdict`: every script consumed, the same final answers,
tool results and harness actions — hook runs and approvals); in record, the sessions the
test ran are written as the scenario's logs — as one step, only when every turn completed.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from dsh.errors import RecordFailedError, ReplayError, ScenarioError, UsageError
from dsh.events.chunks import Chunk, is_retryable
from dsh.loop import NO_DELAY, Agent, AgentConfig, Feed, RetryPolicy
from dsh.model import Model, ModelRequest
from dsh.model.settings import DEFAULT_MODEL, resolve_provider
from dsh.replay.fidelity import Drift
from dsh.replay.files import load_replay_model, read_tolerances
from dsh.replay.layout import PRIMARY
from dsh.replay.model import ReplayModel
from dsh.replay.reuse import tree_reuse
from dsh.replay.verdict import replay_verdict
from dsh.snapshot.cache_check import accepted_breaks, unaccepted_breaks
from dsh.snapshot.recording import recover, scenario_logs, write_recording
from dsh.snapshot.redaction import (
    DEFAULT_REDACTION,
    RedactOptions,
    input_file,
    read_input_document,
    redact_sessions,
)
from dsh.snapshot.runner import Mode, ScenarioSkipped, record_failure
from dsh.store import LoadedSession
from dsh.store.memory import MemoryEventStore
from dsh.subagents import standard_tools
from dsh.tools import ToolLike

ACCEPT_HINT = (
    "If the change is intended, re-record the scenario: pytest --dsh-snapshot=record with a "
    "provider configured (DSH_API_KEY or DEEPSEEK_API_KEY, DSH_BASE_URL); --dsh-drift=warn "
    "reports divergences without failing."
)


class _RecordingModel:
    """The live provider while a test records: a failed call (not retried) stops the run
    there with :class:`~dsh.errors.RecordFailedError` — the recording cannot be kept."""

    def __init__(self, live: Model, scenario: str) -> None:
        self.live = live
        self.scenario = scenario

    @property
    def provider(self) -> str:
        return self.live.provider

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        async for chunk in self.live.stream(request):
            if chunk["type"] == "finish" and chunk["reason"]["kind"] == "error":
                failure = chunk["reason"].get("failure") or {"code": "UNKNOWN", "message": ""}
                if not is_retryable(failure["code"]):
                    raise RecordFailedError(
                        failure["code"],
                        failure["message"],
                        f"scenario {self.scenario}: not recorded: a model call failed: "
                        f"{failure['code']}: {failure['message']}; nothing was written",
                    )
            yield chunk

    async def aclose(self) -> None:
        await self.live.aclose()


class Recording:
    """One test's binding to the scenario in ``directory`` (see the module docstring)."""

    def __init__(
        self,
        directory: Path,
        mode: Mode,
        *,
        drift: Drift = "strict",
        redact: RedactOptions = DEFAULT_REDACTION,
    ) -> None:
        directory = directory.resolve()
        recover(directory)
        if mode == "refresh":
            mode = "replay"  # a fixture scenario has no transcript to refresh
        if mode == "once":
            mode = "replay" if (directory / PRIMARY).exists() else "record"
        self.directory = directory
        self.mode: Mode = mode
        self.redact = redact
        self.store = MemoryEventStore()
        self.feed = Feed()
        self._tmp = tempfile.TemporaryDirectory(prefix="dsh-rec-")
        self.cwd = Path(self._tmp.name).resolve() / "work"
        if (directory / "workspace").is_dir():
            shutil.copytree(directory / "workspace", self.cwd)
        else:
            self.cwd.mkdir()
        self._replay: ReplayModel | None = None
        self._recorded: dict[str, LoadedSession] = {}
        self._live: Any = None
        if mode == "record":
            try:
                settings = resolve_provider(key_option=None)  # pytest has no --api-key
            except UsageError as exc:
                raise ScenarioSkipped(f"record mode needs a provider: {exc}") from exc
            self._live = _RecordingModel(settings.open_model(), directory.name)
            self.model_name = settings.model
        else:
            if not (directory / PRIMARY).exists():
                raise ScenarioError(
                    f"scenario {directory.name}: no recording yet; run with --dsh-snapshot=record (or once)"
                )
            tolerances = read_tolerances(directory, drift) if (directory / "input.json").exists() else None
            self._replay, logs = load_replay_model(directory, cwd=self.cwd, tolerances=tolerances)
            self._recorded = logs.by_label()
            self._replay.accept_hint = ACCEPT_HINT  # a divergence fails the test at its call
            self.model_name = self._replay.model_name or DEFAULT_MODEL
        self._agents: list[Agent] = []

    @property
    def model(self) -> Model:
        """The model to hand to your code: the replay, or the live provider when recording."""
        return self._replay if self._replay is not None else self._live

    @property
    def replaying(self) -> bool:
        return self._replay is not None

    async def agent(self, *, tools: Sequence[ToolLike] = (), system: str | None = None) -> Agent:
        """A new top-level agent over the temp store: the standard tools plus ``tools``."""
        registry = standard_tools()
        for tool in tools:
            registry.register(tool)
        config = AgentConfig(model=self.model_name, retry=NO_DELAY if self.replaying else RetryPolicy())
        if system is not None:
            config = AgentConfig(model=self.model_name, system=system, retry=config.retry)
        agent = await Agent.create(
            self.store, model=self.model, tools=registry, config=config, cwd=self.cwd, feed=self.feed
        )
        self._agents.append(agent)
        return agent

    async def finish(self, *, passed: bool) -> list[str]:
        """Check (replay) or write (record) the scenario; returns the files a record changed."""
        try:
            if not passed:  # the test's own failure (a divergence raised at its call) says it all
                return []
            sessions = {
                sid.header.id: await self.store.load(sid.header.id)
                for sid in await self.store.list_sessions()
            }
            roots = [sid for sid, loaded in sessions.items() if loaded.header.parent_session is None]
            if self._replay is not None:
                found = replay_verdict(self.directory.name, self._replay, sessions, self._recorded, self.cwd)
                problems = list(found.problems)
                if roots:  # the keyless cache check, as a scenario item's (issue 43)
                    accepted = accepted_breaks(read_input_document(self.directory))
                    breaks = unaccepted_breaks(tree_reuse(sessions, roots[0]), accepted)
                    problems += [f"scenario {self.directory.name}: {b}" for b in breaks]
                if problems:
                    raise ReplayError("\n".join(problems))
                return []
            if not roots:
                raise ScenarioError(f"scenario {self.directory.name}: the test started no agent to record")
            failure = record_failure(sessions, [])
            if failure is not None:
                raise ScenarioError(
                    f"scenario {self.directory.name}: not recorded: {failure}; nothing was written"
                )
            self.directory.mkdir(parents=True, exist_ok=True)
            rule = self.redact.rule(read_input_document(self.directory))
            files = scenario_logs(redact_sessions(sessions, rule.redactor), roots[0], str(self.cwd))
            return write_recording(self.directory, {**files, **input_file(self.directory, rule)})
        finally:
            if self._live is not None:
                await self._live.aclose()
            if self._replay is not None:
                await self._replay.aclose()  # the recording's frozen heap
            self._tmp.cleanup()
