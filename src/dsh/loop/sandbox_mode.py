"""The session's file-policy mode: ``sandbox/mode {mode}`` in the log, and switching it.

The mode is :attr:`AgentConfig.sandbox` (a :class:`SandboxPolicy`); a turn logs it when it is
not the last one logged, and ACP's ``session/set_mode`` switches it mid-session.
"""

from __future__ import annotations

from dataclasses import replace

from dsh.events.payloads import sandbox_mode
from dsh.events.vocabulary import SANDBOX_MODE
from dsh.loop.delegation import session_approval_policy
from dsh.loop.state import DelegatedState, ModeState
from dsh.tools.sandbox import SandboxMode, SandboxPolicy


def log_sandbox_mode(agent: DelegatedState) -> None:
    """``sandbox/mode {mode}`` when the configured policy's mode is not the last one logged
    (a deployment default, ``SandboxPolicy.logged=False``, is not logged: the original's way).
    The mode logged is the one the session states (``SandboxPolicy.stated_mode``: a replay
    confined below its recording logs the recording's mode, as it shows it)."""
    sandbox = agent.config.sandbox
    if sandbox is None or not sandbox.logged:
        return
    logged = [e.data.get("mode") for e in agent.session.of_type(SANDBOX_MODE)]
    if not logged or logged[-1] != sandbox.stated_mode:
        agent.append(SANDBOX_MODE, sandbox_mode(sandbox.stated_mode))


async def switch_sandbox_mode(agent: ModeState, mode: SandboxMode) -> None:
    """Switch the agent's file policy to ``mode``, logged as ``sandbox/mode`` and checkpointed:
    the next ``bash`` / ``write`` / ``edit`` call runs under it and the next step's
    runtime-context snapshot states it. The approval policy follows
    (:func:`~dsh.loop.delegation.session_approval_policy`: ``never`` under
    ``danger-full-access``) unless the log or the config fixes it or the session is a
    delegated child (always ``never``). Children started before keep theirs."""
    current = agent.config.sandbox
    policy = (
        SandboxPolicy(mode=mode) if current is None else replace(current, mode=mode, logged=True, shown=None)
    )
    agent.config = agent.config.evolve(sandbox=policy)
    agent.approvals.policy = session_approval_policy(
        agent.session, agent.config, delegated=agent.delegation is not None
    )
    log_sandbox_mode(agent)
    await agent.checkpoint()
