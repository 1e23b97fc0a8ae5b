"""The ACP agent: dsh sessions behind initialize, session/new|load|list|prompt|cancel, authenticate.

A plain class on purpose: the SDK answers ``-32601`` for every method it does not find,
whereas subclassing its ``Agent`` Protocol would turn each unimplemented method into a
silent ``null`` success. The ACP session id is the dsh session id.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acp.exceptions import RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AudioContentBlock,
    AuthenticateResponse,
    ClientCapabilities,
    EmbeddedResourceContentBlock,
    ForkSessionResponse,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SetSessionModeResponse,
    TextContentBlock,
)

from dsh import __version__
from dsh.acp.auth import AUTH_METHODS, METHOD_IDS, PendingKeyModels
from dsh.acp.commands import commands_update, prompt_command, settle_command
from dsh.acp.fork import fork_turn
from dsh.acp.mcp import CAPABILITIES as MCP_CAPABILITIES
from dsh.acp.mcp import acp_servers
from dsh.acp.modes import checked_mode, mode_state
from dsh.acp.permission import AcpApprover, AcpAsker
from dsh.acp.prompt import admit_prompt, invalid_params
from dsh.acp.runtime import Runtime
from dsh.acp.updates import Delegation, LiveUpdates, Update, history_updates
from dsh.errors import ForkError, StoreError
from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.loop import Agent, AgentConfig, Feed, TurnResult
from dsh.loop.commands import run_command
from dsh.loop.prompts import ImagePromptError
from dsh.loop.workspace_checkpoints import TurnCheckpoints
from dsh.mcp import McpServerSpec
from dsh.model.capabilities import accepts_images
from dsh.session.prices import PriceTable
from dsh.session.timeline import SessionTree, TurnStart
from dsh.subagents.shutdown import running_children, settle_background, stop_background

log = logging.getLogger("dsh.acp")

PROTOCOL_VERSION = 1
LIST_PAGE = 50

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


def turn_failed(detail: str) -> RequestError:
    lines = detail.strip().splitlines()
    return RequestError(-32603, f"Internal error: turn failed: {lines[0] if lines else 'unknown failure'}")


class Outbox:
    """Sends one session's updates in order; fed synchronously from feed listeners."""

    def __init__(self, send: Callable[[Update], Awaitable[None]]) -> None:
        self._send = send
        self._queue: asyncio.Queue[Update] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        self._closed = False

    def put(self, updates: Sequence[Update]) -> None:
        if self._closed or not updates:
            return
        for update in updates:
            self._queue.put_nowait(update)
        if self._pump is None:
            self._pump = asyncio.get_running_loop().create_task(self._run(), name="dsh-acp-outbox")

    async def _run(self) -> None:
        while True:
            update = await self._queue.get()
            try:
                await self._send(update)
            except Exception:
                log.exception("could not send a session update")
            finally:
                self._queue.task_done()

    async def flush(self) -> None:
        """Return once every update put so far has been written."""
        if self._pump is not None and not self._closed:
            await self._queue.join()

    async def aclose(self) -> None:
        await self.flush()
        self._closed = True
        if self._pump is not None:
            self._pump.cancel()
            await asyncio.gather(self._pump, return_exceptions=True)


class AcpSession:
    """One ACP session: its agent, update mapping, outbox and the prompt in flight."""

    def __init__(self, agent: Agent, feed: Feed, live: LiveUpdates, outbox: Outbox) -> None:
        self.agent = agent
        self.live = live
        self.outbox = outbox
        self.turn: asyncio.Task[Any] | None = None
        """The turn in flight, or the slash command run instead (``dsh.acp.commands``)."""
        self.started = False
        self.cancel_requested = False
        feed.on_event(self._on_event)
        feed.on_chunk(self._on_chunk)

    @property
    def id(self) -> str:
        return self.agent.id

    @property
    def busy(self) -> bool:
        return self.turn is not None

    def _on_event(self, session_id: str, event: Event) -> None:
        try:
            items = self.live.timeline.feed(session_id, event)
            if session_id == self.id and any(isinstance(i, TurnStart) for i in items):
                self.started = True
                if self.cancel_requested and self.turn is not None:
                    self.turn.cancel()
            self.outbox.put(self.live.render(session_id, items))
        except Exception:
            log.exception("could not map event %s of session %s", event.type, session_id)

    def _on_chunk(self, session_id: str, chunk: Chunk) -> None:
        try:
            self.outbox.put(self.live.chunk(session_id, chunk))
        except Exception:
            log.exception("could not map a stream chunk of session %s", session_id)

    def cancel(self) -> None:
        """Cancel the turn in flight; one not started yet is cancelled at its ``turn/start``."""
        if self.turn is None:
            return
        self.cancel_requested = True
        if self.started:
            self.turn.cancel()


def _iso(ms: int) -> str:
    stamp = datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _same_dir(stored: str | None, wanted: str) -> bool:
    return stored is not None and os.path.normpath(stored) == os.path.normpath(wanted)


def _check_workspace(cwd: str, extra_dirs: Sequence[str] | None) -> Path:
    if not os.path.isabs(cwd):
        raise invalid_params(f"cwd must be an absolute path: {cwd}")
    if extra_dirs:
        raise invalid_params("additionalDirectories is not supported")
    path = Path(cwd)
    if not path.is_dir():
        raise invalid_params(f"cwd is not a directory: {cwd}")
    return path


class DshAcpAgent:
    """The agent side of one ACP connection."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._conn: Client | None = None
        self._sessions: dict[str, AcpSession] = {}
        self._prompts: set[asyncio.Task[Any]] = set()
        self._loading = asyncio.Lock()
        self._closing = False
        self._approver = AcpApprover(lambda: self._conn)
        self._asker = AcpAsker(lambda: self._conn)

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    # -- lifecycle --------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        who = f"{client_info.name} {client_info.version}" if client_info else "an unnamed client"
        log.info("initialize from %s (protocol %s)", who, protocol_version)
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=self.images_advertised, audio=False, embedded_context=False
                ),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(), fork=SessionForkCapabilities()
                ),
                mcp_capabilities=MCP_CAPABILITIES,
            ),
            auth_methods=list(AUTH_METHODS) if self._pending_key() else [],
            agent_info=Implementation(name="dsh", title="dsh", version=__version__),
        )

    def _pending_key(self) -> bool:
        """No key yet (``dsh.acp.auth``): sessions answer auth_required."""
        models = self.runtime.models
        return isinstance(models, PendingKeyModels) and not models.authenticated

    @property
    def images_advertised(self) -> bool:
        """``promptCapabilities.image``: the sessions' model takes images (as the original,
        which advertises it only for an image-capable route)."""
        return accepts_images(self.runtime.model_name)

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        """A no-op with a key; without one, the environment is read again (else auth_required)."""
        models = self.runtime.models
        if isinstance(models, PendingKeyModels):
            if method_id not in METHOD_IDS:
                raise invalid_params(
                    f"unknown auth method {method_id!r} (use one of {', '.join(sorted(METHOD_IDS))})"
                )
            models.require()
        return AuthenticateResponse()

    # -- sessions ---------------------------------------------------------------------

    def _attach(self, agent: Agent, feed: Feed) -> AcpSession:
        session_id = agent.id
        if self.runtime.checkpoints:  # for dsh rewind
            agent.workspace_checkpoints = TurnCheckpoints(agent.cwd, self.runtime.store)

        async def send(update: Update) -> None:
            if self._conn is None:
                raise ConnectionError("no ACP connection")
            await self._conn.session_update(session_id=session_id, update=update)

        live = LiveUpdates(
            self.runtime.profile,
            session_id,
            str(agent.cwd),
            context_window=self.runtime.context_window,
            tools=agent.tools,
            prices=PriceTable.load(),
        )
        state = AcpSession(agent, feed, live, Outbox(send))
        self._sessions[session_id] = state
        return state

    def _session(self, session_id: str) -> AcpSession:
        state = self._sessions.get(session_id)
        if state is None:
            raise invalid_params(f"unknown session {session_id} (use session/new or session/load)")
        return state

    @staticmethod
    def _with_servers(config: AgentConfig, servers: tuple[McpServerSpec, ...]) -> AgentConfig:
        """The session's config with the client's MCP servers (after the workspace's own, a
        client's server of the same name replacing it); their failures go to the log."""
        merged = {s.name: s for s in (*config.mcp_servers, *servers)}
        notice = config.mcp_notice or (lambda line: log.warning("%s", line))
        return config.evolve(mcp_servers=tuple(merged.values()), mcp_notice=notice)

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        workspace = _check_workspace(cwd, additional_directories)
        servers = acp_servers(mcp_servers, "session/new")
        if self._closing:
            raise RequestError(-32603, "Internal error: the server is shutting down")
        runtime = self.runtime
        model = await runtime.models.model_for(workspace)
        feed = Feed()
        agent = await Agent.create(
            runtime.store,
            model=model,
            tools=runtime.tools(),
            config=self._with_servers(runtime.config(self._approver, self._asker), servers),
            cwd=workspace,
            feed=feed,
        )
        state = self._attach(agent, feed)
        log.info("session/new %s in %s", agent.id, workspace)
        if self.runtime.profile == "full":
            state.outbox.put([commands_update()])  # sent after this answer
            return NewSessionResponse(session_id=agent.id, modes=mode_state(agent))
        return NewSessionResponse(session_id=agent.id)

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        """``session/fork``: a user's branch of a stored session (``dsh.events.fork``), at its
        last completed turn or at ``_meta.dsh.atTurn``, ready for prompts like ``session/new``'s."""
        workspace = _check_workspace(cwd, additional_directories)
        servers = acp_servers(mcp_servers, "session/fork")
        store = self.runtime.store
        if not await store.exists(session_id):
            raise invalid_params(f"unknown session {session_id}")
        try:
            child = await store.fork(session_id, at=fork_turn(kwargs))
        except ForkError as exc:
            raise invalid_params(str(exc)) from None
        feed = Feed()
        model = await self.runtime.models.model_for(workspace)
        config = self._with_servers(self.runtime.config(self._approver, self._asker), servers)
        agent = await Agent.resume(
            store, child.header.id, model=model, tools=self.runtime.tools(), config=config, feed=feed
        )
        self._attach(agent, feed)
        log.info("session/fork %s -> %s", session_id, agent.id)
        if self.runtime.profile == "full":
            return ForkSessionResponse(session_id=agent.id, modes=mode_state(agent))
        return ForkSessionResponse(session_id=agent.id)

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        workspace = _check_workspace(cwd, additional_directories)
        servers = acp_servers(mcp_servers, "session/load")
        store = self.runtime.store
        async with self._loading:
            state = self._sessions.get(session_id)
            if state is None and not await store.exists(session_id):
                raise invalid_params(f"unknown session {session_id}")
            delegations = await self._delegations(session_id)
            if state is None:
                feed = Feed()
                model = await self.runtime.models.model_for(workspace)
                config = self._with_servers(self.runtime.config(self._approver, self._asker), servers)
                agent = await Agent.resume(
                    store, session_id, model=model, tools=self.runtime.tools(), config=config, feed=feed
                )
                state = self._attach(agent, feed)
            if state.busy:
                raise invalid_params(f"session {session_id} has a prompt in flight")
            # No await between the busy check and queueing the history: a prompt cannot
            # slip its live updates in before it.
            agent = state.agent
            updates = history_updates(
                agent.session.events, self.runtime.profile, str(agent.cwd), delegations, agent.tools
            )
            if self.runtime.profile == "full":
                updates.append(commands_update())
            state.outbox.put(updates)
        await state.outbox.flush()
        log.info("session/load %s: replayed %d update(s)", session_id, len(updates))
        if self.runtime.profile == "full":
            return LoadSessionResponse(modes=mode_state(agent))
        return LoadSessionResponse()

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        """Switch the session's file policy (``dsh.acp.modes``), also while a prompt runs."""
        state = self._session(session_id)
        mode = checked_mode(mode_id)
        await state.agent.set_sandbox_mode(mode)
        log.info("session/set_mode %s: %s", session_id, mode)
        return SetSessionModeResponse()

    async def _delegations(self, session_id: str) -> dict[str, Delegation]:
        """Call id → child session, from the stored children's ``subagent/descriptor``."""
        tree = await SessionTree.load(self.runtime.store, session_id)
        found: dict[str, Delegation] = {}
        for child in tree.root.children:
            descriptor = child.descriptor
            if descriptor is not None and descriptor.parent_session == session_id and descriptor.call_id:
                found[descriptor.call_id] = Delegation(child.id, descriptor.provider_kind)
        return found

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        store = self.runtime.store
        rows = [
            s
            for s in await store.list_sessions()
            if s.header.parent_session is None and (cwd is None or _same_dir(s.header.cwd, cwd))
        ]
        rows.sort(key=lambda s: (-s.header.created_at, s.header.id))
        try:
            offset = int(cursor) if cursor else 0
        except ValueError:
            raise invalid_params(f"unknown cursor {cursor!r}") from None
        if offset < 0 or offset > len(rows):
            raise invalid_params(f"unknown cursor {cursor!r}")
        page = rows[offset : offset + LIST_PAGE]
        sessions = []
        for row in page:
            updated = row.header.created_at if row.last_time is None else row.last_time
            if row.last_time is None and row.event_count:  # a store whose listing has no last time
                tail = await store.read_from(row.header.id, row.event_count - 1)
                if tail:
                    updated = tail[-1].time
            sessions.append(
                SessionInfo(session_id=row.header.id, cwd=row.header.cwd or "", updated_at=_iso(updated))
            )
        more = offset + LIST_PAGE < len(rows)
        if more:
            return ListSessionsResponse(sessions=sessions, next_cursor=str(offset + LIST_PAGE))
        return ListSessionsResponse(sessions=sessions)

    # -- turns ------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[PromptBlock], **kwargs: Any) -> PromptResponse:
        models = self.runtime.models
        if isinstance(models, PendingKeyModels):
            models.require()  # auth_required (-32000) until a key is set
        state = self._session(session_id)
        if state.busy:
            raise invalid_params("a prompt is already in flight")
        command = prompt_command(prompt)
        if command is not None:
            return await self._command(state, *command)
        admitted = admit_prompt(prompt, images=self.images_advertised)
        try:
            message = admitted if isinstance(admitted, dict) else await state.agent.prompt_message(admitted)
        except ImagePromptError as exc:
            raise invalid_params(str(exc)) from exc
        except StoreError as exc:
            log.warning("session %s: storing the prompt's images failed: %s", session_id, exc)
            raise RequestError(-32603, "Internal error: unable to persist the prompt image batch") from exc
        if self._closing:
            raise RequestError(-32603, "Internal error: the server is shutting down")
        state.started = False
        state.cancel_requested = False
        task = asyncio.get_running_loop().create_task(
            state.agent.run_turn(message), name=f"turn {session_id}"
        )
        state.turn = task
        current = asyncio.current_task()
        if current is not None:
            self._prompts.add(current)
        try:
            try:
                await asyncio.wait([task])
                await state.agent.until_idle()  # as the original: the prompt ends when the agent is idle
            except asyncio.CancelledError:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                raise
            await state.outbox.flush()
            return self._settle(state, task)
        finally:
            state.turn = None
            if current is not None:
                self._prompts.discard(current)

    async def _command(self, state: AcpSession, name: str, args: str) -> PromptResponse:
        """A prompt that is a slash command: run it instead of a turn (cancellable at once)."""
        if self._closing:
            raise RequestError(-32603, "Internal error: the server is shutting down")
        state.started, state.cancel_requested = True, False
        task = asyncio.get_running_loop().create_task(run_command(state.agent, name, args))
        state.turn = task
        try:
            try:
                await asyncio.wait([task])
            except asyncio.CancelledError:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                raise
            return await settle_command(task, state.outbox.put, state.outbox.flush)
        finally:
            state.turn = None

    def _settle(self, state: AcpSession, task: asyncio.Task[TurnResult]) -> PromptResponse:
        if task.cancelled():
            log.info("session %s: turn cancelled", state.id)
            return PromptResponse(stop_reason="cancelled")
        exc = task.exception()
        if exc is not None:
            log.error("session %s: turn raised", state.id, exc_info=exc)
            if state.cancel_requested:
                return PromptResponse(stop_reason="cancelled")
            raise turn_failed(f"{type(exc).__name__}: {exc}")
        result = task.result()
        kind = result.reason.get("kind")
        log.info("session %s: turn %d ended %s", state.id, result.turn, kind)
        if state.cancel_requested or kind in ("aborted", "interrupted"):
            return PromptResponse(stop_reason="cancelled")
        if kind == "error":
            failure = result.failure
            raise turn_failed(failure["message"] if failure else "the turn ended with an error")
        if kind == "max-tokens" and self.runtime.profile == "full":
            return PromptResponse(stop_reason="max_tokens")
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        state = self._sessions.get(session_id)
        if state is None:
            log.info("session/cancel for unknown session %s ignored", session_id)
            return
        log.info("session/cancel %s", session_id)
        state.cancel()

    # -- teardown ---------------------------------------------------------------------

    async def shutdown(self) -> None:
        """Refuse new work, cancel every turn (logs end ``aborted``), settle prompts, drain output."""
        self._closing = True
        turns = []
        for state in self._sessions.values():
            if state.turn is not None:
                turns.append(state.turn)
                state.cancel_requested = True
                state.turn.cancel()
        if turns:
            await asyncio.gather(*turns, return_exceptions=True)
        prompts = [t for t in self._prompts if t is not asyncio.current_task()]
        if prompts:
            await asyncio.wait(prompts, timeout=10)
        await self._close_agents()
        for state in self._sessions.values():
            await state.outbox.aclose()

    async def _close_agents(self) -> None:
        """Let background subagents finish for up to ``runtime.background_wait`` s, stop the
        rest (``aborted {disposed}``) and close every session's agent, before the store closes."""
        agents = [state.agent for state in self._sessions.values()]
        within = self.runtime.background_wait
        running = running_children(agents)
        if running:
            log.info("waiting up to %g s for %d background subagent(s)", within, running)
            await settle_background(agents, within)
        left = running_children(agents)
        if left:
            log.warning("stopping %d background subagent(s) still running at shutdown", left)
        await stop_background(agents)
