"""Agent: runs turns over a session — steps, settlements, retries, tools, checkpoints."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from pathlib import Path
from typing import Any, Self, cast

from dsh.context.questions import QUESTIONS_EXTRA
from dsh.context.skill_tool import WORKSPACE_EXTRA
from dsh.errors import ModelError, SessionTruncatedError, StopRunError, UsageError
from dsh.events import Event, SessionHeader
from dsh.events.compaction import is_checkpoint
from dsh.events.messages import Message, user_message
from dsh.events.payloads import (
    TurnEndReason,
    aborted_reason,
    error_reason,
    inbox_spliced,
    turn_end,
    turn_start,
)
from dsh.events.vocabulary import (
    INBOX_SPLICED,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
)
from dsh.ids import new_session_id, now_ms
from dsh.loop.children import start_child
from dsh.loop.compaction import Compacted
from dsh.loop.config import AgentConfig
from dsh.loop.delegation import session_approval_policy
from dsh.loop.feed import Feed
from dsh.loop.inbox import Inbox, Target, pending_from_log
from dsh.loop.job_notices import JobNotices
from dsh.loop.kept_digest import KeptDigest
from dsh.loop.mcp_tools import session_mcp
from dsh.loop.persist import Persister
from dsh.loop.prompt import check_prompt
from dsh.loop.prompts import PromptPart, prompt_message
from dsh.loop.repeat_reminder import RepeatReminder
from dsh.loop.result import TurnResult, closed_turns
from dsh.loop.rewind import rewind_session
from dsh.loop.sandbox_mode import log_sandbox_mode, switch_sandbox_mode
from dsh.loop.scheduler import ToolScheduler
from dsh.loop.session_ids import recorded_session_id
from dsh.loop.setup import (
    Closer,
    ToolsArg,
    agent_config,
    agent_redaction,
    agent_tools,
    close_all,
    offer_recall,
    repair_loaded,
)
from dsh.loop.state import Activation
from dsh.loop.steps import Steps
from dsh.loop.stepwise import StepwiseTurn
from dsh.loop.stream import StreamEvent, stream_turn
from dsh.loop.sync import run_sync
from dsh.loop.titling import Titling
from dsh.loop.waking import Waker
from dsh.loop.weak import weak_method, weak_self
from dsh.loop.workspace_checkpoints import TurnCheckpoints
from dsh.model import Delegation, DeliveryOrder, Model, SessionProgress
from dsh.model.settings import resolve_provider
from dsh.session import (
    Session,
    final_assistant_text,
    usage_totals,
)
from dsh.store import EventStore, LoadedSession, SessionLease
from dsh.store.notices import report_all, warnings_to
from dsh.store.url import open_store
from dsh.tools import FileObservations, ToolContext
from dsh.tools.approval import Approvals
from dsh.tools.builtin.terminal_tools import TERMINALS_EXTRA
from dsh.tools.registry import ToolRegistry, builtin_registry
from dsh.tools.sandbox import SandboxMode, SandboxPolicy
from dsh.tools.served import RecordedResults
from dsh.tools.terminals import TerminalTable

log = logging.getLogger("dsh.loop")


def _absolute(path: str | Path) -> str:
    return os.path.abspath(path)


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
        tools, self.mcp = session_mcp(
            config,
            tools,
            session.id,
            Path(session.header.cwd or os.getcwd()),
            delegated=delegation is not None,
        )
        self.tools = tools
        self.config = config
        self.feed = feed or Feed()
        self.delegation = delegation
        self.extras: dict[str, Any] = dict(extras or {})
        self.abort_kind = "user" if delegation is None else "parent"
        self.files = FileObservations()  # what this session's tools have seen of each file
        self.redaction = agent_redaction(model)
        """The secrets scrubbed out of every tool and hook output of this session."""
        policy = session_approval_policy(session, config, delegated=delegation is not None)
        me = weak_self(self)  # the components below call back into the agent: weakly (dsh.loop.weak)
        append = weak_method(self.append)
        self.approvals = Approvals(session.id, append, policy=policy, approver=config.approver)
        self._order = model if isinstance(model, DeliveryOrder) else None
        self._persister = Persister(store, session, persisted)
        self._lock = asyncio.Lock()
        self._lease: SessionLease | None = None
        self._turns_ended = len(session.of_type(TURN_END, own=True))
        self.turn_open = False
        """A turn is between its ``turn/start`` and its ``turn/end`` here (a message for it now
        joins a step; once its end is logged, the next turn's, even while the turn's task
        still finishes: its title, its checkpoint)."""
        self.inbox = Inbox(append, pending_from_log(session.of_type(INBOX_SPLICED, own=True)))
        """Messages other sessions queued for this agent (notices, relays)."""
        self._waker = Waker(me, self._lock, lambda: me._run_turn(None, ()))
        self.activation: Activation | None = None
        """Told when woken turns run out of work (set for a continuable child)."""
        self.closed = False
        self.jobs = JobNotices(me)
        """This session's background jobs (``jobs.table``) and their completion notices."""
        self._owned: list[Closer] = []  # what aclose closes after the lease (from_env)
        self.workspace_checkpoints: TurnCheckpoints | None = None
        """Set (``dsh run``, ``chat``, ``acp``): the workspace is checkpointed after each turn."""
        scheduler = ToolScheduler(
            registry=tools,
            persister=self._persister,
            append=append,
            make_context=weak_method(self._tool_context),
            max_parallel=config.max_parallel_tools,
            reminder=RepeatReminder() if config.repeat_reminder else None,
            recorded=model if isinstance(model, RecordedResults) else None,
        )
        self._steps = Steps(me, scheduler, self._order)
        self.titling: Titling = Titling(me)
        self.digest = KeptDigest(store, session, weak_method(self.checkpoint))
        """The session's listing digest, kept when the agent closes (``dsh.loop.kept_digest``)."""
        self.terminals = TerminalTable()
        """This session's persistent terminals (closed with the agent)."""

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
        :class:`AgentConfig` with the model's own name (``OpenAICompatModel``'s ``model=``).
        """
        registry = agent_tools(tools, standard_tools, cls.standard_registry)
        resolved = agent_config(config, model)
        if session_id is None:
            session_id = await recorded_session_id(model, store, None, None)
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

        The model is ``ProviderSettings.open_model()`` of ``DEEPSEEK_API_KEY`` / ``DSH_API_KEY``,
        ``DSH_BASE_URL`` / ``DEEPSEEK_BASE_URL`` and ``DSH_MODEL`` (``env``: instead of
        ``os.environ``; no key: ``MissingCredentialError``), the key scrubbed out of this
        process's ``/proc/<pid>/environ``; ``store`` is a store or a URL,
        else ``$DSH_STORE``, else the default SQLite database. What it opens here, the agent
        closes in :meth:`aclose`.
        """
        environ = os.environ if env is None else env
        settings = resolve_provider(env=environ, key_option=None)  # the library has no --api-key
        owned: list[Closer] = []
        if not isinstance(store, EventStore):
            store = open_store(store or environ.get("DSH_STORE"))
            owned.append(store.close)
        model = settings.open_model()
        owned.append(model.aclose)
        try:
            agent = await cls.create(
                store, model=model, cwd=cwd, tools=tools, standard_tools=standard_tools, config=config
            )
        except BaseException:
            await close_all(owned)
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
        agent = cls(
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
        if any(type(e.surface_op) is dict and is_checkpoint(e) for e in session.of_type(USER_MESSAGE)):
            offer_recall(agent.tools)
        return agent

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
        append) is recorded as an ignorable ``session/repaired {droppedBytes}`` event; a
        session that lost durably appended events (``loss``) is refused
        (``SessionTruncatedError``).
        ``tools`` and ``config`` as for :meth:`create`.
        """
        registry = agent_tools(tools, standard_tools, cls.standard_registry)
        resolved = agent_config(config, model)
        lease = await store.lease(session_id, wait=lease_wait)
        try:
            held: list[str] = []
            with warnings_to(held.append):  # a refusal is its one line, not a warning and then it
                loaded = await store.load(session_id, streams=False)  # the history, not every delta
            if loaded.loss is not None:  # never append after a detected loss
                raise SessionTruncatedError(f"refusing to resume session {session_id}: {loaded.loss}")
            report_all(held)
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
            await repair_loaded(agent, loaded.dropped_bytes)
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
        self,
        *,
        session_id: str | None = None,
        call_id: str | None = None,
        tools: ToolRegistry | None = None,
        at: int | None = None,
    ) -> Self:
        """A stored child holding this session's completed turns (through its last ``turn/end``).

        The child's log is that prefix plus the tagged ``session/end-seed`` marker, its cut
        persisted with it (``dsh.events.fork``); with no completed turn it starts empty and
        unseeded. It shares this agent's store, model, tools, config and feed, has
        ``origin: "subagent"`` and one more delegation level. ``call_id`` names the tool call
        that delegates (the subagent tools pass theirs); ``tools`` replaces the parent's.

        With ``at=TURN`` it is instead the user's branch after that completed turn: a
        top-level session (no ``origin``, this session's depth) that ``store.fork`` cuts
        (``ForkOpenTurnError`` / ``ForkBoundaryError`` when it cannot), resumed under its own
        lease like :meth:`resume` — what ``dsh run --resume CHILD`` continues. Close it when done.
        """
        if at is None:
            return await start_child(self, inherit=True, session_id=session_id, call_id=call_id, tools=tools)
        if call_id is not None:
            raise UsageError("Agent.fork(at=...) makes a user's branch, not a subagent: drop call_id")
        child = await self.store.fork(self.id, child_id=session_id, at=at)
        return await type(self).resume(
            self.store,
            child.header.id,
            model=self.model,
            tools=tools or self.tools,
            config=self.config,
            feed=self.feed,
            extras=self.extras,
        )

    async def rewind(
        self, *, to: int, files: bool = True, conversation: bool = True, session_id: str | None = None
    ) -> Self:
        """A branch at turn ``to`` with the workspace restored as that turn left it
        (``dsh.loop.rewind``: the replaced files are checkpointed first and the rewind logged in
        the branch; this session is untouched), resumed like :meth:`fork` with ``at``.
        ``files=False``: the conversation only; ``conversation=False``: the files only (the
        branch then holds every completed turn)."""
        done = await rewind_session(
            self.store,
            self.id,
            to,
            root=self.cwd,
            files=files,
            conversation=conversation,
            child_id=session_id,
        )
        return await type(self).resume(
            self.store, done.session, model=self.model, tools=self.tools, config=self.config, feed=self.feed,
            extras=self.extras,
        )  # fmt: skip

    async def spawn(
        self, *, session_id: str | None = None, call_id: str | None = None, tools: ToolRegistry | None = None
    ) -> Self:
        """A stored, empty child session, otherwise as :meth:`fork`."""
        return await start_child(self, inherit=False, session_id=session_id, call_id=call_id, tools=tools)

    async def aclose(self) -> None:
        """Kill the session's background jobs, stop a woken turn still running (it ends
        ``aborted {reason: disposed}``), keep the listing digest of what it wrote (``digest``),
        release the session's lease (idempotent); the store stays open unless :meth:`from_env`
        opened it."""
        self.closed = True
        self.abort_kind = "disposed"
        await self.jobs.aclose()  # a job never outlives its agent
        await self.terminals.aclose()  # nor a terminal
        if self.mcp is not None:
            await self.mcp.aclose()  # nor an MCP server
        await self._waker.stop()
        if self.digest.at_close:
            await self.digest.keep()
        lease, self._lease = self._lease, None
        owned, self._owned = self._owned, []
        try:
            if lease is not None:
                await lease.release()
        finally:
            await close_all(owned)

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
    def events(self) -> Sequence[Event]:
        """The session's whole log: a fork's inherited prefix, then its own events."""
        return self.session.events

    @property
    def sandbox(self) -> SandboxPolicy | None:
        """The session's file policy (``config.sandbox``; ``None``: none)."""
        return self.config.sandbox

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
            self._order.progressed(self.session.id, event)
        return event

    def replace_surface(self, start: int, end: int, message: Message, sources: Sequence[int]) -> Event:
        """Append ``message`` as a ``user/message`` whose ``surfaceOp`` replaces the surface
        nodes ``start..end`` (inclusive, by surface position), citing ``sources`` (a
        compaction's start, its summary and every replaced node)."""
        event = Event(
            USER_MESSAGE,
            self.session.next_seq,
            now_ms(),
            message,
            {"op": "replace", "start": start, "end": end},
            tuple(sources),
        )
        self.session.append_event(event)
        self.feed.event(self.session.id, event)
        if self._order is not None:
            self._order.progressed(self.session.id, event)
        return event

    def compact_surface(self, start: int, end: int, message: Message) -> Event:
        """Replace the one surface node ``start`` (= ``end``) by ``message`` with no bracket
        (the original's hand-placed checkpoint fixture of ``agent-instructions``)."""
        return self.replace_surface(start, end, message, (start,))

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
            extras=self._extras(),
            files=self.files,
            sandbox=self.config.sandbox,
            approvals=self.approvals,
            agent=self,
            jobs=self.jobs.table,
            redaction=self.redaction,
            log=self.append,
            attachments=self.store,
            model=self.config.model,
            image_input=self.config.takes_images(),
        )

    def _extras(self) -> dict[str, Any]:
        extras = dict(self.extras)
        if self.config.workspace is not None:
            extras[WORKSPACE_EXTRA] = self.config.workspace
        if self.config.questions is not None:
            extras[QUESTIONS_EXTRA] = self.config.questions
        extras[TERMINALS_EXTRA] = self.terminals
        return extras

    async def set_sandbox_mode(self, mode: SandboxMode) -> None:
        """Switch the session's file policy to ``mode`` (ACP ``session/set_mode``), logged and
        checkpointed; the approval policy follows (see :func:`~dsh.loop.sandbox_mode.switch_sandbox_mode`)."""
        await switch_sandbox_mode(self, mode)

    # -- the turn -----------------------------------------------------------------------

    async def prompt_message(self, parts: Sequence[PromptPart]) -> Message:
        """The user message for text and :class:`~dsh.tools.images.Image` parts, its images
        stored in the session's store (``dsh.loop.prompts``); refused whole, before anything
        is stored, for a model that takes no images or past the batch limits."""
        return await prompt_message(
            parts, self.store, model=self.config.model, takes_images=self.config.takes_images()
        )

    async def run_turn(
        self,
        prompt: str | Message | Sequence[PromptPart] | None = None,
        *,
        preamble: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> TurnResult:
        """Run one turn for ``prompt``; ``preamble`` events go right after ``turn/start``.

        Without a prompt the turn opens with what the inbox holds (every ``next-step``
        message, then the first ``next-turn`` one). Every step ends with ``step/end`` and
        the turn with ``turn/end``, also on error and cancellation (the ``CancelledError``
        then propagates after the log is closed and checkpointed). A model failure that is
        not retried ends the turn ``error``. Work left in the inbox when the turn ends wakes
        the agent for another turn (:meth:`wake`). A list of text and images (``[text,
        Image.from_path(p)]``) becomes one user message with attachments
        (:meth:`prompt_message`; refused before the turn starts).
        """
        if isinstance(prompt, str):
            check_prompt(prompt)  # EmptyPromptError before the turn starts (dsh.loop.prompt)
        message = await self.prompt_message(prompt) if isinstance(prompt, list | tuple) else prompt
        try:
            async with self._lock:
                result = await self._run_turn(cast("str | Message | None", message), preamble)
                if self.workspace_checkpoints is not None:
                    await self.workspace_checkpoints.after_turn(self)
                return result
        finally:
            if self.inbox.has_work:
                self.wake()

    async def compact(self, *, command_id: str | None = None) -> Compacted:
        """Compact the history now, between turns (the original's ``/compact``): everything
        but the newest unit is replaced by a summary; waits for a running turn to end. The
        result says what was replaced, or why nothing was (``error``; the history is then
        unchanged). ``command_id``: the ``command/run`` that asked for it, if any."""
        async with self._lock:
            return await self._steps.compactor.compact(None, command_id=command_id)

    # -- the inbox and waking -----------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A turn is running or about to run (a wake is pending)."""
        return self._lock.locked() or self._waker.pending

    def turns_after(self, turn: int) -> list[TurnResult]:
        """How each turn closed after ``turn`` ended (woken turns, which no caller awaits),
        read from this session's log."""
        return closed_turns(self.session.id, self.session.own_events, after=turn)

    def progress(self) -> SessionProgress:
        """Steps started and turns ended in this session's own log so far."""
        return SessionProgress(self._steps.started, self._turns_ended)

    def deliver(self, message: Message, target: Target, *, wake: bool = False) -> None:
        """Queue ``message`` (logged); ``wake``: run a turn for it once no turn is running."""
        self.inbox.put(message, target)
        if wake:
            self.wake()

    def wake(self) -> None:
        """Run turns while the inbox holds work, after any turn running now (one driver)."""
        self._waker.wake()

    async def until_idle(self) -> None:
        """Return once no woken turn is due or running (the original's idle)."""
        await self._waker.until_idle()

    def interrupt(self) -> bool:
        """Cancel the woken turn running now (its ``turn/end`` says ``aborted``); the inbox
        keeps its work. ``False`` when no woken turn is running."""
        return self._waker.interrupt()

    def stream(self, prompt: str | Message) -> AsyncGenerator[StreamEvent, None]:
        """Run one turn and yield its typed events as they happen (``dsh.loop.stream``).

        ``async for event in agent.stream("...")``: text and reasoning deltas, tool calls and
        results, subagent children starting and ending, and last ``TurnFinished(result)``.
        Closing the iterator early (``contextlib.aclosing``) cancels the turn.
        """
        if isinstance(prompt, str):
            check_prompt(prompt)  # raised here, not at the first iteration
        return stream_turn(self.feed, self.id, lambda: self.run_turn(prompt))

    def stepwise(self) -> StepwiseTurn:
        """This agent's turn machinery one piece at a time, for an external driver
        (``dsh.temporal``): each piece idempotent against the log (``dsh.loop.stepwise``)."""
        return StepwiseTurn(self, self._steps)

    def run_sync(self, prompt: str | Message) -> TurnResult:
        """:meth:`run_turn` from synchronous code (see :func:`dsh.loop.sync.run_sync`)."""
        if isinstance(prompt, str):
            check_prompt(prompt)  # before a coroutine is made (it would never be awaited)
        return run_sync(self.run_turn(prompt))

    async def _run_turn(
        self, prompt: str | Message | None, preamble: Sequence[tuple[str, dict[str, Any]]]
    ) -> TurnResult:
        turn = self.session.last_turn() + 1
        start = self.session.next_seq
        given = None if prompt is None else user_message(prompt) if isinstance(prompt, str) else prompt
        if given is not None and self.config.prompt_inbox:
            self.append(INBOX_SPLICED, inbox_spliced("next-turn", 0, [given]))
        self.append(TURN_START, turn_start(turn))
        self.turn_open = True
        messages: list[Message]
        if given is None:  # the inbox's first next-turn message; next-step ones join at the claim
            opened = self.inbox.claim_turn()
            messages = [opened] if opened is not None else []
        else:
            if self.config.prompt_inbox:
                self.append(INBOX_SPLICED, inbox_spliced("next-turn", 0, [], removed_count=1))
            messages = [given]
            self.jobs.user_turn()
        for etype, data in preamble:
            self.append(etype, data)
        log_sandbox_mode(self)
        if self.mcp is not None:  # before the first model call: its servers' tools are offered
            await self.mcp.ready()
        reason = error_reason("UNKNOWN", "")
        cancelled = False
        try:
            reason = await self._steps.run(turn, messages, prompted=prompt is not None)
        except asyncio.CancelledError:
            reason, cancelled = aborted_reason(self.abort_kind), True
            raise
        except ModelError as exc:  # a model failure not retried ends the turn; nothing raises
            reason = error_reason(exc.code, exc.failure_message)
        except StopRunError as exc:  # the turn ends error and the caller gets the error
            reason = error_reason(exc.code, str(exc).split("\n", 1)[0])
            raise
        except Exception as exc:
            reason = error_reason("UNKNOWN", f"{type(exc).__name__}: {exc}")
            raise
        finally:
            await self._close_turn(turn, reason, shielded=cancelled)
            if not cancelled:
                await self.titling.after_turn()
        own = self.session.events[start:]
        return TurnResult(self.session.id, turn, reason, final_assistant_text(own), usage_totals(own))

    async def _close_turn(self, turn: int, reason: TurnEndReason, *, shielded: bool) -> None:
        """The one turn-closing path: ``turn/end {turn, reason}`` and a durable checkpoint,
        however the turn ended. A cancelled turn's checkpoint is ``shielded`` (the cancel
        already happened and must not interrupt it); any other turn's is awaited directly,
        which costs no event-loop round trip (a shield is a task: ~30 µs a turn)."""
        self.append(TURN_END, turn_end(turn, reason))
        self.turn_open = False
        self._turns_ended += 1
        if shielded:
            await asyncio.shield(self.checkpoint())
        else:
            await self.checkpoint()
