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
import sys
from typing import TextIO

from dsh.tools.approval import ApprovalOutcome, ApprovalRequest, Approver, FixedApprover

CHOICES = "[o]nce / [s]ession / [r]eject"


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
            reason = f": {request.reason}" if request.reason else ""
            self._out.write(f"\ndsh: {request.tool_name} asks for approval{reason}\nallow? {CHOICES} ")
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
