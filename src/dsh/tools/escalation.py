"""Per-call sandbox escalation: the ``sandbox_permissions`` / ``justification`` arguments.

``bash``, ``write`` and ``edit`` take them.

A call may ask to run once in a wider mode than the session's. :func:`escalate` checks the
pair in the original's order — ``invalid escalation: sandbox_permissions requires a
justification``, ``invalid escalation: justification is only valid together with
sandbox_permissions``, ``invalid justification: expected a non-empty sentence``, then strict
widening (``sandbox escalation to "<m>" is not strictly wider than this call's current "<e>"
mode``; no policy counts as ``danger-full-access``) — and asks the session's
:class:`~dsh.tools.approval.Approvals` with the reason ``escalate sandbox to <m>:
<justification>``. Allowed once: the call runs with the wider policy (and, under
``danger-full-access``, outside the workspace too, since the user consented). Otherwise the
original's refusal (a plain error, no code).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import PurePath
from typing import Any, Final, Literal

from pydantic import Field

from dsh.tools.approval import EscalationDetails
from dsh.tools.base import ToolContext
from dsh.tools.codes import tool_error
from dsh.tools.sandbox import SandboxMode

Escalation = Literal["workspace-write", "danger-full-access"]
"""The modes a call may escalate to (never ``read-only``)."""

WIDER: Final[dict[str, tuple[str, ...]]] = {
    "read-only": ("workspace-write", "danger-full-access"),
    "workspace-write": ("danger-full-access",),
    "danger-full-access": (),
}


def permissions_field(what: str) -> Any:
    """The ``sandbox_permissions`` argument (``what``: ``command`` or ``file operation``)."""
    return Field(
        None,
        description=(
            f"Run this {what} once in a wider sandbox mode. Only as a retry of a {what} the "
            "sandbox just denied; needs a justification, and the user is asked to approve."
        ),
    )


def justification_field(what: str) -> Any:
    """The ``justification`` argument that goes with ``sandbox_permissions``."""
    return Field(
        None,
        description=(
            f"With sandbox_permissions: one sentence telling the user why this {what} needs the wider mode."
        ),
    )


async def escalate(
    ctx: ToolContext,
    tool_name: str,
    target: Escalation | None,
    justification: str | None,
    *,
    what: str,
    command: str | None = None,
    path: str | None = None,
    workdir: str | None = None,
) -> ToolContext:
    """``ctx`` for a call that asked for ``target`` (unchanged when it asked for nothing).

    ``what`` is how the refusal names the call: ``command`` (bash) or ``operation`` (files).
    ``command`` (bash) or ``path`` (write, edit) and ``workdir`` go to the approver whole
    (:class:`~dsh.tools.approval.EscalationDetails`), so the person asked sees what runs.
    Raises the original's refusal when the request is malformed, not wider, or not allowed.
    """
    if target is None:
        if justification is not None:
            raise tool_error(
                "invalid escalation: justification is only valid together with sandbox_permissions"
            )
        return ctx
    if justification is None:
        raise tool_error("invalid escalation: sandbox_permissions requires a justification")
    if not justification.strip():
        raise tool_error("invalid justification: expected a non-empty sentence")
    current: SandboxMode = ctx.sandbox.mode if ctx.sandbox is not None else "danger-full-access"
    if target not in WIDER[current]:
        raise tool_error(
            f'sandbox escalation to "{target}" is not strictly wider than '
            f'this call\'s current "{current}" mode'
        )
    approvals = ctx.approvals
    if approvals is None:
        raise tool_error(
            f'sandbox escalation to "{target}" requires approval, but no approval service is composed'
        )
    reason = f"escalate sandbox to {target}: {justification}"
    cwd = str(PurePath(ctx.cwd, workdir)) if workdir else str(ctx.cwd)
    details = EscalationDetails(target, current, justification, cwd, command=command, path=path)
    outcome = await approvals.request(
        tool_name, ctx.call_id, reason, scope=f"sandbox:{target}", escalation=details
    )
    if outcome == "allowed-once":
        assert ctx.sandbox is not None  # a wider mode exists only under a policy
        outside = ctx.allow_outside_workspace or target == "danger-full-access"
        return replace(ctx, sandbox=replace(ctx.sandbox, mode=target), allow_outside_workspace=outside)
    if outcome == "rejected":
        raise tool_error(f'the user rejected escalating this {what} to "{target}"')
    if outcome == "cancelled":
        raise tool_error(f'approval for escalating to "{target}" was cancelled')
    raise tool_error(
        f'sandbox escalation to "{target}" requires approval, but no approval channel is available'
    )
