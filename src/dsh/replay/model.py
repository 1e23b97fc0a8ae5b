"""ReplayModel: serves each live session the script recorded for it — no key, no network."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dsh.errors import (
    ModelError,
    ReplayDivergenceAtCallError,
    ReplayDivergenceError,
    ScriptExhaustedError,
    ScriptNotConsumedError,
    UnrecordedSessionError,
)
from dsh.events import Event
from dsh.events.chunks import Chunk
from dsh.events.descriptor import find_descriptor
from dsh.events.messages import Message
from dsh.model import ModelRequest, SessionProgress
from dsh.replay.derive import Derived, derive, sender_of
from dsh.replay.derive import RecordedCall as SeenCall
from dsh.replay.entries import Entry
from dsh.replay.fidelity import Divergence, SessionCheck, Tolerances, recorded_cwd_spellings
from dsh.replay.fixtures import SnapshotFixtures
from dsh.replay.placeholders import (
    EVERYTHING,
    Needs,
    has_placeholder,
    needs_of,
    request_corpus,
    resolve_placeholders,
    with_live_cwd,
    with_live_ids,
)
from dsh.replay.served import RecordedCall, recorded_calls
from dsh.replay.wire_request import WireProjection, recorded_over_wire, wire_derived
from dsh.store.bulk import HeapHold
from dsh.tools import ToolOutput

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@dataclass(slots=True)
class SessionScript:
    """The recorded calls of one session, with the identity used to bind a live session."""

    label: str
    recorded_id: str
    created_at: int
    entries: list[Entry]
    parent_session: str | None = None
    call_id: str | None = None
    cursor: int = 0
    bound_to: str | None = field(default=None)
    claimed: bool = False
    """A new live session took this script's recorded id (``SessionIds``) and binds to it."""
    check: SessionCheck | None = None
    """Compares each live request with the recorded one; ``None``: nothing to compare."""
    wire: WireProjection | None = None
    """Set when the recording saw only the wire: live requests are checked through it."""
    divergence: Divergence | None = None
    tolerated: list[Divergence] = field(default_factory=list)
    received: list[tuple[str, SessionProgress]] = field(default_factory=list)
    """What other sessions queued here, in order, and how far this session was then."""
    foreign: list[int] = field(default_factory=list)
    """Per call: how many messages from other sessions its recorded history held."""
    turns: list[int | None] = field(default_factory=list)
    """Per call: the recorded turn it belongs to."""
    recorded_cwd: tuple[str, ...] = ("{{cwd}}",)
    """How the recording spells its workspace (``{{cwd}}``, and a literal header ``cwd``):
    served entries name the live workspace there instead."""
    tool_calls: dict[str, RecordedCall] = field(default_factory=dict)
    """The recorded tool calls and results by call id (served for tools that cannot re-run)."""

    def needs_at(self, k: int) -> Needs:
        """What serving entry ``k`` takes from the live run, found in its JSON when it is
        served (once: a call serves its entry once), not for every entry when the replay opens."""
        return needs_of(self.entries[k].chunks, self.recorded_cwd)


def delegation_call_id(own_events: Sequence[Event]) -> str | None:
    """The tool ``callId`` recorded in a child's ``subagent/descriptor``, if any."""
    descriptor = find_descriptor(own_events)
    return descriptor.call_id if descriptor is not None else None


def _foreign_counts(derived: Derived) -> Callable[[SeenCall], int]:
    """How many messages from other sessions each call's recorded history holds: a running
    count per surface, so every call costs O(1) however long the session."""
    senders = [sender_of(m) is not None for m in derived.messages]
    sums: dict[int, list[int]] = {}

    def count(call: SeenCall) -> int:
        running = sums.get(call.surface)
        if running is None:
            running = [0]
            for i in derived.surfaces[call.surface]:
                running.append(running[-1] + senders[i])
            sums[call.surface] = running
        return running[call.history]

    return count


def script_for(
    label: str,
    recorded_id: str,
    created_at: int,
    events: Sequence[Event],
    inherited_event_count: int,
    parent_session: str | None = None,
    *,
    version: int = 2,
    tolerances: Tolerances | None = None,
    cwd: str | Path | None = None,
    strict: bool = True,
    recorded_cwd: str | None = None,
) -> SessionScript:
    """Derive a session's script from ``events[inherited_event_count:]`` — the slice —
    with the check of what its recorded model saw at each call (``tolerances=None``: no
    check). ``strict=False``: a call without ``finish`` is not refused (an override
    replaces the entries)."""
    own = events[inherited_event_count:]
    derived = derive(own, label, strict=strict, inherited=events[:inherited_event_count])
    check = None
    wire = WireProjection() if recorded_over_wire(derived) else None
    if tolerances is not None:
        seen = wire_derived(derived) if wire is not None else derived
        check = SessionCheck(
            label, recorded_id, seen, version=version, tolerances=tolerances, cwd=cwd,
            recorded_cwd=recorded_cwd,
        )  # fmt: skip
    foreign = _foreign_counts(derived)
    return SessionScript(
        label=label,
        recorded_id=recorded_id,
        created_at=created_at,
        entries=derived.entries,
        parent_session=parent_session,
        call_id=delegation_call_id(own),
        check=check,
        wire=wire,
        received=derived.received,
        foreign=[foreign(c) for c in derived.calls],
        turns=[c.turn for c in derived.calls],
        recorded_cwd=(*recorded_cwd_spellings(recorded_cwd), "{{cwd}}"),
        tool_calls=recorded_calls(own),
    )


class ReplayModel:
    """A ``Model`` serving recorded scripts.

    The primary script serves the top-level session. A child binds, at its first call, to
    the recorded child with the same recorded parent and tool ``callId``; recordings without
    that identity (the original's) fall back to ``createdAt``/id order, each new live
    session claiming the next unclaimed script. Errors name the scenario and session.
    """

    def __init__(
        self,
        primary: SessionScript,
        children: Sequence[SessionScript] = (),
        *,
        scenario: str = "replay",
        provider: str = "replay",
        cwd: Path | None = None,
        model_name: str | None = None,
        fixtures: SnapshotFixtures | None = None,
    ) -> None:
        self.primary = primary
        self._model_name = model_name
        self.fixtures = fixtures
        """The original's snapshot fixtures (``dsh.replay.fixtures``) when replaying its recording."""
        self.children = sorted(children, key=lambda s: (s.created_at, s.recorded_id))
        self.scenario = scenario
        self._provider = provider
        self._cwd = cwd
        self._live: dict[str, SessionScript] = {}
        self._claims: dict[str, SessionScript] = {}
        """Recorded id → its script, claimed by a new live session under that id, not bound yet."""
        self.notes: list[str] = []
        """What the replay says once (recorded ids already taken in the target store)."""
        self.on_note: Callable[[str], None] | None = None
        self.errors: list[Exception] = []
        self._waiters: list[asyncio.Future[None]] = []
        self.divergences: list[Divergence] = []
        """Every untolerated divergence, in the order they happened (the first fails the run)."""
        self.accept_hint: str | None = None
        """Set (``dsh_recording``): a divergence stops the run — raised from the call that
        diverged, and from every later call, as a ``ReplayDivergenceAtCallError`` whose
        message ends with this hint (how to accept the change)."""
        self._heap: HeapHold | None = None

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model_name(self) -> str | None:
        """The model the recording asked for (a ``NamedModel``: ``Agent.create`` needs no config)."""
        return self._model_name

    @property
    def scripts(self) -> list[SessionScript]:
        return [self.primary, *self.children]

    def hold_heap(self, hold: HeapHold) -> None:
        """Keep the heap frozen (``dsh.store.bulk.freeze_heap``: what the open built) until
        :meth:`aclose`."""
        self._heap = hold

    async def aclose(self) -> None:
        """Release the frozen heap, if held (the scripts stay readable for the checks after
        the run)."""
        if self._heap is not None:
            self._heap.release()

    def _fail(self, exc: Exception) -> Exception:
        self.errors.append(exc)
        return exc

    # -- recorded ids (dsh.model.SessionIds) --------------------------------------------

    def session_id_for(self, parent_session: str | None, call_id: str | None) -> str | None:
        """The recorded id of the script a new session (top-level: ``parent_session=None``;
        else the child of that live session started by ``call_id``) will be bound to, claimed
        for it — only a UUID-shaped id (the original's placeholders and random ids, ours)."""
        if parent_session is None:
            free = self.primary.bound_to is None and not self.primary.claimed
            script = self.primary if free else None
        else:
            script = self._pick_child(self._recorded_parent(parent_session), call_id)
        if script is None or not _UUID.fullmatch(script.recorded_id) or script.recorded_id in self._claims:
            return None
        script.claimed = True
        self._claims[script.recorded_id] = script
        return script.recorded_id

    def id_taken(self, session_id: str) -> None:
        """The claimed id is taken in the target store: the session runs under a fresh id
        (ids are normalized in every comparison), and the replay says so — once."""
        script = self._claims.pop(session_id, None)
        if script is not None:
            script.claimed = False
        if not self.notes:
            note = (
                f"scenario {self.scenario}: recorded session id {session_id} is already in the target "
                "store; replaying under fresh session ids (normalized in the comparison)"
            )
            self.notes.append(note)
            if self.on_note is not None:
                self.on_note(note)

    def _recorded_parent(self, live_parent: str) -> str | None:
        parent = self._live.get(live_parent) or self._claims.get(live_parent)
        return parent.recorded_id if parent is not None else None

    def _bind(self, request: ModelRequest) -> SessionScript:
        live = request.session_id
        script = self._live.get(live)
        if script is not None:
            return script
        claimed = self._claims.pop(live, None)
        if claimed is not None:
            script = claimed
        elif request.delegation is None and request.parent_session is not None:
            script = self._bind_child(live, request.parent_session, None)  # a child started from code
        elif request.delegation is None:
            if self.primary.bound_to is not None or self.primary.claimed:
                raise self._fail(
                    UnrecordedSessionError(
                        f"scenario {self.scenario}: a second top-level session {live} has no recording"
                    )
                )
            script = self.primary
        else:
            script = self._bind_child(live, request.delegation.parent_session, request.delegation.call_id)
        script.bound_to = live
        self._live[live] = script
        return script

    def _bind_child(self, live: str, live_parent: str, call_id: str | None) -> SessionScript:
        """The recorded child of the live parent's recorded session started by ``call_id``
        (``None``: a child started from code, the next such child of that parent by
        ``createdAt``), else the next child recorded without a delegation identity."""
        script = self._pick_child(self._recorded_parent(live_parent), call_id)
        if script is not None:
            return script
        raise self._fail(
            UnrecordedSessionError(
                f"scenario {self.scenario}: no recorded child session for live session {live} "
                f"(parent {live_parent}, call {call_id}); re-record the scenario"
            )
        )

    def _pick_child(self, recorded_parent: str | None, call_id: str | None) -> SessionScript | None:
        free = [s for s in self.children if s.bound_to is None and not s.claimed]
        for script in free:
            if script.call_id == call_id and script.parent_session == recorded_parent:
                return script
        return next((s for s in free if s.call_id is None), None)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        if self.accept_hint is not None and self.divergences:  # nothing valid follows a divergence
            raise self._divergence_error(self.divergences[0])
        if self._heap is not None:  # what the run built so far is walked by no later collection
            self._heap.refreeze()
        script = self._bind(request)
        if script.cursor >= len(script.entries):
            raise self._fail(
                ScriptExhaustedError(
                    f"scenario {self.scenario}: script {script.label} (session {script.recorded_id}) is "
                    f"exhausted after {len(script.entries)} call(s); re-record the scenario"
                )
            )
        self._check(script, request)
        entry = script.entries[script.cursor]
        needs = script.needs_at(script.cursor)
        script.cursor += 1
        chunks: Sequence[Chunk] = entry.chunks
        if needs.placeholders and has_placeholder(chunks):
            chunks = resolve_placeholders(list(chunks), request_corpus(request.messages))
            needs = EVERYTHING  # what the live request put in is looked at as before
        if script.check is not None and needs.ids:
            chunks = with_live_ids(list(chunks), script.check.live_ids())
        if self._cwd is not None and needs.cwd:
            chunks = with_live_cwd(list(chunks), script.recorded_cwd, str(self._cwd))
        for chunk in chunks:
            yield chunk
        if entry.kind == "throw":
            raise ModelError(entry.code, entry.message)
        if entry.kind == "hang":
            if entry.ready_file is not None:
                ready = Path(entry.ready_file)
                if not ready.is_absolute() and self._cwd is not None:
                    ready = self._cwd / ready
                ready.write_bytes(b"")
            await asyncio.Event().wait()

    def _check(self, script: SessionScript, request: ModelRequest) -> None:
        """Fail (or, tolerated, note) where the live request differs from the recorded one."""
        if script.check is None:
            return
        seen = script.wire(request) if script.wire is not None else request
        found = script.check.check(script.cursor, seen)
        if found is None:
            return
        if found.tolerated_by is not None:
            script.tolerated.append(found)
            return
        script.divergence = found
        self.divergences.append(found)
        raise self._fail(self._divergence_error(found))

    def _divergence_error(self, found: Divergence) -> ReplayDivergenceError:
        if self.accept_hint is None:
            return ReplayDivergenceError(found.report(self.scenario))
        return ReplayDivergenceAtCallError(found.report(self.scenario, self.accept_hint))

    # -- recorded results of tools that cannot re-run (dsh.tools.served.RecordedResults) --

    def recorded_result(self, session_id: str, call_id: str, name: str, arguments: str) -> ToolOutput:
        """The recorded result of the live call ``call_id``, once its name and arguments are
        checked against the recorded call (a difference is this replay's divergence)."""
        script = self._live.get(session_id)
        recorded = script.tool_calls.get(call_id) if script is not None else None
        if script is None or recorded is None or recorded.output is None:
            label = script.label if script is not None else session_id
            exc = self._fail(
                ReplayDivergenceError(
                    f"scenario {self.scenario}: session {label}: {name} call {call_id} cannot re-run in a "
                    "replay and has no recorded result to serve; re-record the scenario"
                )
            )
            return ToolOutput.error(str(exc), ReplayDivergenceError.code)
        if (recorded.name, recorded.arguments) != (name, arguments):
            found = Divergence(
                script.label,
                script.recorded_id,
                script.cursor,
                recorded.turn,
                recorded.step,
                f"the arguments of call {call_id} ({name}, served from the recording)",
                f"{recorded.name} {recorded.arguments}",
                f"{name} {arguments}",
            )
            script.divergence = found
            self.divergences.append(found)
            exc = self._fail(ReplayDivergenceError(found.report(self.scenario)))
            return ToolOutput.error(str(exc).splitlines()[0], ReplayDivergenceError.code)
        return recorded.output

    # -- the recorded order between sessions (dsh.model.DeliveryOrder) ------------------

    ORDER_WAIT = 10.0
    """Seconds a delivery or claim waits for the recorded order while *no* session appends
    anything before going on regardless (the divergence check then names what differs)."""

    async def _until(self, ready: Callable[[], bool]) -> None:
        """Wait until ``ready`` (looked at again whenever a session appends an event). It
        gives up only after ``ORDER_WAIT`` s in which no session appended an event: while the
        others make progress, however slowly (a loaded machine), the recorded order may still
        come, and a wall-clock bound would let the run go on out of order."""
        loop = asyncio.get_running_loop()
        while not ready():
            waiter = loop.create_future()
            self._waiters.append(waiter)
            try:
                async with asyncio.timeout(self.ORDER_WAIT):
                    await waiter
            except TimeoutError:
                return

    def progressed(self, session: str, event: Event | None = None) -> None:
        """A session appended an event: every waiting delivery and claim looks again; a
        child's event goes to the original's snapshot fixtures (when the replay has them)."""
        if self.fixtures is not None and event is not None:
            script = self._live.get(session)
            if script is not None and script is not self.primary:
                self.fixtures.child_event(event)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def before_delivery(
        self,
        sender: str,
        recipient: str,
        received: Callable[[], Sequence[str]],
        progress: Callable[[], SessionProgress],
    ) -> None:
        """Hold ``sender``'s next message to ``recipient`` until every message recorded before
        it has arrived and ``recipient`` has started as many steps and ended as many turns as
        the recording had when it arrived. ``sender`` is a live session, or a sender that is
        not one (``dsh.events.messages.JOB_NOTICE_SENDER``: the recipient's background jobs),
        recorded under the same name."""
        source, target = self._live.get(sender), self._live.get(recipient)
        if target is None:
            return
        recorded_sender = source.recorded_id if source is not None else sender
        n = sum(1 for who in received() if who == sender)
        found = [i for i, (who, _) in enumerate(target.received) if who == recorded_sender]
        if n < len(found):
            index = found[n]
            point = target.received[index][1]
            await self._until(lambda: len(received()) >= index and progress().reached(point))

    async def before_claim(
        self, session: str, available: Callable[[], Sequence[Message]], *, ending: int | None = None
    ) -> None:
        """Hold ``session``'s next claim (or, ``ending``, the end of that turn when the
        recording went on with it) until the messages from other sessions its next recorded
        call saw have arrived."""
        script = self._live.get(session)
        if script is None or script.cursor >= len(script.foreign):
            return
        if ending is not None and script.turns[script.cursor] != ending:
            return
        need = script.foreign[script.cursor]
        if need:
            await self._until(lambda: sum(sender_of(m) is not None for m in available()) >= need)

    def assert_consumed(self) -> None:
        """Raise unless every recorded call was served (and no replay error happened)."""
        if self.errors:
            raise ScriptNotConsumedError(str(self.errors[0]))
        problems = [
            f"{s.label} (session {s.recorded_id}) served {s.cursor} of {len(s.entries)} call(s)"
            + ("" if s.bound_to else ", never bound to a live session")
            for s in self.scripts
            if s.cursor < len(s.entries)
        ]
        if problems:
            raise ScriptNotConsumedError(f"scenario {self.scenario}: " + "; ".join(problems))
