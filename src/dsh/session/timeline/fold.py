"""``Timeline``: the incremental fold from events (and stream chunks) to items.

Fed the same way live (a feed listener's ``event(session_id, event)`` / ``chunk(...)``) and
from history (``read_from`` or the store tail, event by event): each event costs O(1) —
nothing is re-derived from the session's start. The fold owns call ↔ result pairing, the
open turn, usage and status per session, and the child each delegating call started
(learned from the child's descriptor, or given by a :class:`~.tree.SessionTree`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.events.descriptor import descriptor_kind, kind_or_default, parse_descriptor
from dsh.events.fork import ended_turn
from dsh.events.header import SessionHeader
from dsh.events.messages import joined_text
from dsh.events.vocabulary import (
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    ASSISTANT_ATTEMPT,
    ASSISTANT_MESSAGE,
    COMPACTION_END,
    COMPACTION_START,
    COMPACTION_SUMMARY,
    HOOK_RESULT,
    REQUEST_HEADER,
    SESSION_END_SEED,
    SESSION_TITLE,
    STEP_START,
    SUBAGENT_DESCRIPTOR,
    TODO_WRITE,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
)
from dsh.session.timeline import read
from dsh.session.timeline.items import (
    Approval,
    ChildEnded,
    ChildStarted,
    Compaction,
    Cut,
    Delta,
    Item,
    Prompt,
    Reasoning,
    Title,
    Todos,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnStart,
)
from dsh.session.timeline.state import Opened, SessionState, SurfaceNode, next_open_turn, opened_turn
from dsh.session.usage import Ledger, add_usage, call_usage, is_model_call


class Timeline:
    """Items of one or more sessions, one event at a time.

    ``begin(session_id, cut=, header=)`` says where a session's inherited prefix ends and who
    it is (optional: an unknown session starts with cut 0). ``children``: ``(parent, call
    id) → child`` known in advance (a history fold, from :class:`~.tree.SessionTree`).
    """

    def __init__(self, children: Mapping[tuple[str, str], str] | None = None) -> None:
        self.children: dict[tuple[str, str], str] = dict(children or {})
        self._sessions: dict[str, SessionState] = {}
        self._headers: dict[str, SessionHeader] = {}

    def begin(self, session_id: str, *, cut: int = 0, header: SessionHeader | None = None) -> SessionState:
        """Start (or restart) the fold of ``session_id``."""
        state = self._sessions[session_id] = SessionState(cut=cut)
        if header is not None:
            self._headers[session_id] = header
        return state

    def state(self, session_id: str) -> SessionState:
        """What the fold knows of ``session_id`` (a fresh state for a session never fed)."""
        state = self._sessions.get(session_id)
        return state if state is not None else self.begin(session_id)

    def spent(self) -> Ledger:
        """Every own model call of every session fed so far (each once: own events only)."""
        total = Ledger()
        for state in self._sessions.values():
            total.merge(state.ledger)
        return total

    def is_child(self, session_id: str) -> bool:
        """Whether ``session_id`` logged a descriptor (a subagent's child) in this fold."""
        state = self._sessions.get(session_id)
        return state is not None and state.descriptor is not None

    def chunk(self, session_id: str, chunk: Chunk) -> Delta | None:
        """The text or reasoning delta of a stream chunk (``None`` for any other chunk)."""
        if chunk["type"] == "text-delta":
            return Delta(session_id, "text", chunk["text"])
        if chunk["type"] == "reasoning-delta":
            return Delta(session_id, "reasoning", chunk["text"])
        return None

    def feed(self, session_id: str, event: Event) -> list[Item]:
        """The items ``event`` of ``session_id`` makes (``[]`` for one that shows nothing)."""
        state = self.state(session_id)
        state.events += 1
        state.last_time = event.time
        inherited = event.seq < state.cut
        etype = event.type
        if event.surface_op == "append":
            self._node(state, event)
        if not inherited and is_model_call(event):
            state.ledger.add(state.route, call_usage(event), event.seq, event.time)
        if etype == TURN_START:
            turn = state.open_turn = opened_turn(event)  # next_open_turn's rule for a start
            state.pending.clear()
            for seq in state.unturned:
                if seq in state.surface:
                    state.surface[seq].turns = (turn, turn)
            state.unturned.clear()
            return [TurnStart(session_id, event, turn, inherited)]
        if etype == USER_MESSAGE:
            compaction_id = read.checkpoint_id(event)
            if compaction_id is not None:
                return [self._checkpoint(session_id, state, event, compaction_id, inherited)]
            message = read.user_message(session_id, event, inherited)
            if isinstance(message, Prompt):
                if state.first_any_prompt is None:
                    state.first_any_prompt = message.text
                if state.first_prompt is None and not inherited:
                    state.first_prompt = message.text
            return [message]
        if etype == ASSISTANT_MESSAGE:
            answer = read.answer(session_id, event, inherited)
            self._settled(state, answer.usage, inherited)
            reasoning = read.reasoning_text(event)
            return [Reasoning(session_id, event, reasoning, inherited), answer] if reasoning else [answer]
        if etype == ASSISTANT_ATTEMPT:
            attempt = read.attempt(session_id, event, inherited)
            self._settled(state, attempt.usage, inherited)
            return [attempt]
        if etype == TOOL_CALL:
            return [self._call(session_id, state, event, inherited)]
        if etype == TOOL_RESULT:
            return self._result(session_id, state, event, inherited)
        if etype == TURN_END:
            if event.seq == state.cut - 1:
                state.branch_turn = ended_turn(event)
            return self._turn_end(session_id, state, event, inherited)
        return self._other(session_id, state, event, inherited)

    def _node(self, state: SessionState, event: Event) -> None:
        turn = state.open_turn
        state.surface[event.seq] = SurfaceNode(
            (turn, turn) if turn is not None else None, read.surface_message(event)
        )
        if turn is None:
            state.unturned.append(event.seq)

    def _checkpoint(
        self, session_id: str, state: SessionState, event: Event, compaction_id: str, inherited: bool
    ) -> Compaction:
        """A checkpoint: the span it replaces comes off the surface, it goes on in its place."""
        opened = state.compacting.pop(compaction_id, None) or Opened(None)
        summary = opened.summary
        seqs = summary["shadowedSeqs"] if summary is not None else list((event.source_event_seqs or ())[2:])
        nodes = [(seq, state.surface.pop(seq, None)) for seq in seqs]
        spans = [n.turns for _, n in nodes if n is not None and n.turns is not None]
        turns = (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None
        state.surface[event.seq] = SurfaceNode(turns, read.surface_message(event))
        if not inherited:
            state.compactions += 1
        originals = [(seq, n.message if n is not None else None) for seq, n in nodes]
        return read.compaction(
            session_id, event, compaction_id, opened.turn, summary, originals, turns, inherited
        )

    def _compaction_event(
        self, session_id: str, state: SessionState, event: Event, inherited: bool
    ) -> list[Item]:
        """``compaction/start`` and ``/summary`` are remembered; a failed ``/end`` is an item."""
        if event.type == COMPACTION_START:
            started = read.compaction_started(event)
            if started is not None:
                state.compacting[started[0]] = Opened(started[1])
            return []
        if event.type == COMPACTION_SUMMARY:
            summary = read.compaction_summary(event)
            if summary is not None:
                opened = state.compacting.setdefault(str(summary.get("compactionId", "")), Opened(None))
                opened.summary = summary
            return []
        failed = read.failed_compaction(session_id, event, inherited)
        started = read.compaction_started(event)
        if started is not None:
            state.compacting.pop(started[0], None)
        if failed is None:
            return []
        if not inherited:
            state.failed_compactions += 1
        return [failed]

    def _settled(self, state: SessionState, usage: object, inherited: bool) -> None:
        if isinstance(usage, dict):
            add_usage(state.turn_usage, usage)
            if not inherited:
                add_usage(state.usage, usage)

    def _call(self, session_id: str, state: SessionState, event: Event, inherited: bool) -> ToolCall:
        data = read.tool_call_of(event)
        assert data is not None
        parsed, _ = read.parse_arguments(data["arguments"])
        call_id, name = data["callId"], data["name"]
        child = self.children.get((session_id, call_id))
        call = ToolCall(session_id, event, call_id, name, data["arguments"], parsed, child, inherited)
        state.calls[call_id] = call
        state.pending.add(call_id)
        return call

    def _result(self, session_id: str, state: SessionState, event: Event, inherited: bool) -> list[Item]:
        block = read.tool_result_of(event)
        if block is None:
            return []
        call_id = block["toolCallId"]
        state.pending.discard(call_id)
        child = self.children.get((session_id, call_id))
        call = state.calls.get(call_id)
        if call is not None and call.child is None and child is not None:
            call = state.calls[call_id] = replace(call, child=child)  # learned since the call
        text = joined_text(block["content"])
        return [
            ToolResult(
                session_id, event, call_id, text, tuple(block["content"]), block["isError"],
                call, child, inherited,
            )
        ]  # fmt: skip

    def _turn_end(self, session_id: str, state: SessionState, event: Event, inherited: bool) -> list[Item]:
        reason = read.turn_end_kind(event)
        data = read.data_of(event)
        turn = read.turn_number(event)
        why = data.get("reason")
        failure = why.get("failure") if isinstance(why, dict) else None
        failure = failure if isinstance(failure, dict) else None
        state.open_turn = next_open_turn(state.open_turn, event)
        state.last_reason = reason
        usage, state.turn_usage = state.turn_usage, {}
        end: list[Item] = [
            TurnEnd(
                session_id,
                event,
                turn,
                reason,
                failure if isinstance(failure, dict) else None,
                usage,
                inherited,
            )
        ]
        if state.descriptor is not None:
            end.append(ChildEnded(session_id, event, reason))
        return end

    def _other(self, session_id: str, state: SessionState, event: Event, inherited: bool) -> list[Item]:
        etype = event.type
        if etype == REQUEST_HEADER:
            header = read.request(session_id, event, inherited)
            if header.model is not None:
                state.model = header.model
            state.route = (header.model, header.provider)
            return [header]
        if etype == STEP_START:
            return [read.step(session_id, event, inherited)]
        if etype == HOOK_RESULT:
            return [read.hook(session_id, event, inherited)]
        if etype == SESSION_TITLE:
            title = read.title_of(event)
            if title is None:
                return []
            state.title = title
            return [Title(session_id, event, title, inherited)]
        if etype == SESSION_END_SEED:
            return [Cut(session_id, event)]
        if etype == TODO_WRITE:
            todos = read.todos_of(event)
            return [] if todos is None else [Todos(session_id, event, tuple(todos), inherited)]
        if etype == SUBAGENT_DESCRIPTOR and not inherited and state.descriptor is None:
            return self._descriptor(session_id, state, event)
        if etype in (APPROVAL_ASKED, APPROVAL_DECIDED):
            return [self._approval(session_id, state, event, inherited)]
        if etype in (COMPACTION_START, COMPACTION_SUMMARY, COMPACTION_END):
            return self._compaction_event(session_id, state, event, inherited)
        return []

    def _descriptor(self, session_id: str, state: SessionState, event: Event) -> list[Item]:
        descriptor = parse_descriptor(event)
        if descriptor is None:
            return []
        state.descriptor = descriptor
        if descriptor.parent_session is not None and descriptor.call_id is not None:
            self.children.setdefault((descriptor.parent_session, descriptor.call_id), session_id)
        header = self._headers.get(session_id)
        kind = descriptor_kind(header, descriptor) if header is not None else descriptor.kind
        return [
            ChildStarted(
                session_id, event, kind_or_default(kind), descriptor.label, state.cut,
                descriptor.parent_session, descriptor.call_id, descriptor.provider,
            )
        ]  # fmt: skip

    def _approval(self, session_id: str, state: SessionState, event: Event, inherited: bool) -> Approval:
        if event.type == APPROVAL_ASKED:
            asked = read.approval_asked(session_id, event, inherited)
            state.asked[asked.request_id] = asked
            return asked
        decided = read.approval_decided(session_id, event, inherited)
        question = state.asked.pop(decided.request_id, None)
        if question is None:
            return decided
        return replace(
            decided, tool_name=question.tool_name, call_id=question.call_id, reason=question.reason
        )
