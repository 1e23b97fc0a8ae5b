"""The read model: every front-end renders these ``Item``s, folded once from the log.

``Timeline`` (the incremental fold, live or from history), ``SessionTree`` (the one
lineage builder) and the item types. See ``dsh/session/README.md``.
"""

from dsh.session.timeline.fold import Timeline
from dsh.session.timeline.items import (
    RELAYED_SOURCES,
    SUBAGENT_TOOLS,
    Answer,
    Approval,
    Attempt,
    CallPart,
    ChildEnded,
    ChildStarted,
    Compaction,
    Cut,
    Delta,
    Hook,
    Item,
    Part,
    Prompt,
    Reasoning,
    Relayed,
    Request,
    Step,
    Title,
    Todos,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnStart,
)
from dsh.session.timeline.state import RUNNING_WINDOW_MS, SessionState, Status, next_open_turn
from dsh.session.timeline.tree import SessionTree, TreeNode, child_calls

__all__ = [
    "RELAYED_SOURCES",
    "RUNNING_WINDOW_MS",
    "SUBAGENT_TOOLS",
    "Answer",
    "Approval",
    "Attempt",
    "CallPart",
    "ChildEnded",
    "ChildStarted",
    "Compaction",
    "Cut",
    "Delta",
    "Hook",
    "Item",
    "Part",
    "Prompt",
    "Reasoning",
    "Relayed",
    "Request",
    "SessionState",
    "SessionTree",
    "Status",
    "Step",
    "Timeline",
    "Title",
    "Todos",
    "ToolCall",
    "ToolResult",
    "TreeNode",
    "TurnEnd",
    "TurnStart",
    "child_calls",
    "next_open_turn",
]
