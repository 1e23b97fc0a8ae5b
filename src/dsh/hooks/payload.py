"""What a hook command reads on stdin: the event payload in each dialect's field names.

Claude Code (compact JSON + ``\\n``)::

    {session_id, transcript_path: "", cwd, hook_event_name}
      + prompt                                   UserPromptSubmit
      + tool_name, tool_input, tool_use_id        PreToolUse
      + tool_name, tool_input, tool_use_id, tool_response   PostToolUse
      + stop_hook_active: false                   Stop

Codex (compact JSON, no newline)::

    {session_id, transcript_path: null, cwd, hook_event_name, model, permission_mode: "default"}
      + turn_id (the turn number as a string) and the event's fields as above, except
        tool_input = {command: <the call's "command" argument or "">} and, at Stop,
        stop_hook_active: false, last_assistant_message: null
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsh import jsonx
from dsh.hooks.config import Dialect


@dataclass(frozen=True, slots=True)
class Subject:
    """The session a hook fires in."""

    session_id: str
    cwd: str
    model: str = ""


def _codex_input(tool_input: object) -> dict[str, Any]:
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    return {"command": command if isinstance(command, str) else ""}


def payload(dialect: Dialect, event: str, subject: Subject, turn: int, fields: dict[str, Any]) -> bytes:
    """The stdin bytes for ``event``; ``fields`` are the event's own (``prompt``, ``tool_*``)."""
    body: dict[str, Any] = {
        "session_id": subject.session_id,
        "transcript_path": "" if dialect == "claude-code" else None,
        "cwd": subject.cwd,
        "hook_event_name": event,
    }
    own = dict(fields)
    if dialect == "codex":
        body["model"] = subject.model
        body["permission_mode"] = "default"
        body["turn_id"] = str(turn)
        if "tool_input" in own:
            own["tool_input"] = _codex_input(own["tool_input"])
    if event == "Stop":
        own["stop_hook_active"] = False
        if dialect == "codex":
            own["last_assistant_message"] = None
    body.update(own)
    data = jsonx.dumps(body)
    return data + b"\n" if dialect == "claude-code" else data
