"""Approvals: the ``Approver`` seam and the one place ``approval/asked`` / ``approval/decided`` are logged.

A tool call that needs the user's consent (a sandbox escalation, a hook's ``ask``) goes
through the session's :class:`Approvals`, which logs ``approval/asked {id, toolName, callId?,
reason?}``, decides, and logs ``approval/decided {id, outcome}`` — the original's events and
outcomes (``allowed-once``, ``rejected``, ``cancelled``, ``unavailable``). Under the policy
``never`` every request is rejected at once (the original's default under
``danger-full-access`` and in every delegated child); under ``ask`` the :class:`Approver`
answers: the ACP client (``session/request_permission``), a terminal prompt, ``--approve`` /
``--deny``, or a scenario's recorded ``permissionAnswers``. No approver, or one that fails,
is ``unavailable``: the request fails closed.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, Protocol, get_args, runtime_checkable

from dsh.events import Event
from dsh.events.payloads import approval_asked, approval_decided
from dsh.events.vocabulary import APPROVAL_ASKED, APPROVAL_DECIDED

log = logging.getLogger("dsh.approval")

ApprovalOutcome = Literal["allowed-once", "rejected", "cancelled", "unavailable"]
OUTCOMES: Final[tuple[str, ...]] = get_args(ApprovalOutcome)
ApprovalPolicy = Literal["ask", "never"]

APPROVAL_CONTEXT: Final[dict[ApprovalPolicy, str]] = {
    "never": (
        "Approval prompts are disabled in this session: actions that require approval are rejected "
        "automatically — do not request sandbox escalation (do not set `sandbox_permissions`)."
    ),
    "ask": (
        "Approval policy: ask. Operations that require approval may ask through the configured "
        "answerers; without an available answerer, the request fails closed."
    ),
}
"""The original's ``approval:policy`` runtime-context section for each policy."""


@dataclass(frozen=True, slots=True)
class EscalationDetails:
    """What a sandbox escalation would run, whole: shown to the person asked, never logged
    (``approval/asked`` keeps the original's fields)."""

    permissions: str
    """The sandbox mode asked for (``workspace-write`` / ``danger-full-access``)."""
    current: str
    """The mode the call would run in otherwise."""
    justification: str
    cwd: str
    """The directory the command runs in (bash's ``workdir``), or the session's workspace."""
    command: str | None = None
    """bash's command."""
    path: str | None = None
    """write's / edit's ``file_path``."""


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What the user is asked to allow.

    ``scope`` names what an "allow for the session" answer covers (``sandbox:<mode>`` for an
    escalation, ``tool:<name>`` for a hook's ask), so an approver can remember it.
    """

    session_id: str
    tool_name: str
    call_id: str | None
    reason: str | None
    scope: str
    escalation: EscalationDetails | None = None
    """For a sandbox escalation: the command or path, directory, mode and justification."""


@runtime_checkable
class Approver(Protocol):
    """Answers approval requests (one implementation per channel)."""

    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        """The answer to ``request`` (may wait for a person; never raises for a refusal)."""
        ...


class FixedApprover:
    """Answers every request the same way: ``--approve`` (``allowed-once``) or ``--deny`` (``rejected``)."""

    def __init__(self, outcome: ApprovalOutcome) -> None:
        self.outcome: ApprovalOutcome = outcome

    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        return self.outcome


Append = Callable[..., Event]


class Approvals:
    """One session's approval service: logs each request and its decision around the approver."""

    def __init__(
        self, session_id: str, append: Append, *, policy: ApprovalPolicy, approver: Approver | None
    ) -> None:
        self.session_id = session_id
        self.policy: ApprovalPolicy = policy
        self.approver = approver
        self._append = append

    async def request(
        self,
        tool_name: str,
        call_id: str | None,
        reason: str | None,
        *,
        scope: str,
        escalation: EscalationDetails | None = None,
    ) -> ApprovalOutcome:
        """Ask (logged), decide, log the outcome and return it; never raises but on cancel."""
        request_id = str(uuid.uuid4())
        self._append(APPROVAL_ASKED, approval_asked(request_id, tool_name, call_id, reason))
        request = ApprovalRequest(self.session_id, tool_name, call_id, reason, scope, escalation)
        outcome = await self._decide(request)
        self._append(APPROVAL_DECIDED, approval_decided(request_id, outcome))
        return outcome

    async def _decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        if self.policy == "never":
            return "rejected"
        if self.approver is None:
            return "unavailable"
        try:
            outcome = await self.approver.decide(request)
        except Exception as exc:  # an answerer failure fails closed, as in the original
            log.warning(
                "approval for %s in session %s failed: %s", request.tool_name, request.session_id, exc
            )
            return "unavailable"
        return outcome if outcome in OUTCOMES else "unavailable"
