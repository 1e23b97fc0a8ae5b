"""The terminal's side of trusting a workspace's ``.mcp.json`` (:mod:`dsh.mcp.trust` decides):
the question on stderr — each server's command and arguments (or URL) as the file writes
them — and the answer read from stdin. Without a terminal nobody is asked."""

from __future__ import annotations

import shlex
import sys
from typing import TextIO

from dsh.cli.tables import terminal_safe
from dsh.mcp.trust import Ask, Proposal

CHOICES = "[y]es / [n]o (remembered until the file changes) / Enter: not this time"


def question(proposal: Proposal) -> str:
    """What the person is asked: the file, then one line per server it would start."""
    lines = [f"dsh: the workspace's {terminal_safe(str(proposal.path))} would start these MCP servers:"]
    lines += [f"  {name}: {terminal_safe(shlex.join(argv))}" for name, argv in proposal.shown]
    lines.append(f"start them? {CHOICES} ")
    return "\n".join(lines)


class TerminalTrust:
    """Asks at the terminal: ``y`` trusts, ``n`` declines, anything else (or end of input) not now."""

    def __init__(self, answers: TextIO, prompts: TextIO) -> None:
        self._in = answers
        self._out = prompts

    def __call__(self, proposal: Proposal) -> bool | None:
        self._out.write(question(proposal))
        self._out.flush()
        line = self._in.readline()
        if not line:
            self._out.write("\n")
        answer = line.strip().lower()
        if answer in ("y", "yes"):
            return True
        return False if answer in ("n", "no") else None


def trust_asker() -> Ask | None:
    """Who is asked: the terminal when stdin is one, else nobody."""
    return TerminalTrust(sys.stdin, sys.stderr) if sys.stdin.isatty() else None
