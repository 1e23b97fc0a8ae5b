"""The one exception tree of dsh.

Every error dsh raises on purpose derives from :class:`DshError`. Foreign exceptions
(openai, sqlite3, psycopg, OSError) are mapped at exactly one place per dependency and
chained with ``raise ... from exc``. Messages are one line, say what happened and name the
file, session id or value involved.

::

    DshError
    ├── UsageError                  bad command-line input, bad store URL, missing configuration
    │   ├── McpConfigError          a malformed ``.mcp.json`` / ``--mcp-config`` file or ACP ``mcpServers``
    │   ├── MissingCredentialError  no API key / base URL configured
    │   ├── PriceFileError          a malformed price override file (``$DSH_PRICES``, ``~/.dsh/prices.json``)
    │   ├── EmptyPromptError        an empty or whitespace-only prompt (also a ValueError)
    │   └── InvalidSessionIdError   a malformed session id (too long, a path separator, a control character)
    ├── InvalidEventError           an event that cannot be appended (non-JSON value, bad seq)
    │   └── EventShapeError         decoded event data a projection could not read (wrong type, too deep)
    ├── StoreError                  anything a store refuses or fails at
    │   ├── StoreNotFoundError      a read-only command named a store that does not exist
    │   ├── SessionNotFoundError
    │   ├── SessionExistsError
    │   ├── SeqConflictError        two writers raced on the same session
    │   ├── SessionBusyError        another writer holds the session's lease
    │   │   └── SessionRunningError  a Temporal workflow is running the session's turn
    │   ├── CorruptLogError         committed corruption (path and line/seq named)
    │   │   └── SessionTruncatedError  events dsh appended durably are missing (the seqs named)
    │   ├── UnsupportedFormatError  a log/database version or owner we do not read
    │   ├── StoreClosedError
    │   ├── ForkError               a fork cannot cut where it was asked (``dsh.events.fork``)
    │   │   ├── ForkOpenTurnError   the turn asked for (or holding the seq asked for) has not ended
    │   │   └── ForkBoundaryError   a turn/seq past the end, or before any completed turn
    │   └── ParentReferencedError   a delete would remove the prefix fork children read by reference
    ├── ModelError                  a classified model-call failure (``code`` attribute)
    ├── ToolError                   a tool body failed; becomes an error result
    │   ├── ToolInputError          arguments failed validation
    │   └── McpServerError          an MCP server failed to start, died, hung, refused or botched a call
    ├── ReplayError                 a recorded run cannot be served
    │   ├── UnrecordedSessionError
    │   ├── ScriptExhaustedError
    │   ├── ScriptNotConsumedError
    │   ├── ReplayDivergenceError   the live run asked something the recording did not
    │   │   └── ReplayDivergenceAtCallError  ... in a test (dsh_recording): stops the run (+ StopRunError)
    │   └── OverrideError           a malformed replay.override.json
    ├── ScenarioError               a malformed scenario directory / transcript mismatch
    │   └── RecordFailedError       a recording's model call failed: nothing is written (+ StopRunError)
    ├── StopRunError                raised out of a model call to stop the run there (see its docstring)
    ├── ExportError                 a trace could not be delivered (an unreachable OTLP endpoint)
    ├── HttpRequestError            a local server refuses a request (``status`` attribute)
    ├── TemporalError               the Temporal integration cannot run (``dsh.temporal``)
    │   ├── TemporalUnreachableError  no Temporal server answers at the address given
    │   └── StoreNotSharedError     a worker's store differs from the task queue's other workers'
    └── SkillFileError              a SKILL.md whose front matter cannot be read (skipped, warned)
"""

from __future__ import annotations

DISTRIBUTION = "dsh-harness"
"""The name dsh is installed by (``dsh`` on PyPI is another project); the import package is ``dsh``."""


def install_hint(extra: str) -> str:
    """How to install the optional ``extra`` (``acp``, ``ui``, ``postgres``, ``zstd``): the one
    spelling every message uses, ``pip install 'dsh-harness[EXTRA]'``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


class DshError(Exception):
    """Root of every error dsh raises on purpose."""


class UsageError(DshError):
    """The user gave input we cannot act on."""


class MissingCredentialError(UsageError):
    """No API key or base URL is configured for a live model."""


class PriceFileError(UsageError):
    """The user's price override file cannot be read (its path named)."""


class EmptyPromptError(UsageError, ValueError):
    """A prompt that is empty or only whitespace (refused before a session or turn starts)."""


class InvalidSessionIdError(UsageError):
    """A session id that is not well-formed (see ``dsh.ids.check_session_id``)."""


class InvalidEventError(DshError):
    """An event cannot be appended: non-JSON value, wrong seq, bad envelope."""


class EventShapeError(InvalidEventError):
    """Decoded event data lacks a field its type needs, has it with the wrong JSON type, or nests too deep.

    Raised while decoding a log line; the log readers report it as a
    :class:`CorruptLogError` naming the file and line.
    """


class StoreError(DshError):
    """A store refused an operation or failed at it."""


class StoreNotFoundError(StoreError):
    """The store named does not exist and the command only reads (``open_store(url, create=False)``)."""


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


class SessionRunningError(SessionBusyError):
    """A Temporal turn workflow (``dsh-session-<id>``) is running the session: it is busy."""

    def __init__(self, session_id: str, workflow_id: str) -> None:
        self.session_id = session_id
        self.pid = self.host = self.since = None
        self.workflow_id = workflow_id
        StoreError.__init__(self, f"session {session_id} is busy (held by Temporal workflow {workflow_id})")


class CorruptLogError(StoreError):
    """Committed data is corrupt; the path and line (or seq) are named."""


class SessionTruncatedError(CorruptLogError):
    """A session file lost events dsh appended durably (cut short); nothing is appended after it."""


class UnsupportedFormatError(StoreError):
    """A log or database written in a version or by an owner dsh does not read."""


class StoreClosedError(StoreError):
    """The store was used after ``close()``."""


class ForkError(StoreError):
    """A fork cannot cut the parent where it was asked (the message names the session and the point)."""


class ForkOpenTurnError(ForkError):
    """The turn asked for, or the turn holding the seq asked for, has not ended yet."""


class ForkBoundaryError(ForkError):
    """The turn or seq asked for is past the end of the log, or before any completed turn."""


class ParentReferencedError(StoreError):
    """A delete would remove events that fork children hold by reference (``children`` names them)."""

    def __init__(self, session_id: str, children: list[str]) -> None:
        self.session_id = session_id
        self.children = children
        super().__init__(
            f"session {session_id} is the parent of forks that hold its events by reference "
            f"({', '.join(children)}): delete them with it (--with-children) or delete them first"
        )


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


class McpConfigError(UsageError):
    """An MCP server configuration that cannot be used (the file and server named)."""


class McpServerError(ToolError):
    """An MCP server failed to start, died, timed out, answered a call with a protocol error or
    with a malformed message."""

    code = "MCP_SERVER_ERROR"


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


class StopRunError(DshError):
    """Raised out of a model's stream to stop the run at that call, not just fail the call.

    The loop logs the call's ``assistant/attempt``, closes the turn (``turn/end {error}``,
    checkpointed) and re-raises the error out of ``Agent.run_turn``, so the caller sees it
    where it called. Every other exception out of a model is a failed call (the turn ends
    ``error`` and nothing raises).
    """

    code = "STOPPED"


class ReplayDivergenceAtCallError(ReplayDivergenceError, StopRunError):
    """A replay bound to a test (``dsh_recording``) diverged: raised from the call that diverged."""

    code = "REPLAY_DIVERGED"


class OverrideError(ReplayError):
    """A replay override sidecar is malformed."""


class ScenarioError(DshError):
    """A scenario directory is malformed, or its replay did not match."""


class RecordFailedError(ScenarioError, StopRunError):
    """A model call failed while a test recorded its scenario: nothing will be written.

    ``code`` and ``failure_message`` are the model's failure (``AUTH``, ...), as logged.
    """

    def __init__(self, code: str, failure_message: str, text: str) -> None:
        self.code = code
        self.failure_message = failure_message
        super().__init__(text)


class ExportError(DshError):
    """An export could not be delivered (an OTLP endpoint refused it or was unreachable)."""


class HttpRequestError(DshError):
    """A request a local HTTP server refuses before answering it: malformed (400), a body over
    the limit (413), a head too large (431) or too slow (408)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class SkillFileError(DshError):
    """A ``SKILL.md`` whose front matter cannot be read or lacks what a skill needs."""


class TemporalError(DshError):
    """The Temporal integration (``dsh.temporal``) cannot do what was asked."""


class TemporalUnreachableError(TemporalError):
    """No Temporal server answers at the address given (the address is named)."""


class StoreNotSharedError(TemporalError):
    """A worker's store is not the one the task queue's other workers share (both named)."""
