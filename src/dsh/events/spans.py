"""Which head of the surface a compaction may replace (reference §1.6).

A span always starts at the surface's head and never splits a tool call from its result:
a cut is *balanced* when every tool call before it has its result before it too.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh.errors import InvalidEventError
from dsh.events.messages import Message


def _calls_opened(message: Message | None) -> int:
    """+calls for an assistant message, -1 for a tool result, else 0."""
    if message is None:
        return 0
    blocks = message.get("content", [])
    if message.get("role") == "assistant":
        return sum(1 for b in blocks if b.get("type") == "tool-call")
    return -sum(1 for b in blocks if b.get("type") == "tool-result")


def balanced_cuts(messages: Sequence[Message | None]) -> list[bool]:
    """For each cut ``0..len``: whether no tool call is open across it."""
    out, open_calls = [True], 0
    for message in messages:
        open_calls += _calls_opened(message)
        if open_calls < 0:
            raise InvalidEventError("the history has a tool result with no open call")
        out.append(open_calls == 0)
    return out


def head_span(messages: Sequence[Message | None], prices: Sequence[int], retain_tokens: int) -> int:
    """How many head nodes to replace (0: none) keeping at least ``retain_tokens`` of the
    newest nodes, and always the newest one, with the cut balanced."""
    kept, keep_from = 0, len(prices)
    while keep_from > 0:
        keep_from -= 1
        kept += prices[keep_from]
        if kept >= retain_tokens:
            break
    cuts = balanced_cuts(messages)
    while keep_from > 0 and not cuts[keep_from]:
        keep_from -= 1
    return keep_from
