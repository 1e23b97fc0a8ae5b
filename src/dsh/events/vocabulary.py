"""Event type names: the version-2 vocabulary we write and the legacy types we read."""

from __future__ import annotations

from typing import Final

TURN_START: Final = "turn/start"
TURN_END: Final = "turn/end"
STEP_START: Final = "step/start"
STEP_END: Final = "step/end"
USER_MESSAGE: Final = "user/message"
REQUEST_HEADER: Final = "request/header"
ASSISTANT_MESSAGE: Final = "assistant/message"
ASSISTANT_ATTEMPT: Final = "assistant/attempt"
TOOL_CALL: Final = "tool/call"
TOOL_RESULT: Final = "tool/result"
SUBAGENT_DESCRIPTOR: Final = "subagent/descriptor"
SESSION_END_SEED: Final = "session/end-seed"
SESSION_TITLE: Final = "session/title"
SESSION_REPAIRED: Final = "session/repaired"  # {droppedBytes}: a torn tail was cut off (written ignorable)
HOOK_INVOKED: Final = "hook/invoked"  # {turn, point, dialect, handlerId, matcher?}
HOOK_RESULT: Final = "hook/result"  # {turn, point, handlerId, decision, exitCode?, durationMs, ...}
APPROVAL_ASKED: Final = "approval/asked"  # {id, toolName, callId?, reason?}
APPROVAL_DECIDED: Final = "approval/decided"  # {id, outcome}
RUNTIME_CONTEXT_PLUGIN: Final = (
    "@deepseek-ai/dsh-system-prompt"  # source.plugin of a runtime-context snapshot
)
RUNTIME_CONTEXT_PREFIX: Final = "Current runtime context"  # how a snapshot's (and its "none") text begins
SANDBOX_MODE: Final = "sandbox/mode"  # {mode, source?}: the file policy from here on
APPROVAL_POLICY: Final = "approval/policy"  # {policy, source?}: the approval policy from here on
INBOX_SPLICED: Final = "agent/inbox/spliced"  # {target, start, inserted, removedCount?}: the inbox changed
TODO_WRITE: Final = "todo/write"  # {todos: [{content, status}]}: the session's task list from here on
MCP_MESSAGE: Final = (
    "mcp/message"  # {direction: toServer|toClient, message}: one JSON-RPC message `dsh mcp record` passed
)

COMPACTION_START: Final = "compaction/start"  # {compactionId, sourceCommandId?, turn}: the lock
COMPACTION_SUMMARY: Final = "compaction/summary"  # the summary and its span (dsh.events.compaction)
COMPACTION_END: Final = "compaction/end"  # {compactionId, sourceCommandId?, turn, error?}: the lock released
REQUEST_CONTEXT: Final = "request/context"  # {provider, model, contextWindow?}: the window from here on
COMMAND_RUN: Final = "command/run"  # {commandId, name, args, source}: a slash command (events.commands)
COMMAND_DONE: Final = "command/done"  # {commandId, kind, text, sourceEventSeq?}: its outcome
WORKSPACE_CHECKPOINT: Final = "workspace/checkpoint"  # {turn, manifest, files, skipped} (ignorable)
WORKSPACE_REWIND: Final = "workspace/rewind"  # {source, turn, restored, replaced, undo} (ignorable)

# Legacy (version 0) types: read, kept and exported verbatim, never written for new calls.
ASSISTANT_CHUNK: Final = "assistant/chunk"

SURFACE_TYPES: Final = frozenset({USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT})
"""Events that enter the model-visible history (they carry ``surfaceOp``)."""

WRITTEN_TYPES: Final = frozenset(
    {
        TURN_START,
        TURN_END,
        STEP_START,
        STEP_END,
        USER_MESSAGE,
        REQUEST_HEADER,
        ASSISTANT_MESSAGE,
        ASSISTANT_ATTEMPT,
        TOOL_CALL,
        TOOL_RESULT,
        SUBAGENT_DESCRIPTOR,
        SESSION_END_SEED,
        SESSION_TITLE,
        SESSION_REPAIRED,
        HOOK_INVOKED,
        HOOK_RESULT,
        APPROVAL_ASKED,
        APPROVAL_DECIDED,
        SANDBOX_MODE,
        APPROVAL_POLICY,
        INBOX_SPLICED,
        TODO_WRITE,
        MCP_MESSAGE,
        COMPACTION_START,
        COMPACTION_SUMMARY,
        COMPACTION_END,
        REQUEST_CONTEXT,
        COMMAND_RUN,
        COMMAND_DONE,
        WORKSPACE_CHECKPOINT,
        WORKSPACE_REWIND,
    }
)
"""The version-2 vocabulary dsh writes."""

LEGACY_TYPES: Final = frozenset(
    {
        ASSISTANT_CHUNK,
        "llm/retry",
        "llm/retry-started",
        "tool/code-dispatch-start",
        "tool/code-dispatch",
        "tool-workflow/run-start",
        "tool-workflow/agent-start",
        "tool-workflow/agent-end",
        "tool-workflow/run-end",
        "session/title-llm-request",
        "compaction/prune",
        "permission/preset",
        "agent-preset/selected",
        "feedback/record",
        "goal/change",
        "plan/mode",
        "schedule/change",
        "team/member",
        "team/message/delivered",
        "team/message/queued",
        "team/task",
        "web/deepseek-search-llm-request",
    }
)
"""The original's vocabulary (reference §1.4): known to our reader, opaque to projections."""

KNOWN_TYPES: Final = WRITTEN_TYPES | LEGACY_TYPES
"""Every type a version-2 reader accepts without ``ignorable: true``."""
