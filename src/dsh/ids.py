"""Identifiers and clocks: session and message ids, epoch-millisecond time, and the session-id rule.

A session id is untrusted input wherever it comes from (a command line, a URL, a log header
being imported): :func:`check_session_id` is the one rule. An id is 1 to
:data:`MAX_SESSION_ID_LENGTH` characters, none of them a path separator (``/``, ``\\``),
a control character (C0 including NUL, DEL, C1), a line or paragraph separator or a lone
surrogate, and it is not ``.`` or ``..``. Stores never build a path from an id unescaped
(the JSONL store escapes every character outside ``[A-Za-z0-9._-]``); the rule keeps
malformed ids out of the stores, the messages and the terminal in the first place.
"""

from __future__ import annotations

import re
import time
import unicodedata
import uuid
from typing import Final

from dsh.errors import InvalidSessionIdError

MAX_SESSION_ID_LENGTH: Final = 200
"""The longest session id dsh accepts (a UUID is 36 characters, ``session-<uuid>`` 44)."""

_BAD_CATEGORIES: Final = frozenset({"Cc", "Cs", "Zl", "Zp"})
_SEPARATORS: Final = frozenset("/\\")
_SHOWN: Final = 40


def new_session_id() -> str:
    """Return a fresh random session id (a UUID4 string, as the original uses)."""
    return str(uuid.uuid4())


_TEMPLATE: Final = re.compile(r"\{\{[A-Za-z_][A-Za-z0-9_]*\}\}")


def is_template_id(value: str) -> bool:
    """Whether ``value`` is a template token standing for an id (``{{sessionId}}``: the
    original's snapshot logs normalize ids so), which names no session."""
    return _TEMPLATE.fullmatch(value) is not None


def new_message_id() -> str:
    """Return a fresh random message id."""
    return str(uuid.uuid4())


def now_ms() -> int:
    """Wall-clock epoch milliseconds (never used for ordering)."""
    return time.time_ns() // 1_000_000


def _shown(value: str) -> str:
    """The id as a message shows it: quoted and escaped (``repr``), at most :data:`_SHOWN` characters."""
    return repr(value[:_SHOWN]) + ("…" if len(value) > _SHOWN else "")


def session_id_problem(value: object) -> str | None:
    """Why ``value`` is not a valid session id, or ``None`` when it is one."""
    if not isinstance(value, str):
        return "it is not a string"
    if not value:
        return "it is empty"
    if len(value) > MAX_SESSION_ID_LENGTH:
        return f"it is {len(value)} characters long (at most {MAX_SESSION_ID_LENGTH})"
    if value in (".", ".."):
        return "it is a path component"
    for char in value:
        if char in _SEPARATORS:
            return "it holds a path separator"
        if unicodedata.category(char) in _BAD_CATEGORIES:
            return f"it holds the control character U+{ord(char):04X}"
    return None


def check_session_id(value: object, what: str = "session id") -> str:
    """Return ``value`` if it is a valid session id; else raise ``InvalidSessionIdError`` (one line)."""
    problem = session_id_problem(value)
    if problem is None:
        assert isinstance(value, str)
        return value
    shown = _shown(value) if isinstance(value, str) else type(value).__name__
    raise InvalidSessionIdError(f"invalid {what} {shown}: {problem}")
