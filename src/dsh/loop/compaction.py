"""Compaction: the one transaction every trigger runs (pressure, overflow, manual).

``compaction/start`` (the lock) → the summary call → ``compaction/summary`` and, right
after it, the checkpoint ``user/message`` that replaces the span → ``compaction/end``. The
summary request is the conversation's own head (the last logged system prompt and tool
schemas) and the replaced messages exactly as the conversation sent them, then the
instruction, so it reuses the provider's cached prefix. A failed, empty, truncated or
non-shrinking summary changes nothing: the end carries the ``error``, and the caller gets
:class:`Compacted` saying why. The originals stay in the log; only the surface changes.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass

from dsh.events import BlockAssembler
from dsh.events.chunks import Chunk, Usage
from dsh.events.compaction import (
    CompactionSummaryData,
    checkpoint_message,
    end_data,
    instruction_message,
    start_data,
)
from dsh.events.history import Surface
from dsh.events.messages import Block, Message
from dsh.events.payloads import RequestHeader, request_header_of
from dsh.events.spans import head_span
from dsh.events.tokens import header_price, last_header, message_price, pressure
from dsh.events.vocabulary import (
    COMPACTION_END,
    COMPACTION_START,
    COMPACTION_SUMMARY,
    REQUEST_CONTEXT,
    REQUEST_HEADER,
)
from dsh.loop.compaction_policy import CompactionPolicy
from dsh.loop.setup import offer_recall
from dsh.loop.state import TurnState
from dsh.model import ModelRequest
from dsh.model.capabilities import known_context_window
from dsh.session import HistoryProjector

log = logging.getLogger("dsh.compaction")


@dataclass(frozen=True, slots=True)
class Compacted:
    """What one compaction did: ``error`` is ``None`` when the span was replaced."""

    compaction_id: str | None
    replaced: int
    tokens_before: int
    tokens_after: int
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.replaced > 0


NOTHING = Compacted(None, 0, 0, 0, "nothing to compact yet")

_FRAMING = message_price(checkpoint_message("", []))
"""The price of a checkpoint with an empty summary: a span this cheap cannot shrink."""


class _Refused(Exception):
    """The summary cannot replace the span (the reason is the message)."""


class Compactor:
    """One agent's compactions, over the history fold its steps use."""

    def __init__(self, agent: TurnState, history: HistoryProjector) -> None:
        self._agent = agent
        self._history = history
        self._priced: tuple[Surface | None, int, list[int], int] = (None, -1, [], 0)
        """(surface, its generation, its nodes' prices, their sum): extended as it grows."""
        self._header = last_header(agent.session.of_type(REQUEST_HEADER))
        self._header_price = header_price(self._header)
        self._header_seen = len(agent.session.events)
        self._context = next(
            (e.data for e in reversed(agent.session.of_type(REQUEST_CONTEXT)) if isinstance(e.data, dict)),
            None,
        )
        """The last logged ``request/context`` (found once; kept as this agent logs more)."""

    @property
    def policy(self) -> CompactionPolicy:
        return self._agent.config.compaction

    def window(self) -> int | None:
        """The context window: the policy's, else the last one the session logged (a
        ``--context-window`` given before, the original's ``request/context``), else the
        model's known one."""
        if self.policy.context_window is not None:
            return self.policy.context_window
        size = self._context.get("contextWindow") if self._context is not None else None
        if type(size) is int and size > 0:
            return size
        return known_context_window(self._agent.config.model)

    def log_window(self) -> None:
        """``request/context`` beside a request header when a configured window (the policy's)
        changed, so a resumed session keeps it; a model's known window is not logged."""
        window = self.policy.context_window
        if window is None:
            return
        data = {
            "provider": self._agent.model.provider,
            "model": self._agent.config.model,
            "contextWindow": window,
        }
        if data != self._context:
            self._agent.append(REQUEST_CONTEXT, data)
            self._context = data

    def _surface(self) -> tuple[Surface, list[int], int]:
        """The surface, its nodes' prices and their sum: priced once per node (a replace
        prices the new surface again), so a step's check does not grow with the session."""
        surface = self._history.fold(self._agent.session.events)
        known, generation, prices, total = self._priced
        if known is not surface or generation != surface.generation or len(prices) > len(surface.seqs):
            prices, total = [], 0
        for message in surface.messages[len(prices) :]:
            price = message_price(message)
            prices.append(price)
            total += price
        self._priced = (surface, surface.generation, prices, total)
        return surface, prices, total

    def _head(self) -> RequestHeader | None:
        """The last logged request header (read from the events appended since last asked)."""
        events = self._agent.session.events
        for i in range(self._header_seen, len(events)):
            if events[i].type == REQUEST_HEADER:
                self._header = request_header_of(events[i])
                self._header_price = header_price(self._header)
        self._header_seen = len(events)
        return self._header

    def pressure(self) -> int:
        """What the next request will weigh (``dsh.events.tokens.pressure``)."""
        surface, prices, total = self._surface()
        self._head()
        return pressure(self._agent.session.events, surface, prices, self._header_price + total)

    async def if_needed(self, turn: int) -> Compacted | None:
        """Before a step: compact when the pressure reached the threshold."""
        window = self.window()
        if not self.policy.auto or window is None or self.pressure() < self.policy.threshold(window):
            return None
        done = await self.compact(turn, retain=self.policy.retain(window))
        if done.error is not None and done is not NOTHING:
            log.warning("session %s: compaction failed: %s", self._agent.id, done.error)
        return done

    async def compact(self, turn: int | None, *, retain: int = 0, command_id: str | None = None) -> Compacted:
        """Replace the surface's head, keeping ``retain`` tokens of the newest messages (0:
        all but the newest unit); ``turn``: the open turn, ``None`` between turns."""
        surface, prices, _ = self._surface()
        count = head_span(surface.messages, prices, retain)
        price = sum(prices[:count])
        if count == 0 or price <= _FRAMING:  # no checkpoint could be smaller: no call
            return NOTHING
        seqs = surface.seqs[:count]
        shadowed = [m for m in surface.messages[:count] if m is not None]
        header = self._head()
        compaction_id = str(uuid.uuid4())
        start = self._agent.append(COMPACTION_START, start_data(compaction_id, turn, command_id))
        try:
            raw, summary, usage = await self._summarize(header, shadowed)
            checkpoint = checkpoint_message(compaction_id, summary, command_id)
            after = message_price(checkpoint)
            if after >= price:
                raise _Refused(f"the summary ({after} tokens) is not smaller than what it replaces ({price})")
            if self._history.fold(self._agent.session.events).seqs[:count] != seqs:
                raise _Refused("the history changed while the summary was written")
        except (_Refused, asyncio.CancelledError) as exc:
            reason = "cancelled" if isinstance(exc, asyncio.CancelledError) else str(exc)
            self._agent.append(COMPACTION_END, end_data(compaction_id, turn, reason, command_id))
            if isinstance(exc, asyncio.CancelledError):
                raise  # the turn's closing path checkpoints
            await self._agent.checkpoint()
            return Compacted(compaction_id, 0, price, price, reason)
        data: CompactionSummaryData = {
            "compactionId": compaction_id,
            "summary": summary,
            "rawOutput": raw,
            "llmStreamCall": True,
            "shadowedRange": {"start": seqs[0], "end": seqs[-1]},
            "shadowedSeqs": seqs,
            "shadowedTokenCount": price,
            "provider": self._agent.model.provider,
            "model": self._agent.config.model,
            "maxTokens": self.policy.max_tokens,
        }
        if command_id is not None:
            data["sourceCommandId"] = command_id
        if usage is not None:
            data["usage"] = usage
        summary_event = self._agent.append(COMPACTION_SUMMARY, data)
        self._agent.replace_surface(seqs[0], seqs[-1], checkpoint, (start.seq, summary_event.seq, *seqs))
        offer_recall(self._agent.tools)  # from the next request on: the originals can be recalled
        self._agent.append(COMPACTION_END, end_data(compaction_id, turn, None, command_id))
        await self._agent.checkpoint()
        return Compacted(compaction_id, count, price, after)

    async def _summarize(
        self, header: RequestHeader | None, shadowed: list[Message]
    ) -> tuple[list[Block], list[Block], Usage | None]:
        """The summary call: the conversation's head and the replaced messages, then the
        instruction. Returns the whole output, its text blocks (masked) and the usage."""
        tools = header.get("tools") if header is not None else None
        request = ModelRequest(
            session_id=self._agent.session.id,
            model=self._agent.config.model,
            messages=[*shadowed, instruction_message()],
            system=header.get("system") if header is not None else self._agent.config.system,
            tools=tools if isinstance(tools, list) else (),
            max_tokens=self.policy.max_tokens,
            delegation=self._agent.delegation,
            parent_session=self._agent.session.header.subagent_parent,
            extra={"purpose": "compaction"},
        )
        await self._agent.checkpoint()
        assembler = BlockAssembler()
        stream = self._agent.model.stream(request)
        try:
            async for chunk in stream:
                assembler.feed(chunk)
                if _is_finish(chunk):
                    break
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise _Refused(f"the summary call failed: {exc}") from exc
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        done = assembler.result()
        if done.failure is not None:
            raise _Refused(f"the summary call failed: {done.failure['code']}: {done.failure['message']}")
        if done.finish_kind == "max-tokens":
            raise _Refused(f"the summary was cut off at {self.policy.max_tokens} tokens (MAX_TOKENS)")
        raw = self._agent.redaction.blocks(list(done.content))
        summary = [b for b in raw if b.get("type") == "text"]
        if not any(str(b.get("text", "")).strip() for b in summary):
            raise _Refused("the summary was empty")
        return raw, summary, done.usage


def _is_finish(chunk: Chunk) -> bool:
    return chunk.get("type") == "finish"
