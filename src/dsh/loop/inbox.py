"""The inbox: messages other sessions queue for an agent's next step or next turn, logged.

Two FIFO lists, as in the original: ``next-step`` (claimed whole at the next step of a
running turn, or at the start of the next turn) and ``next-turn`` (one message opens each
turn). Every change is an ``agent/inbox/spliced`` event in the agent's own log — an insert
``{target, start, inserted:[message]}`` when a message is queued, a claim ``{target, start:
0, removedCount, inserted: []}`` when a step takes it — so a message queued and never
claimed survives a crash: :func:`pending_from_log` rebuilds the lists from the log.

A user prompt handed to ``Agent.run_turn`` does not pass through here (it is the turn's
own message; dsh logs it as the turn's first ``user/message`` only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, cast

from dsh.events import Event
from dsh.events.messages import Message, delivery_sender
from dsh.events.payloads import inbox_spliced
from dsh.events.vocabulary import INBOX_SPLICED

Target = Literal["next-step", "next-turn"]
TARGETS: tuple[Target, ...] = ("next-step", "next-turn")

Append = Callable[[str, Any], Event]


def pending_from_log(events: Sequence[Event]) -> dict[Target, list[Message]]:
    """The messages a log queued and never claimed, per target, in queue order."""
    lists: dict[Target, list[Message]] = {"next-step": [], "next-turn": []}
    for event in events:
        if event.type != INBOX_SPLICED or not isinstance(event.data, dict):
            continue
        target = event.data.get("target")
        if target not in TARGETS:
            continue
        queue = lists[target]
        start = event.data.get("start", 0)
        start = start if type(start) is int and 0 <= start <= len(queue) else len(queue)
        removed = event.data.get("removedCount", 0)
        if type(removed) is int and removed > 0:
            del queue[start : start + removed]
        inserted = event.data.get("inserted", [])
        if isinstance(inserted, list):
            queue[start:start] = [cast(Message, m) for m in inserted if isinstance(m, dict)]
    return lists


def claimed_turn_message(events: Sequence[Event], from_seq: int) -> Message | None:
    """The ``next-turn`` message the first claim after ``from_seq`` took (``None``: no such
    claim): the message a turn run piece by piece (``dsh.loop.stepwise``) opened with."""
    for event in events[from_seq:]:
        data = event.data if event.type == INBOX_SPLICED and isinstance(event.data, dict) else None
        if data is not None and data.get("target") == "next-turn" and data.get("removedCount"):
            queued = pending_from_log(events[: event.seq])["next-turn"]
            return queued[0] if queued else None
    return None


def senders(events: Sequence[Event]) -> list[str]:
    """Who queued messages in this log's inbox from outside its own steps (other sessions,
    its background jobs: ``dsh.events.messages.delivery_sender``), one entry per message, in order."""
    out: list[str] = []
    for event in events:
        if event.type == INBOX_SPLICED and isinstance(event.data, dict):
            for message in event.data.get("inserted", ()):
                sender = delivery_sender(message)
                if sender is not None:
                    out.append(sender)
    return out


class Inbox:
    """An agent's two queues; every insert and claim is appended to its log with ``append``."""

    __slots__ = ("_append", "_lists", "listeners")

    def __init__(self, append: Append, pending: dict[Target, list[Message]] | None = None) -> None:
        self._append = append
        self._lists: dict[Target, list[Message]] = {t: list((pending or {}).get(t, [])) for t in TARGETS}
        self.listeners: list[Callable[[], None]] = []
        """Called after every insert (e.g. a replay waiting for a recorded message)."""

    def put(self, message: Message, target: Target) -> None:
        """Queue ``message`` at the end of ``target`` and log the insert."""
        queue = self._lists[target]
        self._append(INBOX_SPLICED, inbox_spliced(target, len(queue), [message]))
        queue.append(message)
        for listener in list(self.listeners):
            listener()

    def claim_step(self) -> list[Message]:
        """Take every ``next-step`` message (logged when there is one)."""
        return self._claim("next-step", len(self._lists["next-step"]))

    def claim_turn(self) -> Message | None:
        """Take the first ``next-turn`` message, if any."""
        claimed = self._claim("next-turn", min(1, len(self._lists["next-turn"])))
        return claimed[0] if claimed else None

    def _claim(self, target: Target, count: int) -> list[Message]:
        if count == 0:
            return []
        queue = self._lists[target]
        taken = queue[:count]
        del queue[:count]
        self._append(INBOX_SPLICED, inbox_spliced(target, 0, [], removed_count=count))
        return taken

    def pending(self, target: Target) -> list[Message]:
        """A copy of what ``target`` holds."""
        return list(self._lists[target])

    @property
    def has_step_work(self) -> bool:
        return bool(self._lists["next-step"])

    @property
    def has_work(self) -> bool:
        return bool(self._lists["next-step"] or self._lists["next-turn"])
