"""The runtime-context snapshot: the session's file and approval policy, told to the model.

At every pre-step the loop computes the snapshot's sections — ``sandbox:policy``
(:func:`dsh.tools.sandbox.runtime_context_text`), ``approval:policy``
(:data:`dsh.tools.approval.APPROVAL_CONTEXT`) and, in a delegated child,
``subagent:delegation`` — and appends the snapshot as a ``user/message`` after the step's
claimed messages **only when its text differs** from the last snapshot on the surface (so a
turn normally carries one at its first step, and a mode switch a new one at the next step).
A fork child inherits its parent's snapshot with the completed turns and appends its own
(the delegation section makes it differ). A session without a file policy
(``AgentConfig.sandbox=None``: nothing fenced, the library default) or with
``AgentConfig.runtime_context=False`` has no sections; when its log already carries a
snapshot the original's "none" text supersedes it. Texts and the source shape are the original's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from dsh.events import Event
from dsh.events.messages import Message, joined_text, user_message
from dsh.events.vocabulary import RUNTIME_CONTEXT_PLUGIN, USER_MESSAGE
from dsh.tools.approval import APPROVAL_CONTEXT, ApprovalPolicy
from dsh.tools.sandbox import SandboxPolicy, runtime_context_text

PLUGIN: Final = RUNTIME_CONTEXT_PLUGIN
HEADING: Final = "Current runtime context. This snapshot supersedes earlier runtime-context snapshots."
NONE_TEXT: Final = "Current runtime context: none. Earlier runtime-context snapshots no longer apply."
DELEGATION: Final = (
    "You are a delegated subagent: your permission scope was fixed when you were started and cannot "
    "be widened from inside this session — operations that require approval are rejected "
    "automatically. When the task needs access beyond that scope, do not retry the denied operation; "
    "state the limitation in your reply so the delegating agent can handle it."
)

Section = tuple[str, str]


def context_sections(
    sandbox: SandboxPolicy | None, workspace: Path, approval: ApprovalPolicy, *, delegated: bool
) -> list[Section]:
    """The snapshot's sections in the original's order (name, text)."""
    sections = [
        ("sandbox:policy", runtime_context_text(sandbox, workspace)),
        ("approval:policy", APPROVAL_CONTEXT[approval]),
    ]
    if delegated:
        sections.append(("subagent:delegation", DELEGATION))
    return sections


def snapshot_text(sections: Sequence[Section]) -> str | None:
    """The message text of ``sections`` (``None`` when there are none)."""
    texts = [text for _, text in sections if text]
    return "\n\n".join([HEADING, *texts]) if texts else None


def is_snapshot(message: object) -> bool:
    """Whether a logged message is a runtime-context snapshot (or the "none" text)."""
    source = message.get("source") if isinstance(message, dict) else None
    return isinstance(source, dict) and source.get("kind") == "plugin" and source.get("plugin") == PLUGIN


def last_snapshot_text(events: Sequence[Event]) -> str | None:
    """The text of the last snapshot message in ``events`` (inherited ones included).

    A snapshot is logged when it changes, so the last one is usually far back: every message
    is looked at first for the plugin :func:`is_snapshot` requires, inline (a resumed 1 M-event
    session's 166,667 user messages: ~70 ms, against ~150 ms calling it for each)."""
    for event in reversed(events):
        data = event.data
        source = data.get("source") if type(data) is dict else None
        plugin = type(source) is dict and source.get("plugin") == PLUGIN
        if plugin and event.type == USER_MESSAGE and is_snapshot(data):
            return joined_text(data.get("content", []))
    return None


def snapshot_message(sections: Sequence[Section], last: str | None) -> Message | None:
    """The message to append for ``sections`` when ``last`` is the text on the surface, or
    ``None`` when nothing changed (no snapshot before and none now included)."""
    text = snapshot_text(sections)
    if text is None:
        if last is None or last == NONE_TEXT:
            return None
        message = user_message(NONE_TEXT, source_kind="plugin")
        message["source"] = {"kind": "plugin", "plugin": PLUGIN}
        return message
    if text == last:
        return None
    message = user_message(text, source_kind="plugin")
    message["source"] = {
        "kind": "plugin",
        "plugin": PLUGIN,
        "form": "snapshot",
        "sections": [{"name": name, "text": body} for name, body in sections if body],
    }
    return message
