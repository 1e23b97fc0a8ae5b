"""Session titles: the original's fallback title from the first prompt (``session/title``).

The first ``user/message`` whose source is the user and whose text blocks (joined by ``\\n``)
normalize to something gives ``session/title {title, messageSeqs: [its seq], source:
{kind: "fallback"}}`` — once per session. Normalizing removes escape sequences, control
characters (but TAB/LF/CR) and invisible format characters, collapses whitespace and trims;
the title is the first 5 words cut to 40 UTF-8 bytes at a code-point boundary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, cast

from dsh.events import Event
from dsh.events.messages import Message, joined_text
from dsh.events.payloads import blocks_of
from dsh.events.vocabulary import SESSION_TITLE, USER_MESSAGE

MAX_WORDS: Final = 5
MAX_BYTES: Final = 40
MAX_TITLE_BYTES: Final = 80

_ESCAPES = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]?|\x9b[0-?]*[ -/]*[@-~]"
)
_CONTROLS = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]"
)


def normalize(text: str) -> str:
    """The text with escapes and invisible characters removed, whitespace collapsed, trimmed."""
    return " ".join(_CONTROLS.sub("", _ESCAPES.sub("", text)).split())


def cut(text: str, max_bytes: int) -> str:
    """At most ``max_bytes`` UTF-8 bytes, at a code-point boundary, trailing spaces trimmed."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore").rstrip(" ")


def fallback_title(text: str) -> str:
    words = normalize(text).split(" ")
    return cut(" ".join(words[:MAX_WORDS]), MAX_BYTES)


def has_title(events: Sequence[Event]) -> bool:
    return any(e.type == SESSION_TITLE for e in events)


def fallback_event(events: Sequence[Event]) -> dict[str, object] | None:
    """The fallback ``session/title`` data when the session has none and a prompt qualifies."""
    if has_title(events):
        return None
    for event in events:
        if event.type != USER_MESSAGE or not isinstance(event.data, dict):
            continue
        source = event.data.get("source")
        if not isinstance(source, dict) or source.get("kind") != "user":
            continue
        text = "\n".join(
            str(b.get("text", "")) for b in blocks_of(cast(Message, event.data)) if b.get("type") == "text"
        )
        title = fallback_title(text)
        if title:
            return {"title": title, "messageSeqs": [event.seq], "source": {"kind": "fallback"}}
    return None


def latest_title(events: Sequence[Event]) -> str | None:
    for event in reversed(events):
        if event.type == SESSION_TITLE and isinstance(event.data, dict):
            title = event.data.get("title")
            if isinstance(title, str):
                return title
    return None


__all__ = ["fallback_event", "fallback_title", "joined_text", "latest_title", "normalize"]
