"""The repeat-tool reminder's chain rebuilt from a log (a stepwise driver's fresh agent)."""

from __future__ import annotations

from typing import Any

from dsh.events import Event
from dsh.events.messages import text_block, tool_result_message, user_message
from dsh.events.payloads import tool_call, tool_result_data
from dsh.loop.repeat_reminder import RepeatReminder


def _log(*entries: tuple[str, Any]) -> list[Event]:
    return [Event(etype, seq, 0, data) for seq, (etype, data) in enumerate(entries)]


def _call(call_id: str, command: str) -> list[tuple[str, Any]]:
    arguments = f'{{"command": "{command}"}}'
    result = tool_result_message(call_id, [text_block("ok")], is_error=False)
    return [
        ("tool/call", tool_call(1, 1, call_id, "bash", arguments)),
        ("tool/result", tool_result_data(1, 1, result)),
    ]


def test_the_chain_continues_from_the_log_and_a_prompt_drops_it() -> None:
    reminder = RepeatReminder()
    reminder.replay(_log(("user/message", user_message("go")), *_call("c1", "ls"), *_call("c2", "ls")))
    notice = reminder.observe("bash", '{"command": "ls"}')  # the third identical call
    assert notice is not None and notice["source"]["summary"] == "bash \u00d7 3"

    reminder.replay(_log(*_call("c1", "ls"), *_call("c2", "ls"), ("user/message", user_message("again"))))
    assert reminder.observe("bash", '{"command": "ls"}') is None  # counted 1: the prompt dropped it


def test_a_call_without_a_result_is_not_counted() -> None:
    reminder = RepeatReminder()
    started = ("tool/call", tool_call(1, 1, "c3", "bash", '{"command": "ls"}'))
    reminder.replay(_log(*_call("c1", "ls"), started))
    assert reminder.observe("bash", '{"command": "ls"}') is None  # 2 in a row, not 3
