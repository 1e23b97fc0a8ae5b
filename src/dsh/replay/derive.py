"""Script derivation: one entry per recorded model call, from a session's own events."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from dsh.errors import ReplayError
from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.events.compaction import instruction_message, summary_of
from dsh.events.history import Surface
from dsh.events.messages import Message, delivery_sender
from dsh.events.payloads import RequestHeader, request_header_of, stream_of
from dsh.events.vocabulary import (
    ASSISTANT_ATTEMPT,
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    INBOX_SPLICED,
    REQUEST_HEADER,
    STEP_END,
    STEP_START,
    TURN_END,
    TURN_START,
)
from dsh.model import SessionProgress
from dsh.replay.entries import Entry


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """What the recorded model saw at one call: the first ``history`` messages of surface
    ``surface`` (:attr:`Derived.surfaces`) and the ``request/header`` in force (if any)."""

    turn: int | None
    step: int | None
    history: int
    header: RequestHeader | None
    checked: bool = True
    """``False`` for a turn that failed before asking the model (nothing recorded to compare)."""
    surface: int = 0
    """Which of :attr:`Derived.surfaces` the history is a prefix of."""


@dataclass(slots=True)
class Derived:
    """A session's script and, call for call, what its recorded model saw."""

    entries: list[Entry] = field(default_factory=list)
    calls: list[RecordedCall] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    """Every message the recorded model saw, in the order they appeared."""
    received: list[tuple[str, SessionProgress]] = field(default_factory=list)
    """Each message another session queued here (its sender), and how far this session was."""
    surfaces: list[list[int]] = field(default_factory=lambda: [[]])
    """Histories as indexes into :attr:`messages`: one per surface generation (a compaction
    starts the next), and one per compaction's summary request (the replaced messages and
    its instruction); a generation only grows, so a call's history is a prefix of one."""

    current: int = 0
    """The surface the session's history ends on."""

    def __post_init__(self) -> None:
        if self.surfaces == [[]] and self.messages:  # given messages only: one surface of them all
            self.surfaces = [list(range(len(self.messages)))]

    def final(self) -> RecordedCall:
        """A call after the last: the whole history the session ends with."""
        return RecordedCall(None, None, len(self.surfaces[self.current]), None, surface=self.current)

    def history_of(self, call: RecordedCall) -> list[int]:
        """The indexes into :attr:`messages` of what the recorded model saw at ``call``."""
        return self.surfaces[call.surface][: call.history]


_STRUCTURE = frozenset({STEP_START, STEP_END, TURN_START, TURN_END})


def sender_of(message: object) -> str | None:
    """Who queued a message from outside the session's own steps (``dsh.events.messages.delivery_sender``)."""
    return delivery_sender(message)


def _has_finish(chunks: Sequence[Chunk]) -> bool:
    return bool(chunks) and chunks[-1].get("type") == "finish"


def _summary_call(data: dict[str, Any], where: str) -> Entry:
    raw = data.get("rawOutput")
    if not isinstance(raw, list):
        raise ReplayError(f"{where}: compaction/summary with llmStreamCall has no rawOutput")
    chunks: list[Chunk] = []
    for i, block in enumerate(raw):
        chunks.append({"type": "block-start", "index": i, "blockType": block.get("type")})
        chunks.append({"type": "block-end", "index": i, "block": block})
    if data.get("usage") is not None:
        chunks.append({"type": "usage", "usage": data["usage"]})
    chunks.append({"type": "finish", "reason": {"kind": "stop"}})
    return Entry("chunks", tuple(chunks))


def _summary_header(header: RequestHeader | None, max_tokens: int | None) -> RequestHeader | None:
    """The head a summary request sent: the conversation's, with the summary's output cap."""
    if header is None:
        return None
    config = header.get("config") or {}
    return cast(RequestHeader, {**header, "config": {**config, "maxTokens": max_tokens}})


def _settled_call(etype: str, data: dict[str, Any], chunks: tuple[Chunk, ...]) -> Entry:
    if _has_finish(chunks):
        return Entry("chunks", chunks)
    if etype == ASSISTANT_MESSAGE and data.get("interrupted"):
        return Entry("hang", chunks)
    failure = data.get("failure") or {}
    return Entry(
        "throw",
        chunks,
        code=str(failure.get("code", "UNKNOWN")),
        message=str(failure.get("message", "recorded failure")),
    )


def _failed_before_asking(
    data: object, history: int, header: RequestHeader | None, surface: int
) -> tuple[RecordedCall, Entry] | None:
    """A turn that ended ``error`` without a model call (e.g. its checkpoint failed) replays
    as one unchecked call that fails with the recorded error, so the live turn ends alike."""
    reason = data.get("reason") if isinstance(data, dict) else None
    if not isinstance(reason, dict) or reason.get("kind") != "error":
        return None
    failure = reason.get("failure") or reason.get("error") or {}
    failure = failure if isinstance(failure, dict) else {}
    turn = _int(data.get("turn")) if isinstance(data, dict) else None
    entry = Entry(
        "throw", (), code=str(failure.get("code", "UNKNOWN")), message=str(failure.get("message", ""))
    )
    return RecordedCall(turn, None, history, header, checked=False, surface=surface), entry


class _Seen:
    """What the recorded model saw: the surface folded (``dsh.events.history.Surface``, the one
    rule) into :attr:`Derived.messages` and :attr:`Derived.surfaces`."""

    def __init__(self, out: Derived) -> None:
        self._out = out
        self._surface = Surface()
        self._index: dict[int, int] = {}  # node seq -> index into out.messages
        self.current = 0

    def feed(self, event: Event) -> None:
        surface, out = self._surface, self._out
        generation = surface.generation
        if not surface.feed(event):
            return
        position = surface.seqs.index(event.seq) if surface.generation != generation else -1
        message = surface.messages[position]
        if message is not None:
            self._index[event.seq] = len(out.messages)
            out.messages.append(message)
        if surface.generation == generation:
            if message is not None:
                out.surfaces[self.current].append(self._index[event.seq])
            return
        out.surfaces.append(
            [self._index[s] for s, m in zip(surface.seqs, surface.messages, strict=True) if m]
        )
        self.current = len(out.surfaces) - 1

    def summary_request(self, shadowed: Sequence[int]) -> int:
        """A surface for a compaction's summary request: the replaced messages, then the
        instruction (its text is each harness's own: ``dsh.replay.views`` compares its kind)."""
        out = self._out
        out.messages.append(instruction_message())
        found = [self._index[s] for s in shadowed if s in self._index]
        out.surfaces.append([*found, len(out.messages) - 1])
        return len(out.surfaces) - 1


def derive_script(events: Sequence[Event], where: str) -> list[Entry]:
    """Derive the replay script of ``events`` — already sliced at the inherited cut."""
    return derive(events, where).entries


def _next_step_started(events: Sequence[Event], index: int) -> int:
    """1 when ``events[index]`` lies between a ``step/end`` and the ``step/start`` of the
    same turn (the original claims a step's inbox at the previous step's end), else 0."""

    def nearest(positions: range) -> str | None:  # walked to the nearest one: no copy of the log
        return next((events[i].type for i in positions if events[i].type in _STRUCTURE), None)

    before, after = nearest(range(index - 1, -1, -1)), nearest(range(index + 1, len(events)))
    return int(before == STEP_END and after == STEP_START)


def _int(value: object) -> int | None:
    return value if type(value) is int else None


def derive(
    events: Sequence[Event], where: str, *, strict: bool = True, inherited: Sequence[Event] = ()
) -> Derived:
    """Derive the script of ``events`` (already sliced at the inherited cut) and what the
    recorded model saw at each call.

    Version 2: each settlement with a ``stream`` is one entry; an attempt whose stream has
    no ``finish`` becomes a ``throw`` with its recorded failure; an interrupted message
    (cancelled mid-stream) becomes a ``hang`` serving its partial chunks. Version 0:
    ``assistant/chunk`` events grouped by ``(turn, step)``, a group closing at its
    ``finish`` or when the key changes (a group without ``finish`` is an error). Both
    kinds may appear in one log; each is one call, in log order. ``strict=False`` keeps a
    group without ``finish`` as a call instead of refusing it (for a primary script an
    override replaces whole: only what the recorded model saw is used then). ``inherited``:
    the events before the cut — they make no calls, but a fork child's model saw them.
    """
    out = Derived()
    seen = _Seen(out)
    for event in inherited:
        seen.feed(event)
    script = out.entries
    group: list[Chunk] = []
    key: tuple[Any, Any] | None = None
    header: RequestHeader | None = None

    called = False  # whether the turn in progress asked the model
    steps = turns_ended = 0

    def call(
        turn: object, step: object, surface: int | None = None, asked: RequestHeader | None = None
    ) -> None:
        nonlocal called
        called = True
        at = seen.current if surface is None else surface
        sent = header if asked is None else asked
        out.calls.append(RecordedCall(_int(turn), _int(step), len(out.surfaces[at]), sent, surface=at))

    def close() -> None:
        nonlocal group, key
        if group:
            if strict and not _has_finish(group):
                raise ReplayError(
                    f"{where}: model call turn {key[0] if key else '?'} step "
                    f"{key[1] if key else '?'} ended without a finish chunk; it needs a "
                    "replay.override.json sidecar"
                )
            script.append(Entry("chunks", tuple(group)))
        group = []
        key = None

    for index, event in enumerate(events):
        etype = event.type
        if etype == ASSISTANT_CHUNK:
            data = event.data
            k = (data.get("turn"), data.get("step"))
            if group and k != key:
                close()
            if not group:
                call(*k)
            key = k
            group.append(data["chunk"])
            if data["chunk"].get("type") == "finish":
                close()
        elif etype in (ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT):
            stream = stream_of(event)
            if stream is not None:  # a v0 message has none: its chunks made the call
                close()
                call(event.data.get("turn"), event.data.get("step"))
                script.append(_settled_call(etype, event.data, tuple(stream["chunks"])))
        elif etype == "compaction/summary":
            close()
            summary = summary_of(event)
            if summary is not None and summary.get("llmStreamCall") is True:
                asked = _summary_header(header, summary.get("maxTokens"))
                call(None, None, seen.summary_request(summary["shadowedSeqs"]), asked)
                script.append(_summary_call(event.data, where))
        elif etype == REQUEST_HEADER:
            header = request_header_of(event)
        elif etype == TURN_START:
            close()
            called = False
        elif etype == STEP_START:
            steps += 1
        elif etype == INBOX_SPLICED and isinstance(event.data, dict):
            # Spliced between a step's end and the next step's start: the recording had claimed
            # that step's messages already, so the message arrived after the next step began.
            point = SessionProgress(steps + _next_step_started(events, index), turns_ended)
            for message in event.data.get("inserted", ()):
                sender = sender_of(message)
                if sender is not None:
                    out.received.append((sender, point))
        elif etype == TURN_END:
            turns_ended += 1
            failed = (
                None
                if called
                else _failed_before_asking(event.data, len(out.surfaces[seen.current]), header, seen.current)
            )
            if failed is not None:
                out.calls.append(failed[0])
                script.append(failed[1])
        if event.surface_op is not None:  # only surface events show the model anything
            seen.feed(event)
    close()
    out.current = seen.current
    return out
