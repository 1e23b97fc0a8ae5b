"""Who answers approvals in ``dsh run``: ``--approve`` / ``--deny``, a terminal prompt, or nobody.

- ``--approve`` allows every request once, ``--deny`` rejects every one (automation).
- Otherwise, when stdin is a terminal, :class:`TerminalApprover` asks on stderr — ``[o]nce``
  (allow this call), ``[s]ession`` (allow this and every later request of the same scope in
  this run: the same escalation mode, or the same tool for a hook's ask), ``[r]eject`` — and
  reads the answer from stdin (end of input or anything else rejects).
- Neither and no terminal: :class:`NoApprover` answers ``unavailable`` (the model reads the
  original's "no approval channel is available") and says once on stderr how to answer.
"""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from typing import Any, TextIO

from dsh.cli.common import write_json_line
from dsh.cli.tables import terminal_safe
from dsh.tools.approval import ApprovalOutcome, ApprovalRequest, Approver, FixedApprover

CHOICES = "[o]nce / [s]ession / [r]eject"


def _wrapped(text: str, width: int, indent: str) -> list[str]:
    """``text`` wrapped to ``width`` columns under ``indent``, line by line: never cut."""
    room = max(width - len(indent), 20)
    out: list[str] = []
    for line in text.split("\n") or [""]:
        safe = terminal_safe(line)
        pieces = textwrap.wrap(safe, room, break_long_words=True, break_on_hyphens=False) or [""]
        out.extend(indent + piece for piece in pieces)
    return out


def question(request: ApprovalRequest, width: int) -> str:
    """What the person is asked: for an escalation the whole command (or path), the directory,
    the permissions asked for and the justification, wrapped to ``width``; else the reason."""
    tool = terminal_safe(request.tool_name)
    details = request.escalation
    if details is None:
        reason = f": {terminal_safe(request.reason)}" if request.reason else ""
        return f"\ndsh: {tool} asks for approval{reason}\nallow? {CHOICES} "
    lines = _wrapped(f"dsh: {tool} asks for approval to run once with wider sandbox permissions", width, "")
    if details.command is not None:
        lines += ["  command:", *_wrapped(details.command, width, "    ")]
    if details.path is not None:
        lines += ["  path:", *_wrapped(details.path, width, "    ")]
    lines += ["  directory:", *_wrapped(details.cwd, width, "    ")]
    lines += ["  permissions:", *_wrapped(f"{details.permissions} (now {details.current})", width, "    ")]
    lines += ["  justification:", *_wrapped(details.justification, width, "    ")]
    return "\n" + "\n".join(lines) + f"\nallow? {CHOICES} "


def _width(*streams: TextIO) -> int:
    """The columns of the first stream that is a terminal (80 when none is)."""
    for stream in streams:
        try:
            return os.get_terminal_size(stream.fileno()).columns or 80
        except (OSError, ValueError, AttributeError):
            continue
    return 80


def approval_json(request: ApprovalRequest) -> dict[str, Any]:
    """``dsh run --json``'s ``approval`` line: the request with every detail whole."""
    out: dict[str, Any] = {
        "type": "approval",
        "sessionId": request.session_id,
        "callId": request.call_id,
        "toolName": request.tool_name,
        "reason": request.reason,
    }
    details = request.escalation
    if details is not None:
        if details.command is not None:
            out["command"] = details.command
        if details.path is not None:
            out["path"] = details.path
        out.update(
            cwd=details.cwd,
            permissions=details.permissions,
            current=details.current,
            justification=details.justification,
        )
    return out


class AnnouncedApprover:
    """``--json``: print each request as an ``approval`` line on stdout, then let ``inner`` answer."""

    def __init__(self, inner: Approver) -> None:
        self.inner = inner

    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        write_json_line(approval_json(request))
        return await self.inner.decide(request)


class TerminalApprover:
    """Asks the person at the terminal; remembers "for the session" answers by scope."""

    def __init__(self, answers: TextIO, prompts: TextIO) -> None:
        self._in = answers
        self._out = prompts
        self._allowed: set[str] = set()
        self._lock = asyncio.Lock()

    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        async with self._lock:  # one question at a time, even for parallel calls
            if request.scope in self._allowed:
                return "allowed-once"
            self._out.write(question(request, _width(self._out, self._in)))
            self._out.flush()
            line = await asyncio.to_thread(self._in.readline)
            answer = line.strip().lower()
            if answer in ("s", "session"):
                self._allowed.add(request.scope)
                return "allowed-once"
            return "allowed-once" if answer in ("o", "once", "y", "yes") else "rejected"


class NoApprover:
    """No channel: every request is ``unavailable``; the first one prints how to answer."""

    def __init__(self, prompts: TextIO) -> None:
        self._out = prompts
        self._told = False

    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        if not self._told:
            self._told = True
            self._out.write(
                f"dsh: {request.tool_name} needed an approval, but stdin is not a terminal; "
                "refused (pass --approve or --deny to answer in automation)\n"
            )
            self._out.flush()
        return "unavailable"


def approver_for(approve: bool, deny: bool) -> Approver:
    """The approver ``dsh run``'s flags (not both) and its stdin call for."""
    if approve:
        return FixedApprover("allowed-once")
    if deny:
        return FixedApprover("rejected")
    if sys.stdin.isatty():
        return TerminalApprover(sys.stdin, sys.stderr)
    return NoApprover(sys.stderr)
