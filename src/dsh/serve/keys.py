"""Which client session a request names: dsh's session headers and the ones agent CLIs send.

In order, the first that a request carries wins:

1. ``X-Dsh-Session`` (then each ``--session-header``): the session; ``X-Dsh-Parent`` its parent.
2. Claude Code's ``x-claude-code-agent-id`` (a subagent): the session; its parent is
   ``x-claude-code-parent-agent-id``, else the ``X-Claude-Code-Session-Id`` of the CLI
   session that runs it (the main conversation).
3. Claude Code's ``X-Claude-Code-Session-Id`` alone (the main conversation): the session.
4. Codex's ``session_id`` (else its older ``conversation_id``): the conversation; with Codex's
   ``x-openai-subagent`` (``review``, ``compact``, ...) the session is ``<id>/<subagent>``
   and its parent the conversation.

The Claude Code names are the ones its client sets on every model request (read from the
``@anthropic-ai/claude-code`` 2.1.197 build: ``X-Claude-Code-Session-Id`` always, the agent
and parent-agent ids only inside an agent). The OpenAI Agents SDK sends no session or agent
header (only ``User-Agent: Agents/Python …``). The Codex names are the ones its Responses
client sets (openai/codex, ``codex-rs/codex-api/src/requests/headers.rs``
``build_conversation_headers``: ``session_id``; ``requests/responses.rs``:
``x-openai-subagent``; ``conversation_id`` as older builds and their tests send it): pass
``X-Dsh-Session`` in its ``ModelSettings(extra_headers=...)``. ``X-Dsh-Parent`` still
overrides any inferred parent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SESSION_HEADER = "x-dsh-session"
PARENT_HEADER = "x-dsh-parent"
CLAUDE_CODE_SESSION = "x-claude-code-session-id"
CLAUDE_CODE_AGENT = "x-claude-code-agent-id"
CLAUDE_CODE_PARENT = "x-claude-code-parent-agent-id"
CODEX_SESSION = ("session_id", "conversation_id")
CODEX_SUBAGENT = "x-openai-subagent"


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
        if cli_session is not None:
            return ClientKey(cli_session, parent)
        codex = next((headers[n] for n in CODEX_SESSION if headers.get(n)), None)
        subagent = headers.get(CODEX_SUBAGENT)
        if codex is not None and subagent:
            return ClientKey(f"{codex}/{subagent}", parent or codex)
        return ClientKey(codex, parent)
