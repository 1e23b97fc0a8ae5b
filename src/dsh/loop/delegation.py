"""What a delegated child is given at setup, and the approval policy a session's log states.

The delegation tools (``dsh.subagents.tools``) call :func:`log_delegated_policies` where the
original logs these events; children an application forks or spawns itself are not delegated.

The original appends both to a child's log during setup, after any fork seed, so that they
win over seeded state: its parent's explicit file-policy override as ``sandbox/mode {mode,
source: "delegation"}`` (a deployment default is not copied: the child computes the same),
and ``approval/policy {policy: "never", source: "delegation"}`` — a child never asks the
human. A session's approval policy is the last ``approval/policy`` its log holds (so a
resumed child of the original's keeps ``never``), else ``never`` for a delegated child,
else its configuration's (:meth:`AgentConfig.approvals_policy`).
"""

from __future__ import annotations

from typing import Final

from dsh.events.payloads import approval_policy, approval_policy_of, sandbox_mode
from dsh.events.vocabulary import APPROVAL_POLICY, SANDBOX_MODE
from dsh.loop.config import AgentConfig
from dsh.loop.state import ApprovalLog
from dsh.session import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.sandbox import SandboxPolicy

DELEGATION_SOURCE: Final = "delegation"


def log_delegated_policies(child: ApprovalLog, parent_sandbox: SandboxPolicy | None) -> None:
    """Append the original's setup events to a delegated ``child`` and apply them."""
    if parent_sandbox is not None and parent_sandbox.logged:
        child.append(SANDBOX_MODE, sandbox_mode(parent_sandbox.stated_mode, DELEGATION_SOURCE))
    child.append(APPROVAL_POLICY, approval_policy("never", DELEGATION_SOURCE))
    child.approvals.policy = "never"


def session_approval_policy(session: Session, config: AgentConfig, *, delegated: bool) -> ApprovalPolicy:
    """The last logged ``approval/policy`` (one dsh knows), else ``never`` when ``delegated``,
    else the configuration's."""
    for event in reversed(session.of_type(APPROVAL_POLICY)):  # a long log has one in thousands
        logged = approval_policy_of(event)
        if logged == "ask":
            return "ask"
        if logged == "never":
            return "never"
    return "never" if delegated else config.approvals_policy()
