"""What workflows and activities pass each other: references into the dsh store, never conversations.

Every value here is a few ids and numbers: the session id, the seq the turn starts after
(``from_seq``: the session's next seq when the turn was submitted), turn and step numbers,
a tool call's id, the prompt's attachment id. The events themselves go to the store inside
the activities, so a workflow history stays the same size whatever the conversation holds.
These are plain frozen dataclasses (stdlib only): Temporal's JSON converter carries them,
and the workflow sandbox may import them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Delegated:
    """A child turn's delegation: the parent session, its tool call, the child's label, its
    mode (``spawn`` / ``fork``) and whether it is a background (continuable) child."""

    parent_session: str
    call_id: str
    label: str
    mode: str = "spawn"
    continuable: bool = False


@dataclass(frozen=True)
class TurnInput:
    """A turn run's input: ``prompt`` is the attachment id of the prompt's text in the store
    (``None``: a woken turn, opened by the session's inbox — a task, a message, a notice)."""

    session_id: str
    from_seq: int
    prompt: str | None
    delegated: Delegated | None = None


@dataclass(frozen=True)
class TurnBegun:
    """The opened turn's number and the step budget (``AgentConfig.max_steps``)."""

    turn: int
    max_steps: int


@dataclass(frozen=True)
class StepInput:
    """One model step; ``prompt`` only at step 1 (the attachment id of the turn's message;
    ``woken``: step 1 of a woken turn claims the inbox's next-turn message instead)."""

    session_id: str
    from_seq: int
    turn: int
    step: int
    prompt: str | None = None
    delegated: Delegated | None = None
    woken: bool = False
    carried: tuple[str, ...] = ()
    """The attachment ids of the messages the step opens with after the claim: what the
    previous step's hooks gave it (tool hooks' context, a ``Stop`` block's reason)."""


@dataclass(frozen=True)
class Call:
    """One tool call a step settled: its id, its tool's name, and whether that tool delegates
    to a child session (``subagent``, ``subagent_fork``: it may run as a child workflow)."""

    call_id: str
    name: str
    delegates: bool = False


@dataclass(frozen=True)
class StepSettled:
    """A settled step: its calls (none: the turn may end), the token limit, or a failure."""

    calls: tuple[Call, ...]
    max_tokens: bool = False
    failure_code: str | None = None
    failure_message: str | None = None
    blocked: bool = False
    """``UserPromptSubmit`` blocked the prompt: the turn ends ``blocked`` with no step."""
    carried: tuple[str, ...] = ()
    """A ``Stop`` hook blocked the turn's end: the next step opens with these (attachment ids)."""


@dataclass(frozen=True)
class CallsRan:
    """A step's calls ran (``dsh.step_tools``): the messages their hooks gave the next step
    (attachment ids, in model order)."""

    carried: tuple[str, ...] = ()


@dataclass(frozen=True)
class StopInput:
    """Ask turn ``turn``'s ``Stop`` hooks after its step's calls ran (``dsh.stop_turn``)."""

    session_id: str
    from_seq: int
    turn: int
    delegated: Delegated | None = None


@dataclass(frozen=True)
class Stopped:
    """What the ``Stop`` hooks left for a next step: a block's messages (attachment ids; none:
    the turn may end)."""

    carried: tuple[str, ...] = ()


@dataclass(frozen=True)
class CallInput:
    """One tool call of step ``step`` (the call's arguments are in the logged step)."""

    session_id: str
    from_seq: int
    turn: int
    step: int
    call_id: str
    delegated: Delegated | None = None
    carrying: bool = False
    """``dsh.start_child`` answers a :class:`ChildOpened` (what its hooks give the next step
    carried) instead of a bare ``ChildStarted | None`` (a run from before ``dsh-child-hooks``)."""


@dataclass(frozen=True)
class CallsInput:
    """Tool calls of step ``step`` run together, in model order, as the loop runs a step's
    calls (the call's arguments are in the logged step)."""

    session_id: str
    from_seq: int
    turn: int
    step: int
    call_ids: tuple[str, ...]
    delegated: Delegated | None = None


@dataclass(frozen=True)
class Ending:
    """How a turn ends: a ``turn/end`` reason kind with its failure or abort cause."""

    kind: str
    code: str | None = None
    message: str | None = None
    by: str | None = None


@dataclass(frozen=True)
class EndInput:
    """Close turn ``turn`` with ``ending``."""

    session_id: str
    from_seq: int
    turn: int
    ending: Ending
    delegated: Delegated | None = None


@dataclass(frozen=True)
class TurnOutcome:
    """A finished turn run: the session, the turn and how it ended (its text is in the store)."""

    session_id: str
    turn: int
    ending: Ending


@dataclass(frozen=True)
class ChildStarted:
    """A child session ready for its turn: its id, its first seq and its prompt (``None``:
    a background child, whose task is queued in its inbox)."""

    session_id: str
    from_seq: int
    prompt: str | None
    delegated: Delegated


@dataclass(frozen=True)
class ApprovalDecision:
    """An answer to a tool's approval request, sent as a signal: the call and the outcome
    (``allowed-once``, ``rejected``, ... as ``dsh.tools.approval``)."""

    call_id: str
    outcome: str


@dataclass(frozen=True)
class Settling:
    """A background child's activation ended with turn ``turn`` (its inbox is empty): notify
    its parent."""

    session_id: str
    delegated: Delegated
    turn: int
    ending: Ending


@dataclass(frozen=True)
class Inbound:
    """A message for a session's inbox, sent with the ``wake`` signal: the attachment id of
    its JSON; ``next_turn``: it opens a turn of its own (``send_message``), else it joins the
    running turn's next step (a notice, a report) — or opens the next turn when none runs."""

    attachment: str
    next_turn: bool


@dataclass(frozen=True)
class Intake:
    """Log ``items`` in the session's inbox; ``running``: a turn of it is going on."""

    session_id: str
    items: tuple[Inbound, ...]
    running: bool


@dataclass(frozen=True)
class ChildFinished:
    """A spawned child's turn ended: settle the parent's call ``call`` with the child's answer."""

    call: CallInput
    child_session: str
    ending: Ending
    carrying: bool = False
    """``dsh.finish_child`` answers a :class:`CallsRan` (what the ``PostToolUse`` hooks give
    the next step) instead of ``True`` (a run from before ``dsh-child-hooks``)."""


@dataclass(frozen=True)
class ChildOpened:
    """What ``dsh.start_child`` did for a carrying run: the child ready for its turn (``None``:
    no child — the call refused by a hook, or not a delegation), and the attachment ids of
    the messages its hooks gave the next step (``PreToolUse``; a background child's call,
    settled at once, its ``PostToolUse`` too)."""

    started: ChildStarted | None = None
    carried: tuple[str, ...] = ()
