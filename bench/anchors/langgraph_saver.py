"""W1 anchor: LangGraph's ``SqliteSaver`` in its own idiom.

A ``StateGraph(MessagesState)`` with one model node, compiled with a ``SqliteSaver``; each
turn is ``graph.invoke({"messages": [HumanMessage]}, durability="sync")`` and the node
returns the final ``AIMessage`` (the stream is not persisted). LangGraph writes three
checkpoints a turn (input, start, after the node), each holding the whole message history.
Fork = read the state of the checkpoint after turn T/2 (time travel) and ``update_state`` a
new thread with it. Cold load = ``graph.get_state`` in a fresh process.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from bench.common import Conversation, dir_size, now
from bench.w1_types import W1Run

THREAD = "parent"
CHILD = "child"
DB = "langgraph.db"


def _graph(conn: sqlite3.Connection) -> Any:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    replies: dict[str, Any] = {}

    def model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [replies.pop("next")]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    graph.bench_replies = replies  # type: ignore[attr-defined]
    return graph


class LangGraphSaver:
    key = "langgraph-sqlite"
    label = "LangGraph SqliteSaver (3 checkpoints a turn, each the whole history)"

    def run(self, root: Path, conv: Conversation) -> W1Run:
        from langchain_core.messages import AIMessage, HumanMessage

        root.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(root / DB, check_same_thread=False)
        graph = _graph(conn)
        replies = graph.bench_replies
        config: Any = {"configurable": {"thread_id": THREAD}}
        per_turn: list[float] = []
        half = conv.turns // 2
        half_config: Any = None
        for i in range(conv.turns):
            human = HumanMessage(content=conv.users[i], id=f"u{i}")
            replies["next"] = AIMessage(content=conv.reply(i), id=f"a{i}")
            t0 = now()
            graph.invoke({"messages": [human]}, config, durability="sync")
            per_turn.append(now() - t0)
            if i + 1 == half:
                half_config = graph.get_state(config).config
        conn.close()
        size = dir_size(root)
        conn = sqlite3.connect(root / DB, check_same_thread=False)
        graph = _graph(conn)
        t0 = now()
        values = graph.get_state(half_config).values
        graph.update_state({"configurable": {"thread_id": CHILD}}, values)
        fork_s = now() - t0
        conn.close()
        return W1Run(per_turn, fork_s, dir_size(root) - size, size)


def load(root: Path) -> int:
    conn = sqlite3.connect(root / DB, check_same_thread=False)
    graph = _graph(conn)
    state = graph.get_state({"configurable": {"thread_id": THREAD}})
    count = len(state.values["messages"])
    conn.close()
    return count


def preload() -> None:
    """Import LangGraph before a cold load is timed."""
    import langchain_core.messages  # noqa: F401
    import langgraph.checkpoint.sqlite
    import langgraph.graph  # noqa: F401
