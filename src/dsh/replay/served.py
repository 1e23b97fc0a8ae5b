"""Recorded tool results a replay serves for tools that cannot re-run (``dsh.tools.served``)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from dsh.events import Event
from dsh.events.messages import Block
from dsh.events.payloads import tool_call_of, tool_result_of
from dsh.events.vocabulary import TOOL_CALL, TOOL_RESULT
from dsh.tools import ToolOutput


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One recorded tool call with its result: what the replay checks and serves."""

    name: str
    arguments: str
    turn: int
    step: int
    output: ToolOutput | None


def recorded_calls(own: Sequence[Event]) -> dict[str, RecordedCall]:
    """The session's own tool calls by call id, each with its recorded result (if logged)."""
    calls: dict[str, RecordedCall] = {}
    for event in own:
        etype = event.type
        if etype != TOOL_CALL and etype != TOOL_RESULT:  # most events: no payload read at all
            continue
        call = tool_call_of(event)
        if call is not None:
            recorded = RecordedCall(call["name"], call["arguments"], call["turn"], call["step"], None)
            calls[call["callId"]] = recorded
        elif event.type == TOOL_RESULT and (block := tool_result_of(event)) is not None:
            known = calls.get(block["toolCallId"])
            if known is None:
                continue
            error: Any = event.data.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            meta = event.data.get("meta")
            content = [cast(Block, dict(b)) for b in block["content"] if isinstance(b, dict)]
            output = ToolOutput(
                content,
                is_error=bool(block["isError"]),
                code=code if isinstance(code, str) and code else None,
                meta=meta if isinstance(meta, dict) else None,
            )
            calls[block["toolCallId"]] = dataclasses.replace(known, output=output)
    return calls


_SHOWING = re.compile(r"\n\n\(Showing (\d+) of \d+ paths[,.]")


def recorded_glob_cap(own: Sequence[Event]) -> int | None:
    """The ``glob`` result cap a recording ran with, when one of its results was over it
    (the shown count of the first ``(Showing K of N paths …)`` footer), so its replay runs
    ``glob`` with the same cap; ``None``: no over-cap result recorded."""
    for call in recorded_calls(own).values():
        if call.name != "glob" or call.output is None or call.output.is_error:
            continue
        text = "".join(str(b.get("text", "")) for b in call.output.content if b.get("type") == "text")
        found = _SHOWING.search(text)
        if found is not None:
            return int(found.group(1))
    return None
