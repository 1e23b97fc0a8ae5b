"""What a request weighs in tokens: the original's heuristic estimator and the pressure meter.

The estimator (reference §1.11) prices text at a quarter token per UTF-16 unit, rounded up,
plus 4 per block and 4 per message; the request's head (system prompt, tool schemas) is
priced the same way. :func:`pressure` is what the next request will weigh: the last call's
reported usage (input, cached input and output) plus the price of what the surface gained
since, or — with no usage, a changed head, or a compaction since — the heuristic total.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from dsh import jsonx
from dsh.events.envelope import Event
from dsh.events.history import Surface
from dsh.events.messages import Block, Message
from dsh.events.payloads import RequestHeader, request_header_of, usage_of
from dsh.events.vocabulary import ASSISTANT_MESSAGE, REQUEST_HEADER

_REPORTED = ("inputTokens", "cacheReadTokens", "cacheWriteTokens", "outputTokens")
"""A call's reported tokens that the next request weighs again (reasoning is in the output)."""


def _units(text: str) -> int:
    """A quarter token per UTF-16 unit, rounded up (ASCII text has one unit per character:
    not encoded, as a long session's pressure check prices every message on the surface)."""
    units = len(text) if text.isascii() else len(text.encode("utf-16-le")) >> 1
    return (units + 3) >> 2


def text_tokens(text: str) -> int:
    """The estimated tokens of ``text``: a quarter token per UTF-16 unit, rounded up."""
    return _units(text)


def block_price(block: Block) -> int:
    kind = block.get("type")
    if kind == "text" or kind == "reasoning":
        text = block.get("text", "")
        return _units(text if type(text) is str else str(text)) + 4
    if kind == "tool-call":
        return _units(str(block.get("name", ""))) + _units(str(block.get("arguments", ""))) + 4
    if kind == "tool-result":
        return sum(block_price(b) for b in block.get("content", [])) + 4
    return 4 + _units(jsonx.dumps_sorted(block))


def message_price(message: Message | None) -> int:
    """A message's price (a node that shows nothing: 0)."""
    if message is None:
        return 0
    price = 4
    for block in message.get("content", []):
        price += block_price(block)
    return price


def header_price(header: RequestHeader | None) -> int:
    """The request head's price: the system prompt and the tool schemas."""
    if header is None:
        return 0
    system, tools = header.get("system"), header.get("tools")
    price = _units(system) + 4 if isinstance(system, str) and system else 0
    if tools:
        price += _units(jsonx.dumps_sorted(tools)) + 4
    return price


def last_header(events: Sequence[Event]) -> RequestHeader | None:
    for event in reversed(events):
        if event.type == REQUEST_HEADER:
            return request_header_of(event)
    return None


def pressure(events: Sequence[Event], surface: Surface, prices: Sequence[int], total: int) -> int:
    """The tokens the next request (with its answer) will weigh: ``prices`` are the surface
    nodes' prices in surface order, ``total`` the heuristic whole (the head's price,
    :func:`header_price`, and the nodes'). Looks back only to the last call, and at the
    surface's nodes after it."""
    for event in reversed(events):
        if event.type == REQUEST_HEADER or isinstance(event.surface_op, dict):
            return total  # the head or the surface was rebuilt since the last call: estimate
        if event.type == ASSISTANT_MESSAGE:
            usage = usage_of(event)
            if usage is None:
                return total
            counts = cast(Mapping[str, object], usage)
            reported = sum(n for n in (counts.get(k) for k in _REPORTED) if type(n) is int)
            after, i = 0, len(prices)  # no replace since the call: later nodes have later seqs
            while i > 0 and surface.seqs[i - 1] > event.seq:
                i -= 1
                after += prices[i]
            return max(reported, total - after) + after
    return total
