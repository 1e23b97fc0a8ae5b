"""``SessionTree``: the one lineage builder — a root session and every descendant, with each
child's kind, label, cut and status, and the child each delegating call started.

Built from any store (``SessionTree.load(store, root)``: the root and its descendants,
reading only those) or from sessions already loaded (``SessionTree.of``). Cycle-safe: a
``parentSession`` cycle (a store written by hand) shows each session once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from dsh.events import Event, SessionHeader
from dsh.events.descriptor import ChildKind, SubagentDescriptor, descriptor_kind, find_descriptor
from dsh.events.sparse import without_chunk_runs
from dsh.events.vocabulary import TOOL_CALL
from dsh.session.timeline.items import SUBAGENT_TOOLS
from dsh.session.timeline.read import data_of


class Loaded(Protocol):
    """A session read back (``dsh.store.LoadedSession`` is one)."""

    @property
    def header(self) -> SessionHeader:
        """The session's header (its id, parent, cwd)."""

    @property
    def inherited_event_count(self) -> int:
        """How many leading events it inherited from its parent (its cut)."""

    @property
    def events(self) -> Sequence[Event]:
        """Every event, the inherited prefix included."""


class Listed(Protocol):
    """A listed session (``dsh.store.SessionSummary`` is one)."""

    @property
    def header(self) -> SessionHeader:
        """The session's header."""


class TreeStore(Protocol):
    """What the tree reads of a store (every ``dsh.store.EventStore`` has it)."""

    async def load(self, session_id: str, *, streams: bool = True) -> Loaded:
        """The session ``session_id``, read back whole (``streams=False``: a surface read)."""

    async def children(self, session_id: str) -> Sequence[Listed]:
        """The sessions whose parent is ``session_id``."""


@dataclass(slots=True)
class TreeNode:
    """One session of the tree: ``kind`` ``spawn`` / ``fork`` (``None``: the top-level one)."""

    session: Loaded
    kind: ChildKind | None
    descriptor: SubagentDescriptor | None
    depth: int
    children: list[TreeNode] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.session.header.id

    @property
    def cut(self) -> int:
        return self.session.inherited_event_count

    @property
    def own_events(self) -> Sequence[Event]:
        return self.session.events[self.session.inherited_event_count :]

    @property
    def label(self) -> str | None:
        return self.descriptor.label if self.descriptor is not None else None


def _grow(
    loaded: Loaded, depth: int, kids: Mapping[str, list[Loaded]], nodes: dict[str, TreeNode]
) -> TreeNode:
    """The node of ``loaded`` and, below it, its children's not yet in ``nodes`` (a function,
    not a closure calling itself: that was a reference cycle holding every log)."""
    descriptor = find_descriptor(without_chunk_runs(loaded.events, loaded.inherited_event_count))
    node = TreeNode(loaded, descriptor_kind(loaded.header, descriptor), descriptor, depth)
    nodes[node.id] = node
    for child in _order(kids.get(node.id, [])):
        if child.header.id not in nodes:
            node.children.append(_grow(child, depth + 1, kids, nodes))
    return node


def _order(sessions: Sequence[Loaded]) -> list[Loaded]:
    return sorted(sessions, key=lambda s: (s.header.created_at, s.header.id))


@dataclass(slots=True)
class SessionTree:
    """``root`` and its descendants; ``by_call``: ``(parent, call id) → child``."""

    root: TreeNode
    nodes: dict[str, TreeNode]
    by_call: dict[tuple[str, str], str]

    @classmethod
    def of(cls, sessions: Mapping[str, Loaded], root: str) -> SessionTree:
        """The tree under ``root`` among ``sessions`` (each child under its ``parentSession``)."""
        kids: dict[str, list[Loaded]] = {}
        for loaded in sessions.values():
            parent = loaded.header.parent_session
            if parent is not None and parent in sessions and parent != loaded.header.id:
                kids.setdefault(parent, []).append(loaded)
        nodes: dict[str, TreeNode] = {}
        top = _grow(sessions[root], 0, kids, nodes)
        return cls(top, nodes, child_calls({sid: n.session for sid, n in nodes.items()}))

    @classmethod
    async def load(cls, store: TreeStore, root: str, *, streams: bool = True) -> SessionTree:
        """The tree under ``root`` in ``store``, reading only those sessions (``streams=False``:
        a surface read of each, ``EventStore.load``: for what shows no stream)."""
        sessions: dict[str, Loaded] = {root: await store.load(root, streams=streams)}
        queue = [root]
        while queue:
            for child in await store.children(queue.pop(0)):
                cid = child.header.id
                if cid not in sessions:
                    sessions[cid] = await store.load(cid, streams=streams)
                    queue.append(cid)
        return cls.of(sessions, root)

    def walk(self) -> Iterator[TreeNode]:
        """Every node, depth first, each child right under its parent."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def child_for(self, parent: str, call_id: str) -> str | None:
        """The child session the call ``call_id`` of ``parent`` started."""
        return self.by_call.get((parent, call_id))


def child_calls(sessions: Mapping[str, Loaded]) -> dict[tuple[str, str], str]:
    """``(parent, call id) → child`` over ``sessions``: from each child's descriptor, else (a
    child that logged none) by creation order against its parent's own delegating calls."""
    out: dict[tuple[str, str], str] = {}
    unkeyed: dict[str, list[Loaded]] = {}
    for sid, loaded in sessions.items():
        parent = loaded.header.parent_session
        if parent is None:
            continue
        descriptor = find_descriptor(without_chunk_runs(loaded.events, loaded.inherited_event_count))
        if descriptor is not None and descriptor.call_id is not None:
            out[(parent, descriptor.call_id)] = sid
        else:
            unkeyed.setdefault(parent, []).append(loaded)
    for parent, children in unkeyed.items():
        parent_log = sessions.get(parent)
        if parent_log is None:
            continue
        calls = [
            str(data_of(e).get("callId", ""))
            for e in without_chunk_runs(parent_log.events, parent_log.inherited_event_count)
            if e.type == TOOL_CALL and data_of(e).get("name") in SUBAGENT_TOOLS
        ]
        for call_id, child in zip(calls, _order(children), strict=False):
            out.setdefault((parent, call_id), child.header.id)
    return out
