"""Agent: runs turns over a session — steps, settlements, retries, tools, checkpoints."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dsh.errors import ModelError
from dsh.events import Assembled, Event, SessionHeader
from dsh.events.chunks import Chunk, Failure
from dsh.events.messages import Message, joined_text, user_message
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
from dsh.loop.model_call import settle_model_call
from dsh.loop.persist import Persister
from dsh.loop.scheduler import ToolScheduler
from dsh.model import Delegation, DeliveryOrder, Model, ModelRequest, SessionProgress, retry_delay
from dsh.session import (
    HistoryProjector,
    Session,
    final_assistant_text,
    interrupted_turn_closers,
    usage_totals,
)
from dsh.store import EventStore, LoadedSession, SessionLease
from dsh.tools import FileObservations, ToolContext
from dsh.tools.approval import ApprovalPolicy, Approvals
from dsh.tools.registry import ToolRegistry

log = logging.getLogger("dsh.loop")

CLEAN_ENDS = frozenset({"completed", "max-tokens", "blocked"})
"""The ``turn/end`` reasons of a turn that ended as a turn may (the rest: error, aborted)."""


@dataclass(frozen=True, slots=True)
class TurnResult:
    """How a turn ended, its final assistant text and its usage."""

    session_id: str
    turn: int
    reason: dict[str, Any]
    text: str
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """The turn ended as a turn may: ``completed``, ``max-tokens``, or ``blocked`` (a
        ``UserPromptSubmit`` hook refused the prompt; the original answers ``end_turn``)."""
        return self.reason.get("kind") in CLEAN_ENDS

    @property
    def failure(self) -> Failure | None:
        failure = self.reason.get("failure")
        return failure if isinstance(failure, dict) else None  # type: ignore[return-value]


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

    Build with :meth:`create` (a new session), :meth:`resume` (a stored one; a turn a crash
    left open is closed first) or :meth:`attach` (a just-created or forked
    :class:`LoadedSession`, e.g. a subagent child whose cut was set by the store).

    ``create`` and ``resume`` take the session's store lease first (one live writer per
    session; another holder raises ``SessionBusyError``) and hold it until :meth:`aclose`
    (or ``async with agent:``), or until the store is closed.
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
        extras: dict[str, Any] | None = None,
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
        self._persister = Persister(store, session, persisted)
        self._history = HistoryProjector()
        self._last_header = _last_header(session.events)
        self._header: dict[str, Any] | None = None
        self._header_key: tuple[Any, ...] | None = None
        self._requests = 0
        self._lock = asyncio.Lock()
        self._lease: SessionLease | None = None
        self._turns_ended = sum(1 for e in session.own_events if e.type == TURN_END)
        self._steps_started = sum(1 for e in session.own_events if e.type == STEP_START)
        self.inbox = Inbox(self.append, pending_from_log(session.own_events))
        """Messages other sessions queued for this agent (notices, relays)."""
        self._driver: asyncio.Task[None] | None = None
        self._woken_turn: asyncio.Task[TurnResult] | None = None
        self.activation: Activation | None = None
        """Told when woken turns run out of work (set for a continuable child)."""
        self.closed = False
        self._scheduler = ToolScheduler(
            registry=tools,
            persister=self._persister,
            append=self.append,
            make_context=self._tool_context,
            max_parallel=config.max_parallel_tools,
        )

    # -- construction -------------------------------------------------------------------

    @classmethod
    async def create(
        cls,
        store: EventStore,
        *,
        model: Model,
        tools: ToolRegistry,
        config: AgentConfig,
        cwd: str | Path,
        session_id: str | None = None,
        **kwargs: Any,
    ) -> Agent:
        """Create and store a fresh top-level session (under its lease)."""
        header = SessionHeader(id=session_id or new_session_id(), created_at=now_ms(), cwd=_absolute(cwd))
        lease = await store.lease(header.id)
        try:
            await store.create(header)
            agent = cls.attach(
                LoadedSession(header, 0, []), store=store, model=model, tools=tools, config=config, **kwargs
            )
        except BaseException:
            await lease.release()
            raise
        agent._lease = lease
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
        **kwargs: Any,
    ) -> Agent:
        """An agent over a session that is already stored exactly as ``loaded``."""
        session = Session(loaded.header, loaded.events, inherited_event_count=loaded.inherited_event_count)
        return cls(
            session=session,
            store=store,
            model=model,
            tools=tools,
            config=config,
            persisted=len(loaded.events),
            **kwargs,
        )

    @classmethod
    async def resume(
        cls,
        store: EventStore,
        session_id: str,
        *,
        model: Model,
        tools: ToolRegistry,
        config: AgentConfig,
        lease_wait: float = 0.0,
        **kwargs: Any,
    ) -> Agent:
        """Take the session's lease, load it (its persisted cut unchanged), close a crashed turn.

        The lease comes first (waiting up to ``lease_wait`` seconds for another holder), so
        an open turn found by the load is a crashed one, never another writer's live turn.
        A torn tail the load left out (``dropped_bytes``; the store truncates it at the next
        append) is recorded as an ignorable ``session/repaired {droppedBytes}`` event.
        """
        lease = await store.lease(session_id, wait=lease_wait)
        try:
            loaded = await store.load(session_id)
            agent = cls.attach(loaded, store=store, model=model, tools=tools, config=config, **kwargs)
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

    async def aclose(self) -> None:
        """Stop a woken turn still running, release the session's lease (idempotent); the
        store stays open."""
        self.closed = True
        driver, self._driver = self._driver, None
        if driver is not None and not driver.done():
            driver.cancel()
            await asyncio.gather(driver, return_exceptions=True)
        lease, self._lease = self._lease, None
        if lease is not None:
            await lease.release()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- log access ---------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.session.id

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
            extras={"agent": self, **self.extras},
            files=self.files,
            sandbox=self.config.sandbox,
            approvals=self.approvals,
        )

    def _log_sandbox_mode(self) -> None:
        """``sandbox/mode {mode}`` when the configured policy's mode is not the last one logged
        (a deployment default, ``SandboxPolicy.logged=False``, is not logged: the original's way)."""
        if self.config.sandbox is None or not self.config.sandbox.logged:
            return
        logged = [e.data.get("mode") for e in self.session.events if e.type == SANDBOX_MODE]
        if not logged or logged[-1] != self.config.sandbox.mode:
            self.append(SANDBOX_MODE, {"mode": self.config.sandbox.mode})

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
            if event.type == TURN_END:
                reason = event.data.get("reason")
                turn = int(event.data.get("turn", 0))
                return TurnResult(
                    self.id, turn, reason if isinstance(reason, dict) else {"kind": "error"}, ""
                )
        return TurnResult(self.id, 0, {"kind": "error"}, "")

    async def _run_turn(
        self, prompt: str | Message | None, preamble: Sequence[tuple[str, dict[str, Any]]]
    ) -> TurnResult:
        turn = self.session.last_turn() + 1
        start = self.session.next_seq
        self.append(TURN_START, {"turn": turn})
        messages: list[Message]
        if prompt is None:  # the inbox's first next-turn message; next-step ones join at the claim
            opened = self.inbox.claim_turn()
            messages = [opened] if opened is not None else []
        else:
            messages = [user_message(prompt) if isinstance(prompt, str) else prompt]
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
        if isinstance(self.model, DeliveryOrder):
            history = self._history.messages
            events = self.session.events

            def available() -> list[Message]:
                return [*history(events), *pending, *self.inbox.pending("next-step")]

            await self.model.before_claim(self.id, available, ending=ending)

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
        if hooks is not None and prompted:
            submitted = await hooks.user_prompt_submit(turn, joined_text(messages[0].get("content", [])))
            if submitted.blocked:
                return {"kind": "blocked"}
            pending.extend(submitted.context_messages)
        max_tokens_hit = False
        for step in range(1, self.config.max_steps + 1):
            pending = await self._claim(pending, step)
            self.append(STEP_START, {"turn": turn, "step": step})
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
                self.append(STEP_END, {"turn": turn, "step": step})
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
