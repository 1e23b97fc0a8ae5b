"""Agent: runs turns over a session — steps, settlements, retries, tools, checkpoints."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, Self

from dsh.errors import ModelError
from dsh.events import Assembled, Event, SessionHeader
from dsh.events.chunks import Chunk
from dsh.events.fork import ForkOptions, fork_seed
from dsh.events.messages import Message, joined_text, user_message
from dsh.events.payloads import step_mark, turn_end_of, turn_start
from dsh.events.vocabulary import (
    REQUEST_HEADER,
    SANDBOX_MODE,
    SESSION_REPAIRED,
    STEP_END,
    STEP_START,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
)
from dsh.hooks import SessionHooks
from dsh.ids import new_session_id, now_ms
from dsh.loop.config import AgentConfig
from dsh.loop.feed import Feed
from dsh.loop.inbox import Inbox, Target, pending_from_log
from dsh.loop.job_notices import JobNotices
from dsh.loop.model_call import settle_model_call
from dsh.loop.persist import Persister
from dsh.loop.result import TurnResult
from dsh.loop.runtime_context import context_sections, last_snapshot_text, snapshot_message
from dsh.loop.scheduler import ToolScheduler
from dsh.loop.setup import ToolsArg, agent_config, agent_tools
from dsh.loop.stream import StreamEvent, stream_turn
from dsh.loop.sync import run_sync
from dsh.model import Delegation, DeliveryOrder, Model, ModelRequest, SessionProgress, retry_delay
from dsh.model.settings import resolve_provider
from dsh.session import (
    HistoryProjector,
    Session,
    final_assistant_text,
    interrupted_turn_closers,
    usage_totals,
)
from dsh.store import EventStore, LoadedSession, SessionLease
from dsh.store.url import open_store
from dsh.tools import FileObservations, ToolContext
from dsh.tools.approval import ApprovalPolicy, Approvals
from dsh.tools.registry import ToolRegistry, builtin_registry
from dsh.tools.sandbox import SandboxMode, SandboxPolicy

log = logging.getLogger("dsh.loop")

_Closer = Callable[[], Awaitable[None]]


async def _close_all(closers: Sequence[_Closer]) -> None:
    """Call every closer, last opened first; the first failure is raised after the rest ran."""
    first: BaseException | None = None
    for close in reversed(closers):
        try:
            await close()
        except Exception as exc:
            first = first or exc
    if first is not None:
        raise first


class Activation(Protocol):
    """Told when an agent's woken turns run out of work (a continuable child's settlement)."""

    async def before_idle(self, agent: Agent) -> None:
        """Awaited first; work queued meanwhile keeps the agent running instead."""

    def on_idle(self, agent: Agent, last: TurnResult) -> None:
        """The agent is idle; ``last`` is how its last turn ended."""


def _absolute(path: str | Path) -> str:
    return os.path.abspath(path)


def _last_header(events: Sequence[Event]) -> dict[str, Any] | None:
    for event in reversed(events):
        if event.type == REQUEST_HEADER:
            header = event.data.get("header")
            return header if isinstance(header, dict) else None
    return None


class Agent:
    """One session's agent. ``run_turn`` appends a whole turn and checkpoints it.

    Build with :meth:`create` (a new session), :meth:`from_env` (the same, with the
    provider and the store of the environment), :meth:`resume` (a stored one; a turn a crash
    left open is closed first) or :meth:`attach` (a just-created or forked
    :class:`LoadedSession`). :meth:`fork` and :meth:`spawn` start stored child sessions
    (the subagent tools use them too).

    ``create`` and ``resume`` take the session's store lease first (one live writer per
    session; another holder raises ``SessionBusyError``) and hold it until :meth:`aclose`
    (or ``async with agent:``), or until the store is closed. An agent made by
    :meth:`from_env` also closes the model and the store it opened.
    """

    def __init__(
        self,
        *,
        session: Session,
        store: EventStore,
        model: Model,
        tools: ToolRegistry,
        config: AgentConfig,
        persisted: int,
        feed: Feed | None = None,
        delegation: Delegation | None = None,
        extras: Mapping[str, Any] | None = None,
    ) -> None:
        self.session = session
        self.store = store
        self.model = model
        self.tools = tools
        self.config = config
        self.feed = feed or Feed()
        self.delegation = delegation
        self.extras: dict[str, Any] = dict(extras or {})
        self.abort_kind = "user" if delegation is None else "parent"
        self.files = FileObservations()  # what this session's tools have seen of each file
        policy: ApprovalPolicy = "never" if delegation is not None else config.approvals_policy()
        self.approvals = Approvals(session.id, self.append, policy=policy, approver=config.approver)
        self._order = model if isinstance(model, DeliveryOrder) else None
        self._persister = Persister(store, session, persisted)
        self._history = HistoryProjector()
        self._last_header = _last_header(session.events)
        self._header: dict[str, Any] | None = None
        self._header_key: tuple[Any, ...] | None = None
        self._requests = 0
        self._lock = asyncio.Lock()
        self._lease: SessionLease | None = None
        self._context_text = last_snapshot_text(session.events)  # the snapshot on the surface
        self._turns_ended = sum(1 for e in session.own_events if e.type == TURN_END)
        self._steps_started = sum(1 for e in session.own_events if e.type == STEP_START)
        self.inbox = Inbox(self.append, pending_from_log(session.own_events))
        """Messages other sessions queued for this agent (notices, relays)."""
        self._driver: asyncio.Task[None] | None = None
        self._woken_turn: asyncio.Task[TurnResult] | None = None
        self.activation: Activation | None = None
        """Told when woken turns run out of work (set for a continuable child)."""
        self.closed = False
        self.jobs = JobNotices(self)
        """This session's background jobs (``jobs.table``) and their completion notices."""
        self._owned: list[_Closer] = []  # what aclose closes after the lease (from_env)
        self._scheduler = ToolScheduler(
            registry=tools,
            persister=self._persister,
            append=self.append,
            make_context=self._tool_context,
            max_parallel=config.max_parallel_tools,
        )

    # -- construction -------------------------------------------------------------------

    @classmethod
    def standard_registry(cls) -> ToolRegistry:
        """The standard tools ``create`` / ``resume`` start from: here the built-in ``read``,
        ``write``, ``edit``, ``glob`` and ``bash`` (60 s default timeout, as ``dsh run``);
        ``dsh.Agent`` (``dsh.subagents.Agent``) adds ``subagent`` and ``subagent_fork``."""
        return builtin_registry(bash_default_timeout_ms=60_000)

    @classmethod
    async def create(
        cls,
        store: EventStore,
        *,
        model: Model,
        cwd: str | Path = ".",
        tools: ToolsArg = (),
        standard_tools: bool | None = None,
        config: AgentConfig | None = None,
        session_id: str | None = None,
        feed: Feed | None = None,
        extras: Mapping[str, Any] | None = None,
    ) -> Self:
        """Create and store a fresh top-level session (under its lease).

        ``tools`` adds tools, ``@tool`` functions and plain typed functions to the standard
        tools (``standard_tools=False``: only these), or is a whole :class:`ToolRegistry`
        (see :func:`~dsh.loop.setup.agent_tools`). ``config`` defaults to
        :class:`AgentConfig` with the model's own name (``OpenAICompatModel(model=...)``).
        """
        registry = agent_tools(tools, standard_tools, cls.standard_registry)
        resolved = agent_config(config, model)
        header = SessionHeader(id=session_id or new_session_id(), created_at=now_ms(), cwd=_absolute(cwd))
        lease = await store.lease(header.id)
        try:
            await store.create(header)
            agent = cls.attach(
                LoadedSession(header, 0, []),
                store=store,
                model=model,
                tools=registry,
                config=resolved,
                feed=feed,
                extras=extras,
            )
        except BaseException:
            await lease.release()
            raise
        agent._lease = lease
        return agent

    @classmethod
    async def from_env(
        cls,
        *,
        store: EventStore | str | None = None,
        cwd: str | Path = ".",
        tools: ToolsArg = (),
        standard_tools: bool | None = None,
        config: AgentConfig | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Self:
        """:meth:`create` with the provider and store of the environment, as ``dsh run`` finds them.

        The model is an ``OpenAICompatModel`` from ``DEEPSEEK_API_KEY`` / ``DSH_API_KEY``,
        ``DSH_BASE_URL`` / ``DEEPSEEK_BASE_URL`` and ``DSH_MODEL`` (``env``: instead of
        ``os.environ``; no key: ``MissingCredentialError``); ``store`` is a store or a URL,
        else ``$DSH_STORE``, else the default SQLite database. What it opens here, the agent
        closes in :meth:`aclose`.
        """
        from dsh.model.openai_compat import OpenAICompatModel  # the SDK only when it is used

        environ = os.environ if env is None else env
        settings = resolve_provider(env=environ)
        owned: list[_Closer] = []
        if not isinstance(store, EventStore):
            store = open_store(store or environ.get("DSH_STORE"))
            owned.append(store.close)
        model = OpenAICompatModel(base_url=settings.base_url, api_key=settings.api_key, model=settings.model)
        owned.append(model.aclose)
        try:
            agent = await cls.create(
                store, model=model, cwd=cwd, tools=tools, standard_tools=standard_tools, config=config
            )
        except BaseException:
            await _close_all(owned)
            raise
        agent._owned = owned
        return agent

    @classmethod
    def attach(
        cls,
        loaded: LoadedSession,
        *,
        store: EventStore,
        model: Model,
        tools: ToolRegistry,
        config: AgentConfig,
        feed: Feed | None = None,
        delegation: Delegation | None = None,
        extras: Mapping[str, Any] | None = None,
    ) -> Self:
        """An agent over a session that is already stored exactly as ``loaded``."""
        session = Session(loaded.header, loaded.events, inherited_event_count=loaded.inherited_event_count)
        return cls(
            session=session,
            store=store,
            model=model,
            tools=tools,
            config=agent_config(config, model),
            persisted=len(loaded.events),
            feed=feed,
            delegation=delegation,
            extras=extras,
        )

    @classmethod
    async def resume(
        cls,
        store: EventStore,
        session_id: str,
        *,
        model: Model,
        tools: ToolsArg = (),
        standard_tools: bool | None = None,
        config: AgentConfig | None = None,
        lease_wait: float = 0.0,
        feed: Feed | None = None,
        delegation: Delegation | None = None,
        extras: Mapping[str, Any] | None = None,
    ) -> Self:
        """Take the session's lease, load it (its persisted cut unchanged), close a crashed turn.

        The lease comes first (waiting up to ``lease_wait`` seconds for another holder), so
        an open turn found by the load is a crashed one, never another writer's live turn.
        A torn tail the load left out (``dropped_bytes``; the store truncates it at the next
        append) is recorded as an ignorable ``session/repaired {droppedBytes}`` event.
        ``tools`` and ``config`` as for :meth:`create`.
        """
        registry = agent_tools(tools, standard_tools, cls.standard_registry)
        resolved = agent_config(config, model)
        lease = await store.lease(session_id, wait=lease_wait)
        try:
            loaded = await store.load(session_id)
            agent = cls.attach(
                loaded,
                store=store,
                model=model,
                tools=registry,
                config=resolved,
                feed=feed,
                delegation=delegation,
                extras=extras,
            )
            agent._lease = lease
            closers = interrupted_turn_closers(agent.session.events)
            if closers:
                last_time = agent.session.events[-1].time
                for etype, data, sources in closers:
                    agent.append(etype, data, source_event_seqs=sources, time=last_time)
            if loaded.dropped_bytes:  # the next append truncates the torn tail: say so in the log
                repaired = Event(
                    SESSION_REPAIRED,
                    agent.session.next_seq,
                    now_ms(),
                    {"droppedBytes": loaded.dropped_bytes},
                    ignorable=True,
                )
                agent.feed.event(agent.id, agent.session.append_event(repaired))
            if closers or loaded.dropped_bytes:
                await agent.checkpoint()
        except BaseException:
            await lease.release()
            raise
        return agent

    async def take_lease(self, *, wait: float = 0.0) -> None:
        """Take this session's store lease (held until :meth:`aclose`), e.g. for a background
        child, so another process sees it is live."""
        if self._lease is None:
            self._lease = await self.store.lease(self.id, wait=wait)

    # -- children -----------------------------------------------------------------------

    async def fork(
        self, *, session_id: str | None = None, call_id: str | None = None, tools: ToolRegistry | None = None
    ) -> Self:
        """A stored child holding this session's completed turns (through its last ``turn/end``).

        The child's log is that prefix plus the tagged ``session/end-seed`` marker, its cut
        persisted with it (``dsh.events.fork``); with no completed turn it starts empty and
        unseeded. It shares this agent's store, model, tools, config and feed, has
        ``origin: "subagent"`` and one more delegation level. ``call_id`` names the tool call
        that delegates (the subagent tools pass theirs); ``tools`` replaces the parent's.
        """
        return await self._child(True, session_id, call_id, tools)

    async def spawn(
        self, *, session_id: str | None = None, call_id: str | None = None, tools: ToolRegistry | None = None
    ) -> Self:
        """A stored, empty child session, otherwise as :meth:`fork`."""
        return await self._child(False, session_id, call_id, tools)

    async def _child(
        self, inherit: bool, session_id: str | None, call_id: str | None, tools: ToolRegistry | None
    ) -> Self:
        parent = self.session.header
        options = ForkOptions(
            child_id=session_id,
            origin="subagent",
            delegation_depth=parent.delegation_depth + 1,
            agent_preset=parent.agent_preset,
        )
        child = fork_seed(parent, self.session.events if inherit else (), options)
        await self.store.create(child.header, child.seed, inherited_event_count=child.cut)
        return self.attach(
            LoadedSession(child.header, child.cut, child.seed),
            store=self.store,
            model=self.model,
            tools=tools or self.tools,
            config=self.config,
            feed=self.feed,
            delegation=None if call_id is None else Delegation(self.id, call_id),
            extras=self.extras,
        )

    async def aclose(self) -> None:
        """Kill the session's background jobs, stop a woken turn still running, release the
        session's lease (idempotent); the store stays open unless :meth:`from_env` opened it."""
        self.closed = True
        await self.jobs.aclose()  # a job never outlives its agent
        driver, self._driver = self._driver, None
        if driver is not None and not driver.done():
            driver.cancel()
            await asyncio.gather(driver, return_exceptions=True)
        lease, self._lease = self._lease, None
        owned, self._owned = self._owned, []
        try:
            if lease is not None:
                await lease.release()
        finally:
            await _close_all(owned)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- log access ---------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The session id."""
        return self.session.id

    @property
    def header(self) -> SessionHeader:
        """The session's header."""
        return self.session.header

    @property
    def own_events(self) -> Sequence[Event]:
        """The session's own events: everything after its inherited prefix."""
        return self.session.own_events

    @property
    def cwd(self) -> Path:
        return Path(self.session.header.cwd or os.getcwd())

    def append(
        self,
        type: str,
        data: Any,
        *,
        source_event_seqs: Sequence[int] | None = None,
        time: int | None = None,
    ) -> Event:
        """Append to the session and publish on the feed."""
        event = self.session.append(type, data, source_event_seqs=source_event_seqs, time=time)
        self.feed.event(self.session.id, event)
        if self._order is not None:
            self._order.progressed(self.session.id)
        return event

    async def checkpoint(self) -> None:
        """Make every appended event durable."""
        await self._persister.flush(durable=True)

    def _tool_context(self, call_id: str, turn: int, step: int) -> ToolContext:
        return ToolContext(
            session_id=self.session.id,
            call_id=call_id,
            cwd=self.cwd,
            turn=turn,
            step=step,
            allow_outside_workspace=self.config.allow_outside_workspace,
            extras=dict(self.extras),
            files=self.files,
            sandbox=self.config.sandbox,
            approvals=self.approvals,
            agent=self,
            jobs=self.jobs.table,
        )

    def _log_sandbox_mode(self) -> None:
        """``sandbox/mode {mode}`` when the configured policy's mode is not the last one logged
        (a deployment default, ``SandboxPolicy.logged=False``, is not logged: the original's way)."""
        if self.config.sandbox is None or not self.config.sandbox.logged:
            return
        logged = [e.data.get("mode") for e in self.session.events if e.type == SANDBOX_MODE]
        if not logged or logged[-1] != self.config.sandbox.mode:
            self.append(SANDBOX_MODE, {"mode": self.config.sandbox.mode})

    async def set_sandbox_mode(self, mode: SandboxMode) -> None:
        """Switch the session's file policy to ``mode`` (ACP ``session/set_mode``), logged as
        ``sandbox/mode`` and checkpointed: the next ``bash`` / ``write`` / ``edit`` call runs
        under it and the next step's runtime-context snapshot states it. The approval policy
        follows (``never`` under ``danger-full-access``) unless the config fixes it or the
        session is a delegated child (always ``never``). Children started before keep theirs."""
        current = self.config.sandbox
        policy = (
            SandboxPolicy(mode=mode)
            if current is None
            else replace(current, mode=mode, logged=True, shown=None)
        )
        self.config = self.config.evolve(sandbox=policy)
        if self.delegation is None:
            self.approvals.policy = self.config.approvals_policy()
        self._log_sandbox_mode()
        await self.checkpoint()

    def _on_chunk(self, chunk: Chunk) -> None:
        self.feed.chunk(self.session.id, chunk)

    # -- the turn -----------------------------------------------------------------------

    async def run_turn(
        self,
        prompt: str | Message | None = None,
        *,
        preamble: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> TurnResult:
        """Run one turn for ``prompt``; ``preamble`` events go right after ``turn/start``.

        Without a prompt the turn opens with what the inbox holds (every ``next-step``
        message, then the first ``next-turn`` one). Every step ends with ``step/end`` and
        the turn with ``turn/end``, also on error and cancellation (the ``CancelledError``
        then propagates after the log is closed and checkpointed). A model failure that is
        not retried ends the turn ``error``. Work left in the inbox when the turn ends wakes
        the agent for another turn (:meth:`wake`).
        """
        try:
            async with self._lock:
                return await self._run_turn(prompt, preamble)
        finally:
            if self.inbox.has_work:
                self.wake()

    # -- the inbox and waking -----------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A turn is running or about to run (a wake is pending)."""
        return self._lock.locked() or (self._driver is not None and not self._driver.done())

    def progress(self) -> SessionProgress:
        """Steps started and turns ended in this session's own log so far."""
        return SessionProgress(self._steps_started, self._turns_ended)

    def deliver(self, message: Message, target: Target, *, wake: bool = False) -> None:
        """Queue ``message`` (logged); ``wake``: run a turn for it once no turn is running."""
        self.inbox.put(message, target)
        if wake:
            self.wake()

    def wake(self) -> None:
        """Run turns while the inbox holds work, after any turn running now (one driver)."""
        if self._driver is not None and not self._driver.done():
            return
        self._driver = asyncio.get_running_loop().create_task(self._drive(), name=f"wake {self.id}")

    async def until_idle(self) -> None:
        """Return once no woken turn is due or running (the original's idle)."""
        while self._driver is not None and not self._driver.done():
            await asyncio.wait([self._driver])

    def interrupt(self) -> bool:
        """Cancel the woken turn running now (its ``turn/end`` says ``aborted``); the inbox
        keeps its work. ``False`` when no woken turn is running."""
        turn = self._woken_turn
        if turn is None or turn.done():
            return False
        turn.cancel()
        return True

    async def _drive(self) -> None:
        last: TurnResult | None = None
        while True:
            async with self._lock:
                if self.inbox.has_work:
                    last = await self._woken()
                    continue
            if self.activation is None or last is None:
                return
            await self.activation.before_idle(self)
            if not self.inbox.has_work:
                self.activation.on_idle(self, last)
                return

    async def _woken(self) -> TurnResult:
        """One turn for the inbox's work, in a task of its own so :meth:`interrupt` stops
        only it; a turn that raised is closed in the log and its end read back from there."""
        turn = asyncio.get_running_loop().create_task(self._run_turn(None, ()), name=f"turn {self.id}")
        self._woken_turn = turn
        try:
            return await turn
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not turn.cancelled() or (current is not None and current.cancelling()):
                raise
        except Exception:  # nobody awaits a woken turn: log it, the log has its turn/end
            log.exception("session %s: a woken turn raised", self.id)
        finally:
            self._woken_turn = None
        return self._closed_turn()

    def _closed_turn(self) -> TurnResult:
        """The result of the last turn the log closed."""
        for event in reversed(self.session.own_events):
            end = turn_end_of(event)
            if end is not None:
                reason = end.get("reason")
                return TurnResult(self.id, end["turn"], dict(reason) if reason else {"kind": "error"}, "")
        return TurnResult(self.id, 0, {"kind": "error"}, "")

    def stream(self, prompt: str | Message) -> AsyncGenerator[StreamEvent, None]:
        """Run one turn and yield its typed events as they happen (``dsh.loop.stream``).

        ``async for event in agent.stream("...")``: text and reasoning deltas, tool calls and
        results, subagent children starting and ending, and last ``TurnFinished(result)``.
        Closing the iterator early (``contextlib.aclosing``) cancels the turn.
        """
        return stream_turn(self.feed, self.id, lambda: self.run_turn(prompt))

    def run_sync(self, prompt: str | Message) -> TurnResult:
        """:meth:`run_turn` from synchronous code (see :func:`dsh.loop.sync.run_sync`)."""
        return run_sync(self.run_turn(prompt))

    async def _run_turn(
        self, prompt: str | Message | None, preamble: Sequence[tuple[str, dict[str, Any]]]
    ) -> TurnResult:
        turn = self.session.last_turn() + 1
        start = self.session.next_seq
        self.append(TURN_START, turn_start(turn))
        messages: list[Message]
        if prompt is None:  # the inbox's first next-turn message; next-step ones join at the claim
            opened = self.inbox.claim_turn()
            messages = [opened] if opened is not None else []
        else:
            messages = [user_message(prompt) if isinstance(prompt, str) else prompt]
            self.jobs.user_turn()
        for etype, data in preamble:
            self.append(etype, data)
        self._log_sandbox_mode()
        reason: dict[str, Any] = {"kind": "completed"}
        try:
            reason = await self._steps(turn, messages, prompted=prompt is not None)
        except asyncio.CancelledError:
            reason = {"kind": "aborted", "reason": {"kind": self.abort_kind}}
            self._end_turn(turn, reason)
            await asyncio.shield(self.checkpoint())
            raise
        except ModelError as exc:
            reason = {"kind": "error", "failure": {"code": exc.code, "message": exc.failure_message}}
        except Exception as exc:
            failure = {"code": "UNKNOWN", "message": f"{type(exc).__name__}: {exc}"}
            self._end_turn(turn, {"kind": "error", "failure": failure})
            await self.checkpoint()
            raise
        self._end_turn(turn, reason)
        await self.checkpoint()
        own = self.session.events[start:]
        return TurnResult(self.session.id, turn, reason, final_assistant_text(own), usage_totals(own))

    def _end_turn(self, turn: int, reason: dict[str, Any]) -> None:
        self.append(TURN_END, {"turn": turn, "reason": reason})
        self._turns_ended += 1

    async def _in_recorded_order(self, pending: list[Message], ending: int | None = None) -> None:
        """Under a model that knows a recorded order (a replay), wait for the messages from
        other sessions the recording had here (``ending``: before ending that turn)."""
        if self._order is not None:
            history = self._history.messages
            events = self.session.events

            def available() -> list[Message]:
                return [*history(events), *pending, *self.inbox.pending("next-step")]

            await self._order.before_claim(self.id, available, ending=ending)

    async def _claim(self, pending: list[Message], step: int) -> list[Message]:
        """What the step shows the model: ``pending`` and every ``next-step`` message (before
        the turn's own message at step 1, after the tools' context later)."""
        await self._in_recorded_order(pending)
        claimed = self.inbox.claim_step()
        return [*claimed, *pending] if step == 1 else [*pending, *claimed]

    async def _steps(self, turn: int, messages: list[Message], *, prompted: bool = True) -> dict[str, Any]:
        """The steps of one turn, with the hooks of :attr:`AgentConfig.hooks`.

        ``UserPromptSubmit`` fires before the first step (a block ends the turn ``blocked``
        with no step; context follows the prompt), tool hooks fire in the scheduler (their
        context opens the next step), and ``Stop`` fires after the last step's ``step/end``
        (a block continues the turn with its reason as the next step's message).
        """
        hooks = await self._session_hooks()
        pending: list[Message] = list(messages)
        additions: list[Message] = []  # after the runtime context at step 1 (the original's order)
        if hooks is not None and prompted:
            submitted = await hooks.user_prompt_submit(turn, joined_text(messages[0].get("content", [])))
            if submitted.blocked:
                return {"kind": "blocked"}
            additions = list(submitted.context_messages)
        max_tokens_hit = False
        for step in range(1, self.config.max_steps + 1):
            pending = await self._claim(pending, step)
            snapshot = self._runtime_snapshot()
            if snapshot is not None:
                pending.append(snapshot)
            pending.extend(additions)
            additions = []
            self.append(STEP_START, step_mark(turn, step))
            self._steps_started += 1
            try:
                for m in pending:
                    self.append(USER_MESSAGE, m)
                pending = []
                assembled = await self._model_step(turn, step)
                if assembled.finish_kind == "max-tokens":
                    max_tokens_hit = True
                calls = assembled.tool_calls
                if calls:
                    ran = await self._scheduler.run(calls, turn=turn, step=step, hooks=hooks)
                    pending = ran.next_step
            finally:
                self.append(STEP_END, step_mark(turn, step))
            if calls and not max_tokens_hit:
                continue
            if not pending and hooks is not None:
                stopping = await hooks.stop(turn)
                if stopping.blocked:
                    pending = stopping.steer_messages()
            if not pending:
                await self._in_recorded_order(pending, ending=turn)
            if not pending and not self.inbox.has_step_work:
                break
        else:
            raise ModelError("MAX_STEPS", f"turn {turn} exceeded {self.config.max_steps} steps")
        return {"kind": "max-tokens"} if max_tokens_hit else {"kind": "completed"}

    def _runtime_snapshot(self) -> Message | None:
        """The runtime-context snapshot this pre-step appends, if its text changed
        (``dsh.loop.runtime_context``)."""
        sections = []
        if self.config.runtime_context and self.config.sandbox is not None:
            sections = context_sections(
                self.config.sandbox, self.cwd, self.approvals.policy, delegated=self.delegation is not None
            )
        message = snapshot_message(sections, self._context_text)
        if message is not None:
            self._context_text = joined_text(message["content"])
        return message

    async def _session_hooks(self) -> SessionHooks | None:
        """This session's hooks (its own id, cwd and log), or ``None`` when none are configured."""
        hook_set = self.config.hooks
        if hook_set is None:
            return None
        return await hook_set.for_session(
            self.session.id,
            self.cwd,
            model=self.config.model,
            append=self.append,
            sandbox=self.config.sandbox,
        )

    def _request_header(self) -> dict[str, Any]:
        """The request header, rebuilt only when what it is made of changes.

        Building it copies every tool schema (``ToolRegistry.specs``), so the last one is
        kept and reused while the provider, the model settings, the system prompt, the
        registry and its tool names are the same (a registry's specs are fixed when a tool
        is registered).
        """
        cfg, tools = self.config, self.tools
        key = (self.model.provider, cfg.model, cfg.max_tokens, cfg.system, tools, tuple(tools.names()))
        if self._header is not None and key == self._header_key:
            return self._header
        config: dict[str, Any] = {"provider": self.model.provider, "model": self.config.model}
        if self.config.max_tokens is not None:
            config["maxTokens"] = self.config.max_tokens
        header: dict[str, Any] = {"config": config}
        if self.config.system:
            header["system"] = self.config.system
        specs = self.tools.specs()
        if specs:
            header["tools"] = specs
        self._header, self._header_key = header, key
        return header

    async def _model_step(self, turn: int, step: int) -> Assembled:
        header = self._request_header()
        if self._requests == 0 or (header is not self._last_header and header != self._last_header):
            if self._requests == 0:
                reason = "initial" if self._last_header is None else "resume"
            else:
                reason = "change"
            self.append(REQUEST_HEADER, {"header": header, "reason": reason})
            self._last_header = header
        retries = 0
        while True:
            request = ModelRequest(
                session_id=self.session.id,
                model=self.config.model,
                messages=self._history.messages(self.session.events),
                system=header.get("system"),
                tools=header.get("tools", ()),
                max_tokens=self.config.max_tokens,
                delegation=self.delegation,
            )
            await self.checkpoint()
            self._requests += 1
            settlement = await settle_model_call(
                self.model,
                request,
                turn=turn,
                step=step,
                append=self.append,
                on_chunk=self._on_chunk,
            )
            failure = settlement.failure
            if failure is None:
                return settlement.assembled
            if not self.config.retry.should_retry(failure["code"], retries):
                raise ModelError(failure["code"], failure["message"])
            retries += 1
            await self.checkpoint()
            await asyncio.sleep(retry_delay(failure["message"], self.config.retry.delay(retries)))
