"""Token usage: the one home of what a model call used and how usage adds up.

Every call that reached the model is counted once, by the session that made it: an
``assistant/message`` (a step's answer), an ``assistant/attempt`` (a failed or retried
call: the provider may have billed it) and a ``compaction/summary`` that streamed its own
summary. A fork child counts only its own events (the inherited prefix is its parent's),
so a tree's total is the sum of each session's own usage. Usage is kept per route (the
model and provider the ``request/header`` in force named) so a price is applied per model;
the timeline fold (:mod:`dsh.session.timeline`) keeps each session's :class:`Ledger`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dsh.events import Event
from dsh.events.chunks import Usage
from dsh.events.compaction import summary_of
from dsh.events.payloads import usage_of
from dsh.events.vocabulary import ASSISTANT_ATTEMPT, ASSISTANT_MESSAGE, COMPACTION_SUMMARY

KINDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")
"""The token counts a settlement reports (disjoint: cached input is not in ``inputTokens``;
reasoning is part of the output)."""


@dataclass(frozen=True, slots=True)
class Tokens:
    """Token counts: input (uncached), output, cache read, cache write, reasoning."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    @classmethod
    def of(cls, usage: Mapping[str, object] | None) -> Tokens:
        """The integer counts of a logged usage object (anything else counts 0)."""
        if not usage:
            return cls()
        values = [usage.get(key) for key in KINDS]
        return cls(*[v if type(v) is int else 0 for v in values])

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.reasoning + other.reasoning,
        )

    @property
    def prompt(self) -> int:
        """Every input token, cached or not."""
        return self.input + self.cache_read + self.cache_write

    @property
    def empty(self) -> bool:
        return not (self.prompt or self.output or self.reasoning)

    def to_wire(self) -> dict[str, int]:
        """``{inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, reasoningTokens}``."""
        return dict(
            zip(
                KINDS,
                (self.input, self.output, self.cache_read, self.cache_write, self.reasoning),
                strict=True,
            )
        )

    def text(self) -> str:
        """``in 1,200 (cache read 800, write 0) · out 300 (reasoning 120)``."""
        cache = (
            f" (cache read {self.cache_read:,}, write {self.cache_write:,})"
            if self.cache_read or self.cache_write
            else ""
        )
        reasoning = f" (reasoning {self.reasoning:,})" if self.reasoning else ""
        return f"in {self.prompt:,}{cache} · out {self.output:,}{reasoning}"


def add_usage(totals: dict[str, int], usage: Usage | Mapping[str, object] | None) -> None:
    """Add ``usage``'s integer counts into ``totals`` (the plain-dict form results carry)."""
    for key, value in (usage or {}).items():
        if type(value) is int:
            totals[key] = totals.get(key, 0) + value


def is_model_call(event: Event) -> bool:
    """Whether ``event`` settles a model call: an answer, an attempt (with or without usage)
    or a compaction summary the model streamed (``llmStreamCall``) or reported usage for."""
    if event.type in (ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT):
        return True
    if event.type != COMPACTION_SUMMARY:
        return False
    summary = summary_of(event)
    return summary is not None and (
        summary.get("llmStreamCall") is True or isinstance(summary.get("usage"), dict)
    )


def call_usage(event: Event) -> Usage | None:
    """The usage the model call ``event`` settles reported (``None``: none reported)."""
    usage = usage_of(event)
    if usage is not None:
        return usage
    if event.type == COMPACTION_SUMMARY:
        summary = summary_of(event)
        found = summary.get("usage") if summary is not None else None
        return found if isinstance(found, dict) else None
    return None


Route = tuple[str | None, str | None]
"""``(model, provider)`` as the ``request/header`` in force recorded them."""


@dataclass(frozen=True, slots=True)
class CallUsage:
    """One model call: the seq and time (epoch ms) of the event that settled it, its route,
    its tokens. A call is priced at its time (prices change by date and time of day)."""

    seq: int
    route: Route
    tokens: Tokens
    time: int | None = None
    """``None``: not known (a ledger built by hand); priced at the time it is priced."""

    def to_wire(self) -> dict[str, object]:
        model, provider = self.route
        return {
            "seq": self.seq,
            "time": self.time,
            "model": model,
            "provider": provider,
            "tokens": self.tokens.to_wire(),
        }


@dataclass(slots=True)
class Ledger:
    """Every model call's usage, in log order, and the sums by route."""

    routes: dict[Route, Tokens] = field(default_factory=dict)
    calls: list[CallUsage] = field(default_factory=list)

    def add(
        self, route: Route, usage: Mapping[str, object] | None, seq: int = -1, time: int | None = None
    ) -> None:
        tokens = Tokens.of(usage)
        self.calls.append(CallUsage(seq, route, tokens, time))
        self.routes[route] = self.routes.get(route, Tokens()) + tokens

    def merge(self, other: Ledger) -> None:
        self.calls.extend(other.calls)
        for route, tokens in other.routes.items():
            self.routes[route] = self.routes.get(route, Tokens()) + tokens

    @property
    def tokens(self) -> Tokens:
        return sum(self.routes.values(), Tokens())

    def to_wire(self) -> list[dict[str, object]]:
        """Every call, in log order (what :meth:`from_wire` reads back)."""
        return [call.to_wire() for call in self.calls]

    @classmethod
    def from_wire(cls, calls: object) -> Ledger | None:
        """A ledger back from :meth:`to_wire` (``None``: not what it writes)."""
        if not isinstance(calls, list):
            return None
        ledger = cls()
        for call in calls:
            if not isinstance(call, dict) or type(call.get("seq")) is not int or "time" not in call:
                return None
            time = call["time"]
            if time is not None and type(time) is not int:
                return None
            model, provider, tokens = call.get("model"), call.get("provider"), call.get("tokens")
            if not (
                (model is None or type(model) is str)
                and (provider is None or type(provider) is str)
                and type(tokens) is dict
            ):
                return None
            ledger.add((model, provider), tokens, call["seq"], time)
        return ledger
