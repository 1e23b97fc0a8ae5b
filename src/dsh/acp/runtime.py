"""What an ACP server runs sessions with: the store, the model source, the agent config and profile."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from dsh.acp.updates import DEFAULT_CONTEXT_WINDOW, Profile
from dsh.context import WorkspaceConfig
from dsh.context.questions import QuestionAsker
from dsh.errors import ReplayError
from dsh.hooks import HookSet
from dsh.loop import NO_DELAY, AgentConfig, RetryPolicy
from dsh.model import Model
from dsh.replay.fidelity import Drift
from dsh.replay.files import load_replay_model, read_tolerances
from dsh.replay.model import ReplayModel
from dsh.replay.permissions import ReplayPolicy, replay_policy, untrusted_warning
from dsh.replay.upstream import Composition, composed_tools, composition
from dsh.store import EventStore
from dsh.subagents import standard_tools
from dsh.tools import ToolRegistry
from dsh.tools.approval import Approver
from dsh.tools.sandbox import SandboxPolicy

log = logging.getLogger("dsh.acp")


class ModelSource(Protocol):
    """Gives each ACP session (new or loaded) its model."""

    @property
    def retry(self) -> RetryPolicy:
        """How the sessions' agents retry a retryable model failure."""
        ...

    async def model_for(self, cwd: Path) -> Model:
        """The model for a session that runs in ``cwd`` (called once per new or loaded session)."""
        ...

    async def aclose(self) -> None:
        """Release every model handed out (the server is shutting down)."""
        ...


class LiveModels:
    """One live OpenAI-compatible model shared by every session."""

    def __init__(self, model: Model) -> None:
        self._model = model

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy()

    async def model_for(self, cwd: Path) -> Model:
        return self._model

    async def aclose(self) -> None:
        await self._model.aclose()


class ReplayModels:
    """A scenario's recorded scripts, served afresh to each session (keyless, zero-delay retries).

    Each session gets its own :class:`ReplayModel` over the scenario in ``directory`` (the
    primary script for the session, per-child scripts for its subagents, exactly as
    ``dsh replay``), built with the session's cwd so a relative ``readyFile`` lands there.
    """

    def __init__(self, directory: Path, *, trust: bool = False, drift: Drift = "strict") -> None:
        self.directory = directory
        self.trust = trust
        self.drift = drift
        self._served: list[ReplayModel] = []
        self._warning: str | None = None
        self.policy: ReplayPolicy | None = None
        self.recorded_model: str | None = None
        """What the sessions run under: the recording's mode, confined (set by :meth:`check`)."""
        self.composition: Composition | None = None
        """What the recording's composition adds (workspace context, fixtures; :meth:`check`)."""

    def check(self) -> None:
        """Load the scenario once, so a bad directory fails before serving; unless trusted,
        note the recorded commands a replay would run (logged when the first session starts)."""
        replay, logs = load_replay_model(
            self.directory, tolerances=read_tolerances(self.directory, self.drift)
        )
        self.policy = replay_policy(self.directory, logs.primary)
        self.composition = composition(self.directory, logs)
        self.recorded_model = replay.model_name
        """The model the recording asked for (a session asks for it unless ``--model`` says)."""
        self._warning = None if self.trust else untrusted_warning(self.directory, self.policy.sandbox)

    @property
    def retry(self) -> RetryPolicy:
        return NO_DELAY

    async def model_for(self, cwd: Path) -> Model:
        if self._warning is not None:
            log.warning("%s", self._warning)
            self._warning = None
        tolerances = read_tolerances(self.directory, self.drift)
        if self.composition is not None:
            await asyncio.to_thread(self.composition.prepare, cwd)
        model, _ = await asyncio.to_thread(load_replay_model, self.directory, cwd=cwd, tolerances=tolerances)
        model.on_note = lambda note: log.warning("%s", note)  # recorded ids already in the store: once
        self._served.append(model)
        return model

    def tools(self) -> ToolRegistry:
        """A session's tools: the standard ones as the recording's composition had them."""
        composed = self.composition
        cap = self.policy.glob_cap if self.policy is not None else None
        glob_cap = cap or 100  # the recording's own glob cap, so its glob results replay
        if composed is None:
            return standard_tools(glob_max_results=glob_cap)
        spill = 800 if composed.spill else None
        base = standard_tools(spill_dir=composed.spill_dir, max_inline_bytes=spill, glob_max_results=glob_cap)
        return composed_tools(base, composed.tools())

    async def aclose(self) -> None:
        for model in self._served:
            if model.primary.bound_to is None:
                continue
            try:
                model.assert_consumed()
            except ReplayError as exc:
                log.warning("replay not fully consumed: %s", exc)


@dataclass(slots=True)
class Runtime:
    """Everything sessions share: store, models, agent config, update profile."""

    store: EventStore
    models: ModelSource
    model_name: str
    profile: Profile = "full"
    context_window: int = DEFAULT_CONTEXT_WINDOW
    sandbox: SandboxPolicy | None = None
    """A live session's file policy (``None``: unconfined, nothing asked)."""
    tools: Callable[[], ToolRegistry] = standard_tools
    """Each session's tool set, made afresh per session (default: the standard tools)."""
    background_wait: float = 30.0
    """At shutdown: how long background subagents still running may finish before they are stopped."""
    closed: bool = field(default=False)

    def config(self, approver: Approver | None = None, questions: QuestionAsker | None = None) -> AgentConfig:
        """The config of a new or loaded session: the session cwd's hooks, plus the user-level
        ones unless the sessions replay a recording (whose workspace is all it ran with); a
        replay runs under the recording's sandbox and approval policies. ``approver``
        answers the session's approval requests (the ACP client)."""
        models = self.models
        if isinstance(models, ReplayModels) and models.policy is not None:
            policy = models.policy
            return AgentConfig(
                model=self.model_name,
                retry=models.retry,
                hooks=HookSet(),
                sandbox=policy.sandbox,
                approver=approver,
                approval_policy=policy.approval,
                runtime_context=policy.runtime_context,
                workspace=models.composition.workspace if models.composition is not None else None,
                titles=models.composition.titles if models.composition is not None else False,
                prompt_inbox=models.composition is not None and models.composition.workspace is not None,
                title_model=models.composition.title_model() if models.composition is not None else None,
            )
        hooks = HookSet() if isinstance(models, ReplayModels) else HookSet.from_environment()
        return AgentConfig(
            model=self.model_name,
            retry=models.retry,
            hooks=hooks,
            sandbox=self.sandbox,
            approver=approver,
            workspace=WorkspaceConfig.from_env(),
            titles=True,
            questions=questions,
        )

    @property
    def checkpoints(self) -> bool:
        """Whether sessions checkpoint their workspace after each turn (for ``dsh rewind``): not
        when they replay a recording — that is no one's work to rewind, and a scan at each
        turn end would change the recorded timing of background children."""
        return not isinstance(self.models, ReplayModels)

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            await self.models.aclose()
        finally:
            with contextlib.suppress(Exception):
                await self.store.close()
