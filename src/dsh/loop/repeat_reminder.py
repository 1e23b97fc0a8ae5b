"""The original's repeat-tool reminder: a notice when the model repeats the exact same call.

One chain ``(key, count)`` per live agent, in memory (not logged): the key is the tool name
with the call's canonical arguments (parsed, compact JSON, object keys sorted recursively;
text that is not JSON counts as a JSON string). Every call counts, in model order when its
result commits (failed, denied and blocked ones too); a different key starts again at 1, and
a step whose claimed messages include a user's drops the chain. At the thresholds (3, 5, 8)
the next step opens with a notice: the gentle text at the first, the detailed one after.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import cast

from dsh.events import Event
from dsh.events.messages import Message, text_block
from dsh.events.payloads import tool_call_of, tool_result_of
from dsh.events.vocabulary import USER_MESSAGE
from dsh.ids import new_message_id
from dsh.jsonx import JSONDecodeError, dumps_sorted, loads

REMINDER_PLUGIN = "repeat-tool-reminder"
THRESHOLDS = (3, 5, 8)
PREVIEW_UNITS = 500

GENTLE = (
    "You are repeating the exact same tool call with identical arguments. Carefully analyze the "
    "previous result before calling again: if the task is not complete, try a different approach "
    "or different arguments instead of repeating the call."
)


def canonical_arguments(raw: str) -> str:
    """The arguments as compact JSON with sorted keys (unparseable text: as a JSON string)."""
    try:
        value = loads(raw)
    except JSONDecodeError:
        value = raw
    return dumps_sorted(value)


def _preview(text: str) -> str:
    units = text.encode("utf-16-le")
    if len(units) <= PREVIEW_UNITS * 2:
        return text
    head = units[: PREVIEW_UNITS * 2].decode("utf-16-le", errors="ignore")
    return f"{head}… (+{len(units) // 2 - PREVIEW_UNITS} more chars)"


def detailed(name: str, count: int, arguments: str) -> str:
    return (
        f"Repeated tool call detected:\n- tool: {name}\n- consecutive_calls: {count}\n"
        f"- arguments: {_preview(arguments)}\nThe repeated calls are not making progress. Do not "
        "call this tool with these exact arguments again. Inspect the latest result and choose a "
        "different action, different arguments, or finish the task if enough evidence has been "
        "gathered."
    )


def reminder_message(name: str, count: int, arguments: str, *, gentle: bool) -> Message:
    """The notice the next step opens with (source as the original's plugin logs it)."""
    return {
        "content": [text_block(GENTLE if gentle else detailed(name, count, arguments))],
        "source": {
            "kind": "plugin",
            "plugin": REMINDER_PLUGIN,
            "form": "notice",
            "summary": f"{name} \u00d7 {count}",
        },
        "role": "user",
        "id": new_message_id(),
    }


@dataclass(slots=True)
class RepeatReminder:
    """One agent's chain of identical calls (``thresholds``: sorted, each at least 2)."""

    thresholds: Sequence[int] = THRESHOLDS
    exclude: frozenset[str] = frozenset()
    _key: tuple[str, str] | None = field(default=None, init=False)
    _count: int = field(default=0, init=False)

    def observe(self, name: str, raw_arguments: str) -> Message | None:
        """Count one committed call; the notice to show at the next step, if any."""
        if name in self.exclude:
            return None
        arguments = canonical_arguments(raw_arguments)
        key = (name, arguments)
        self._count = self._count + 1 if key == self._key else 1
        self._key = key
        if self._count not in self.thresholds:
            return None
        gentle = self._count == min(self.thresholds)
        return reminder_message(name, self._count, arguments, gentle=gentle)

    def replay(self, events: Iterable[Event]) -> None:
        """Rebuild the chain from a session's log (a driver whose agent lives for one piece,
        ``dsh.loop.stepwise``): each settled call counted in log order, a logged user prompt
        dropping the chain, as the live agent would have counted them; notices not repeated."""
        self._key, self._count = None, 0
        started: dict[str, tuple[str, str]] = {}
        for event in events:
            if event.type == USER_MESSAGE:
                self.claimed([cast(Message, event.data)] if isinstance(event.data, dict) else [])
            elif (call := tool_call_of(event)) is not None:
                started[call["callId"]] = (call["name"], call["arguments"])
            elif (result := tool_result_of(event)) is not None and result["toolCallId"] in started:
                self.observe(*started.pop(result["toolCallId"]))

    def claimed(self, messages: Iterable[Message]) -> None:
        """A step's claimed batch: a user's message among them drops the chain."""
        if any(m.get("source", {}).get("kind") == "user" for m in messages):
            self._key, self._count = None, 0
