"""The one exception tree of dsh.

Every error dsh raises on purpose derives from :class:`DshError`. Foreign exceptions
(openai, sqlite3, psycopg, OSError) are mapped at exactly one place per dependency and
chained with ``raise ... from exc``. Messages are one line, say what happened and name the
file, session id or value involved.

::

    DshError
    ├── UsageError                  bad command-line input, bad store URL, missing configuration
    │   └── MissingCredentialError  no API key / base URL configured
    ├── InvalidEventError           an event that cannot be appended (non-JSON value, bad seq)
    │   └── EventShapeError         decoded event data a projection could not read (wrong type, too deep)
    ├── StoreError                  anything a store refuses or fails at
    │   ├── SessionNotFoundError
    │   ├── SessionExistsError
    │   ├── SeqConflictError        two writers raced on the same session
    │   ├── SessionBusyError        another writer holds the session's lease
    │   ├── CorruptLogError         committed corruption (path and line/seq named)
    │   ├── UnsupportedFormatError  a log/database version or owner we do not read
    │   └── StoreClosedError
    ├── ModelError                  a classified model-call failure (``code`` attribute)
    ├── ToolError                   a tool body failed; becomes an error result
    │   └── ToolInputError          arguments failed validation
    ├── ReplayError                 a recorded run cannot be served
    │   ├── UnrecordedSessionError
    │   ├── ScriptExhaustedError
    │   ├── ScriptNotConsumedError
    │   ├── ReplayDivergenceError   the live run asked something the recording did not
    │   └── OverrideError           a malformed replay.override.json
    ├── ScenarioError               a malformed scenario directory / transcript mismatch
    └── SkillFileError              a SKILL.md whose front matter cannot be read (skipped, warned)
"""

from __future__ import annotations


class DshError(Exception):
    """Root of every error dsh raises on purpose."""


class UsageError(DshError):
    """The user gave input we cannot act on."""


class MissingCredentialError(UsageError):
    """No API key or base URL is configured for a live model."""


class InvalidEventError(DshError):
    """An event cannot be appended: non-JSON value, wrong seq, bad envelope."""


class EventShapeError(InvalidEventError):
    """Decoded event data lacks a field its type needs, has it with the wrong JSON type, or nests too deep.

    Raised while decoding a log line; the log readers report it as a
    :class:`CorruptLogError` naming the file and line.
    """


class StoreError(DshError):
    """A store refused an operation or failed at it."""


class SessionNotFoundError(StoreError):
    """No session with the given id exists in the store."""

    def __init__(self, session_id: str, where: str = "") -> None:
        self.session_id = session_id
        suffix = f" in {where}" if where else ""
        super().__init__(f"session {session_id!r} not found{suffix}")


class SessionExistsError(StoreError):
    """A session with the given id already exists."""

    def __init__(self, session_id: str, where: str = "") -> None:
        self.session_id = session_id
        suffix = f" in {where}" if where else ""
        super().__init__(f"session {session_id!r} already exists{suffix}")


class SeqConflictError(StoreError):
    """An append did not start at the stored next seq (another writer got there first)."""

    def __init__(self, session_id: str, expected: int, got: int) -> None:
        self.session_id = session_id
        self.expected = expected
        self.got = got
        super().__init__(
            f"seq conflict on session {session_id!r}: append starts at seq {got}, "
            f"the store is at seq {expected} (another writer appended first)"
        )


class SessionBusyError(StoreError):
    """Another writer holds the session's lease (the holder's pid, host and start time are named)."""

    def __init__(self, session_id: str, pid: int | None, host: str | None, since: str | None) -> None:
        self.session_id = session_id
        self.pid = pid
        self.host = host
        self.since = since
        if pid is None:
            holder = "another writer (its pid and host are not recorded)"
        else:
            holder = f"pid {pid} on {host} since {since}"
        super().__init__(f"session {session_id} is busy (held by {holder})")


class CorruptLogError(StoreError):
    """Committed data is corrupt; the path and line (or seq) are named."""


class UnsupportedFormatError(StoreError):
    """A log or database written in a version or by an owner dsh does not read."""


class StoreClosedError(StoreError):
    """The store was used after ``close()``."""


class ModelError(DshError):
    """A classified model-call failure."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.failure_message = message
        super().__init__(f"{code}: {message}")


class ToolError(DshError):
    """A tool body failed; the loop turns it into an ``Error: ...`` result."""

    code = "TOOL_ERROR"


class ToolInputError(ToolError):
    """Tool arguments failed validation."""

    code = "INVALID_ARGUMENTS"


class ReplayError(DshError):
    """A recorded run cannot be served."""


class UnrecordedSessionError(ReplayError):
    """A live session asked for a script that was never recorded."""


class ScriptExhaustedError(ReplayError):
    """A session made more model calls than were recorded for it."""


class ScriptNotConsumedError(ReplayError):
    """A recorded script was not bound or not fully consumed."""


class ReplayDivergenceError(ReplayError):
    """At a replayed call the live request differs from what the recorded model saw."""

    code = "REPLAY_DIVERGED"


class OverrideError(ReplayError):
    """A replay override sidecar is malformed."""


class ScenarioError(DshError):
    """A scenario directory is malformed, or its replay did not match."""


class SkillFileError(DshError):
    """A ``SKILL.md`` whose front matter cannot be read or lacks what a skill needs."""
