"""ACP session modes: the three file policies, advertised (``full``) and switched per session.

``session/new`` and ``session/load`` answer ``modes: {currentModeId, availableModes}`` in
the ``full`` profile (the ``dsh-compat`` profile keeps the original's bare results, which
have none); ``session/set_mode {sessionId, modeId}`` switches the session's file policy in
either profile: the next ``bash`` / ``write`` / ``edit`` call runs under it, the next step's
runtime-context snapshot states it, and the log gets ``sandbox/mode {mode}``.
"""

from __future__ import annotations

from typing import Final, cast

from acp.exceptions import RequestError
from acp.schema import SessionMode, SessionModeState

from dsh.loop import Agent
from dsh.tools.sandbox import SANDBOX_MODES, SandboxMode

MODES: Final = (
    SessionMode(
        id="read-only",
        name="Read only",
        description="Commands and file tools cannot modify files; escalations are asked for.",
    ),
    SessionMode(
        id="workspace-write",
        name="Workspace write",
        description="Commands and file tools may modify files under the workspace and the temp dirs only.",
    ),
    SessionMode(
        id="danger-full-access",
        name="Full access",
        description="Nothing is confined and nothing is asked.",
    ),
)
"""One mode per file policy, ids as ``--sandbox`` names them."""


def current_mode(agent: Agent) -> SandboxMode:
    """The mode the session's tools run under (no policy at all confines nothing)."""
    sandbox = agent.config.sandbox
    return "danger-full-access" if sandbox is None else sandbox.mode


def mode_state(agent: Agent) -> SessionModeState:
    """The ``modes`` of a session/new or session/load result."""
    return SessionModeState(current_mode_id=current_mode(agent), available_modes=list(MODES))


def checked_mode(mode_id: str) -> SandboxMode:
    """``mode_id`` as a file policy, or ``-32602`` naming the modes."""
    if mode_id not in SANDBOX_MODES:
        raise RequestError(
            -32602, f"Invalid params: unknown mode {mode_id!r} (one of {', '.join(SANDBOX_MODES)})"
        )
    return cast(SandboxMode, mode_id)
