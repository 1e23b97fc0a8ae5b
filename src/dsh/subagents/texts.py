"""The model-visible texts of background children: results, relays and settlement notices.

Every string here is the original's, byte for byte (``upstream-tools-hooks-sandbox.md`` §3):
the recorded scenarios compare them.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh.events.messages import Block, Message, text_block
from dsh.ids import new_message_id

_OUTCOMES: dict[str, str] = {
    "completed": "finished and will do no further work unless you send it more.",
    "aborted": "was stopped before it finished.",
    "max-tokens": "ran out of room before it finished.",
    "blocked": "declined the task.",
    "error": "failed before it finished.",
}


def started(child_id: str) -> str:
    """The result of a background ``subagent`` call."""
    return f"started subagent {child_id}"


def queued(child_id: str) -> str:
    """The result of ``send_message`` that reached the child."""
    return f"message queued as the next turn for subagent {child_id}"


def unavailable(child_id: str) -> str:
    """``send_message`` (or ``interrupt_agent``) to no child of the caller (code ``NOT_RESUMABLE``)."""
    return f'subagent "{child_id}" is unavailable'


def interrupt_requested(agent_id: str) -> str:
    return f"interrupt requested for agent {agent_id}"


def report_accepted(message_id: str) -> str:
    """What the child's ``report`` call answers."""
    return f"report accepted by the agent that started you as message {message_id}"


PARENT_NOT_LIVE = "direct parent is not live; report was not delivered"
NO_SUBAGENTS = "(no subagents)"


def agent_line(child_id: str, status: str, label: str, *, parent: str | None = None, depth: int = 1) -> str:
    """One ``list_agents`` line; ``parent`` is given for the ``descendants`` scope."""
    where = f" parent={parent} depth={depth}" if parent is not None else ""
    return f"{child_id} [{status}]{where} \u2014 {label}"


def summary(child_id: str, kind: str) -> str:
    """The one-line outcome of a child's activation that ended ``kind``."""
    outcome = _OUTCOMES.get(kind, f"ended abnormally ({kind}) before it finished.")
    return f"Background subagent {child_id} {outcome}"


def settlement_notice(child_id: str, kind: str, closing: Sequence[Block]) -> Message:
    """The notice the parent gets when a child's activation ends."""
    line = summary(child_id, kind)
    tail = (
        [text_block("Its closing message:"), *closing]
        if closing
        else [text_block("It left no closing message.")]
    )
    return {
        "content": [text_block(line), *tail],
        "source": {
            "kind": "subagent-settled",
            "form": "notice",
            "summary": line,
            "senderSessionId": child_id,
        },
        "role": "user",
        "id": new_message_id(),
    }


def report_relay(child_id: str, output: str) -> Message:
    """A child's ``report``, as its parent sees it."""
    return {
        "content": [text_block(f"Background subagent {child_id} reported:"), text_block(output)],
        "source": {"kind": "subagent-report", "form": "relay", "senderSessionId": child_id},
        "role": "user",
        "id": new_message_id(),
    }


def coordinator_relay(parent_id: str, text: str) -> Message:
    """A parent's ``send_message``, as the child sees it (its next turn)."""
    return {
        "content": [text_block(text)],
        "source": {"kind": "coordinator", "form": "relay", "senderSessionId": parent_id},
        "role": "user",
        "id": new_message_id(),
    }
