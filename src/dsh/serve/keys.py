"""Which client session a request names: dsh's session headers and the ones agent CLIs send.

In order, the first that a request carries wins:

1. ``X-Dsh-Session`` (then each ``--session-header``): the session; ``X-Dsh-Parent`` its parent.
2. Claude Code's ``x-claude-code-agent-id`` (a subagent): the session; its parent is
   ``x-claude-code-parent-agent-id``, else the ``X-Claude-Code-Session-Id`` of the CLI
   session that runs it (the main conversation).
3. Claude Code's ``X-Claude-Code-Session-Id`` alone (the main conversation): the session.

The Claude Code names are the ones its client sets on every model request (read from the
``@anthropic-ai/claude-code`` 2.1.197 build: ``X-Claude-Code-Session-Id`` always, the agent
and parent-agent ids only inside an agent). The OpenAI Agents SDK sends no session or agent
header (only ``User-Agent: Agents/Python …``): pass ``X-Dsh-Session`` in its
``ModelSettings(extra_headers=...)``. ``X-Dsh-Parent`` still overrides any inferred parent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SESSION_HEADER = "x-dsh-session"
PARENT_HEADER = "x-dsh-parent"
CLAUDE_CODE_SESSION = "x-claude-code-session-id"
CLAUDE_CODE_AGENT = "x-claude-code-agent-id"
CLAUDE_CODE_PARENT = "x-claude-code-parent-agent-id"


@dataclass(frozen=True, slots=True)
class ClientKey:
    """The client session a request names (``None``: none) and its parent's key."""

    session: str | None
    parent: str | None = None


class SessionKeys:
    """Reads :class:`ClientKey` from request headers (names lower-cased)."""

    def __init__(self, extra: Sequence[str] = ()) -> None:
        self.names = (SESSION_HEADER, *(h.lower() for h in extra))

    def of(self, headers: Mapping[str, str]) -> ClientKey:
        parent = headers.get(PARENT_HEADER) or None
        for name in self.names:
            if headers.get(name):
                return ClientKey(headers[name], parent)
        cli_session = headers.get(CLAUDE_CODE_SESSION) or None
        agent = headers.get(CLAUDE_CODE_AGENT)
        if agent:
            return ClientKey(agent, parent or headers.get(CLAUDE_CODE_PARENT) or cli_session)
        return ClientKey(cli_session, parent)
