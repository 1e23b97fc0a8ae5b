"""The wire dialects ``dsh serve`` speaks, one module each (:class:`~.base.Dialect`)."""

from __future__ import annotations

from dsh.serve.dialects.base import Call, CallRecorder, Chain, Dialect, NotThisDialect, Parsed
from dsh.serve.dialects.chat import CHAT
from dsh.serve.dialects.messages import MESSAGES
from dsh.serve.dialects.responses import RESPONSES

__all__ = [
    "CHAT",
    "DIALECTS",
    "SUPPORTED",
    "Call",
    "CallRecorder",
    "Chain",
    "Dialect",
    "NotThisDialect",
    "Parsed",
    "by_name",
    "dialect_for",
]

DIALECTS: tuple[Dialect, ...] = (CHAT, RESPONSES, MESSAGES)
_BY_PATH = {path: dialect for dialect in DIALECTS for path in dialect.paths}
SUPPORTED = "POST /v1/chat/completions, /v1/responses, /v1/messages"
"""The supported routes, as a 404 names them."""


def dialect_for(path: str) -> Dialect | None:
    """The dialect answering ``path`` (``None``: no route)."""
    return _BY_PATH.get(path)


def by_name(name: str | None) -> Dialect:
    """The dialect a recording notes (``None``: Chat Completions, which is not noted)."""
    for dialect in DIALECTS:
        if dialect.name == name:
            return dialect
    return CHAT
