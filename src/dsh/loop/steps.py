"""The steps of an agent's turns: claims, the runtime context, model calls with retries, tools, hooks.

:class:`Steps` is the part of an :class:`~dsh.loop.agent.Agent` that runs inside one turn:
each step claims what the inbox holds, shows the runtime-context snapshot when it changed,
logs the request header when it changed, settles one model call (retrying retryable
failures), and runs the tools the model called. The agent owns one and closes the turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from dsh.context import WorkspacePass
from dsh.context.titles import fallback_event, has_title
from dsh.errors import ModelError
from dsh.events import Assembled
from dsh.events.chunks import Chunk
from dsh.events.messages import Message, joined_text
from dsh.events.payloads import (
    RequestHeader,
    TurnEndReason,
    header_body,
    request_header,
    step_mark,
)
from dsh.events.tokens import last_header
from dsh.events.vocabulary import REQUEST_HEADER, SESSION_TITLE, STEP_END, STEP_START, USER_MESSAGE
from dsh.hooks import SessionHooks
from dsh.loop import plan
from dsh.loop.compaction import Compactor
from dsh.loop.compaction_policy import OVERFLOW_CODES
from dsh.loop.images import RequestImages
from dsh.loop.model_call import settle_model_call
from dsh.loop.runtime_context import context_sections, last_snapshot_text, snapshot_message
from dsh.loop.scheduler import ToolScheduler
from dsh.loop.state import TurnState
from dsh.model import DeliveryOrder, ModelRequest, retry_delay
from dsh.session import HistoryProjector


class Steps:
    """One agent's step machinery (its history projection, request header and snapshot state)."""

    def __init__(self, agent: TurnState, scheduler: ToolScheduler, order: DeliveryOrder | None) -> None:
        self._agent = agent
        self.scheduler = scheduler
        """The agent's tool scheduler (one call at a time for a stepwise driver)."""
        self._order = order
        session = agent.session
        self._history = HistoryProjector()
        self.compactor = Compactor(agent, self._history)
        """The agent's compactions, over this history fold."""
        self._last_header = last_header(session.of_type(REQUEST_HEADER))
        self._header: RequestHeader | None = None
        self._header_key: tuple[Any, ...] | None = None
        self._requests = 0
        self._images = RequestImages(agent.store, agent.config.takes_images())
        self._context_text = last_snapshot_text(session.of_type(USER_MESSAGE))  # the snapshot on the surface
        workspace = agent.config.workspace
        self._workspace = WorkspacePass(workspace, agent.cwd) if workspace is not None else None
        self._titled = not agent.config.titles or has_title(session.of_type(SESSION_TITLE, own=True))
        self.started = len(session.of_type(STEP_START, own=True))
        """Steps started in the session's own log so far."""

    def _on_chunk(self, chunk: Chunk) -> None:
        feed = self._agent.feed
        if feed.chunk_listeners:  # none (a library replay): nothing to hand each of its chunks to
            feed.chunk(self._agent.session.id, chunk)

    async def _in_recorded_order(self, pending: list[Message], ending: int | None = None) -> None:
        """Under a model that knows a recorded order (a replay), wait for the messages from
        other sessions the recording had here (``ending``: before ending that turn)."""
        if self._order is not None:
            history = self._history.messages
            events = self._agent.session.events

            def available() -> list[Message]:
                return [*history(events), *pending, *self._agent.inbox.pending("next-step")]

            await self._order.before_claim(self._agent.id, available, ending=ending)

    async def _claim(self, pending: list[Message], step: int) -> list[Message]:
        """What the step shows the model: ``pending`` and every ``next-step`` message (before
        the turn's own message at step 1, after the tools' context later)."""
        await self._in_recorded_order(pending)
        claimed = self._agent.inbox.claim_step()
        batch = [*claimed, *pending] if step == 1 else [*pending, *claimed]
        if self.scheduler.reminder is not None:
            self.scheduler.reminder.claimed(batch)
        return batch

    async def run(self, turn: int, messages: list[Message], *, prompted: bool = True) -> TurnEndReason:
        """The steps of one turn, with the hooks of :attr:`AgentConfig.hooks`, as
        :class:`~dsh.loop.plan.TurnPlan` decides them (this method only carries its actions out).

        ``UserPromptSubmit`` fires before the first step (a block ends the turn ``blocked``
        with no step; context follows the prompt), tool hooks fire in the scheduler (their
        context opens the next step), and ``Stop`` fires after the last step's ``step/end``
        (a block continues the turn with its reason as the next step's message).
        """
        hooks = await self.session_hooks()
        pending: list[Message] = list(messages)
        additions: list[Message] = []  # after the runtime context at step 1 (the original's order)
        blocked = False
        if hooks is not None and prompted:
            submitted = await hooks.user_prompt_submit(turn, joined_text(messages[0].get("content", [])))
            blocked = submitted.blocked
            additions = list(submitted.context_messages)
        turn_plan = plan.TurnPlan(turn, self._agent.config.max_steps)
        action = turn_plan.start(blocked=blocked)
        while True:
            if isinstance(action, plan.CallModel):
                pending = await self._pre_step(pending, additions, turn, action.step)
                additions = []
                action, pending = await self._step(turn_plan, turn, action.step, pending, hooks)
            elif isinstance(action, plan.AskStop):
                if not pending and hooks is not None:
                    stopping = await hooks.stop(turn)
                    if stopping.blocked:
                        pending = stopping.steer_messages()
                if not pending:
                    await self._in_recorded_order(pending, ending=turn)
                action = turn_plan.stopped(waiting=bool(pending) or self._agent.inbox.has_step_work)
            elif isinstance(action, plan.EndTurn):
                if action.kind == "error":
                    raise ModelError(action.code or "UNKNOWN", action.message or "")
                return {"kind": action.kind}
            else:  # RunCalls is carried out inside its step (``_step``), before its ``step/end``
                raise AssertionError(f"unexpected {action!r}")

    async def _step(
        self,
        turn_plan: plan.TurnPlan,
        turn: int,
        step: int,
        pending: list[Message],
        hooks: SessionHooks | None,
    ) -> tuple[plan.Action, list[Message]]:
        """Step ``step`` between its ``step/start`` and ``step/end``: ``pending`` entered, the
        model call settled, and its calls run when the plan says so; the plan's next action and
        what the calls' hooks give the next step."""
        self._agent.append(STEP_START, step_mark(turn, step))
        self.started += 1
        try:
            self._enter(pending)
            assembled = await self.model_step(turn, step)
            cut_off = assembled.finish_kind == "max-tokens"
            action = turn_plan.settled(called=bool(assembled.tool_calls), cut_off=cut_off)
            if not isinstance(action, plan.RunCalls):
                return action, []
            ran = await self.scheduler.run(assembled.tool_calls, turn=turn, step=step, hooks=hooks)
            return turn_plan.ran(), list(ran.next_step)
        finally:
            self._agent.append(STEP_END, step_mark(turn, step))

    async def _pre_step(
        self, pending: list[Message], additions: list[Message], turn: int, step: int
    ) -> list[Message]:
        """What a step shows the model before its call: the claim, then the workspace
        instructions, the runtime-context snapshot, the skill catalog and ``additions``;
        between the claim and the step's start, a compaction when the pressure calls for one."""
        pending = await self._claim(pending, step)
        await self.compactor.if_needed(turn)
        session = self._agent.session
        instructions = self._workspace.instructions(session) if self._workspace is not None else None
        if instructions is not None:
            pending.append(instructions)
        snapshot = self._runtime_snapshot()
        if snapshot is not None:
            pending.append(snapshot)
        catalog = self._workspace.catalog(session) if self._workspace is not None else None
        if catalog is not None:
            pending.append(catalog)
        return [*pending, *additions]

    def _enter(self, pending: list[Message]) -> None:
        """Log the step's entering messages, then the fallback title once the first prompt is in."""
        for m in pending:
            self._agent.append(USER_MESSAGE, m)
        self._fallback_title()

    async def open_step(
        self, turn: int, step: int, pending: list[Message], additions: Sequence[Message] = ()
    ) -> None:
        """One step's opening as :meth:`run` logs it: ``step/start`` and what the step shows the
        model (``pending`` first, ``additions`` — a ``UserPromptSubmit`` hook's context — last),
        for a driver that runs the steps one at a time (``stepwise``)."""
        pending = await self._pre_step(pending, list(additions), turn, step)
        self._agent.append(STEP_START, step_mark(turn, step))
        self.started += 1
        self._enter(pending)

    def _fallback_title(self) -> None:
        """The original's fallback ``session/title`` once the first prompt is in the log."""
        if self._titled:
            return
        title = fallback_event(self._agent.session.of_type(SESSION_TITLE, USER_MESSAGE, own=True))
        if title is not None:
            self._agent.append(SESSION_TITLE, title)
            self._titled = True

    def _runtime_snapshot(self) -> Message | None:
        """The runtime-context snapshot this pre-step appends, if its text changed
        (``dsh.loop.runtime_context``)."""
        sections = []
        if self._agent.config.runtime_context and self._agent.config.sandbox is not None:
            sections = context_sections(
                self._agent.config.sandbox,
                self._agent.cwd,
                self._agent.approvals.policy,
                delegated=self._agent.delegation is not None,
            )
        message = snapshot_message(sections, self._context_text)
        if message is not None:
            self._context_text = joined_text(message["content"])
        return message

    async def session_hooks(self) -> SessionHooks | None:
        """This session's hooks (its own id, cwd and log), or ``None`` when none are configured."""
        hook_set = self._agent.config.hooks
        if hook_set is None:
            return None
        return await hook_set.for_session(
            self._agent.session.id,
            self._agent.cwd,
            model=self._agent.config.model,
            append=self._agent.append,
            sandbox=self._agent.config.sandbox,
            redaction=self._agent.redaction,
        )

    def _request_header(self) -> RequestHeader:
        """The request header, rebuilt only when what it is made of changes.

        Building it copies every tool schema (``ToolRegistry.specs``), so the last one is
        kept and reused while the provider, the model settings, the system prompt, the
        registry and its tool names are the same (a registry's specs are fixed when a tool
        is registered).
        """
        cfg, tools = self._agent.config, self._agent.tools
        key = (self._agent.model.provider, cfg.model, cfg.max_tokens, cfg.system, tools, tuple(tools.names()))
        if self._header is not None and key == self._header_key:
            return self._header
        specs = self._agent.tools.specs()
        header = header_body(
            self._agent.model.provider, cfg.model, cfg.max_tokens, cfg.system or None, specs or None
        )
        self._header, self._header_key = header, key
        return header

    async def model_step(self, turn: int, step: int, *, resumed: bool = True) -> Assembled:
        """The step's model call, retried as :attr:`AgentConfig.retry` says (a context
        overflow compacts and asks again, :attr:`CompactionPolicy.max_overflow_retries`
        times), its settlement logged; the request header first when it changed (and at this
        agent's first request unless ``resumed=False``: a stepwise driver's agent lives for one step only)."""
        header = self._request_header()
        first = self._requests == 0 and (resumed or self._last_header is None)
        if first or (header is not self._last_header and header != self._last_header):
            if self._requests == 0:
                reason = "initial" if self._last_header is None else "resume"
            else:
                reason = "change"
            self._agent.append(REQUEST_HEADER, request_header(header, reason))
            self._last_header = header
        self.compactor.log_window()
        tools = header.get("tools")
        retries = overflows = 0
        while True:
            messages = self._history.messages(self._agent.session.events)
            request = ModelRequest(
                session_id=self._agent.session.id,
                model=self._agent.config.model,
                messages=messages,
                images=await self._images.for_messages(messages),
                system=header.get("system"),
                tools=tools if isinstance(tools, list) else (),
                max_tokens=self._agent.config.max_tokens,
                delegation=self._agent.delegation,
                parent_session=self._agent.session.header.subagent_parent,
            )
            self._agent.titling.on_request()
            await self._agent.checkpoint()
            self._requests += 1
            settlement = await settle_model_call(
                self._agent.model,
                request,
                turn=turn,
                step=step,
                append=self._agent.append,
                on_chunk=self._on_chunk,
                redaction=self._agent.redaction,
            )
            failure = settlement.failure
            if failure is None:
                return settlement.assembled
            if (
                failure["code"] in OVERFLOW_CODES
                and overflows < self._agent.config.compaction.max_overflow_retries
            ):
                overflows += 1  # compact everything but the newest unit and ask again, in this step
                if (await self.compactor.compact(turn)).ok:
                    continue
            if not self._agent.config.retry.should_retry(failure["code"], retries):
                raise ModelError(failure["code"], failure["message"])
            retries += 1
            await self._agent.checkpoint()
            await asyncio.sleep(retry_delay(failure["message"], self._agent.config.retry.delay(retries)))
