"""What one hook event decided, and what the model sees of it (the original's texts).

- PreToolUse deny: the result ``Error: <reason>`` (default ``Error: blocked by PreToolUse
  hook``, no code); the tool does not run.
- PreToolUse ask: an approval request; without an approval channel it is rejected:
  ``Error: the user rejected tool "<t>"``.
- PostToolUse block: the tool did run; its result becomes ``<reason>`` (default ``blocked by
  PostToolUse hook``), an error without the ``Error:`` prefix.
- PreToolUse/PostToolUse context: the result unchanged; one message per dialect (a text
  block per context) opens the next step.
- UserPromptSubmit block: nothing; no step runs, the turn ends ``blocked``.
- UserPromptSubmit context: one message per dialect right after the prompt.
- Stop block: the turn goes on; the next step starts with ``<reason>`` (default
  ``continue: blocked by Stop hook``).

Injected messages are ``user/message`` events with source ``{kind: "plugin", plugin:
"hooks-claude-code" | "hooks-codex"}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from dsh.events.messages import Message, text_block
from dsh.hooks.config import Dialect
from dsh.hooks.decode import Merged
from dsh.ids import new_message_id
from dsh.tools import ToolOutput

PLUGINS: Final[dict[Dialect, str]] = {"claude-code": "hooks-claude-code", "codex": "hooks-codex"}
"""The ``source.plugin`` of the messages each dialect injects."""


def plugin_message(dialect: Dialect, texts: tuple[str, ...]) -> Message:
    """A model-visible message from ``dialect``'s hooks: one text block per text."""
    return {
        "content": [text_block(t) for t in texts],
        "source": {"kind": "plugin", "plugin": PLUGINS[dialect]},
        "role": "user",
        "id": new_message_id(),
    }


@dataclass(frozen=True, slots=True)
class HookOutcome:
    """One event's merged answer, per dialect (in the order the dialects ran)."""

    point: str
    dialects: tuple[tuple[Dialect, Merged], ...] = ()

    @property
    def rank(self) -> int:
        """3: deny/block, 2: ask, 1: allow/approve, 0: no decision."""
        return max((m.rank for _, m in self.dialects), default=0)

    @property
    def blocked(self) -> bool:
        return self.rank >= 3

    @property
    def asked(self) -> bool:
        return self.rank == 2

    @property
    def reason(self) -> str | None:
        """The reasons of the winning rank (ask or block only), joined by a blank line."""
        rank = self.rank
        if rank < 2:
            return None
        reasons = [r for _, m in self.dialects if m.rank == rank for r in m.reasons]
        return "\n\n".join(reasons) or None

    @property
    def context_messages(self) -> list[Message]:
        """One message per dialect that returned context."""
        return [plugin_message(d, m.contexts) for d, m in self.dialects if m.contexts]

    # -- the original's texts -------------------------------------------------------------

    def denied_result(self) -> ToolOutput:
        """PreToolUse deny: the tool does not run."""
        reason = self.reason or "blocked by PreToolUse hook"
        return ToolOutput([text_block(f"Error: {reason}")], is_error=True)

    def blocked_result(self) -> ToolOutput:
        """PostToolUse block: the result the model gets instead of the tool's."""
        return ToolOutput([text_block(self.reason or "blocked by PostToolUse hook")], is_error=True)

    def steer_messages(self) -> list[Message]:
        """Stop block: the message each blocking dialect starts the next step with."""
        out = []
        for dialect, merged in self.dialects:
            if merged.rank >= 3:
                text = "\n\n".join(merged.reasons) or "continue: blocked by Stop hook"
                out.append(plugin_message(dialect, (text,)))
        return out


def approval_refusal(tool_name: str, outcome: str) -> ToolOutput:
    """The result of a hook ``ask`` the approval did not allow (``rejected``, ``cancelled``,
    ``unavailable``), in the original's words."""
    if outcome == "cancelled":
        text = f'approval for tool "{tool_name}" was cancelled'
    elif outcome == "unavailable":
        text = f'tool "{tool_name}" requires approval, but no approval channel is available'
    else:
        text = f'the user rejected tool "{tool_name}"'
    return ToolOutput([text_block(f"Error: {text}")], is_error=True)
