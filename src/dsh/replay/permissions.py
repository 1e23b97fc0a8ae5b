"""What a replay runs under: the recording's sandbox mode (confined by default) and approval answers.

A recording says which file policy its session ran under: the last ``sandbox/mode`` event
before its first turn's end, else the ``sandbox:policy`` section of the original's first
runtime-context snapshot, else the original's snapshot default ``danger-full-access``. A
replay runs the recording's commands under that mode as the deployment default (not logged,
as the original does not log one, unless the recording logged its own ``sandbox/mode``), but
never unconfined: a ``danger-full-access`` recording replays under ``workspace-write`` (a
recording is untrusted input). The approval policy is the recording's: its own
``approval/policy``, else the one its runtime-context snapshot states (the original's comes
from its deployment, not from the session's file policy), else ``never`` for a
``danger-full-access`` recording (unless the scenario carries answers) and ``ask`` otherwise,
answered by
:class:`RecordedAnswers` from ``input.json``'s ``permissionAnswers`` (the original's
harness answers: first in, first out; ``cancelled`` once they run out).

A recording made with a sandbox runner that could not be started says so in its results
(``Runner failure: Error: spawn {{cwd}}/<name> ENOENT``, or a background job's ``spawn
failed: …``): the replay names the same missing runner (:func:`recorded_missing_runner`),
so it refuses the recorded commands as the original did. Only a plain relative name inside
the workspace is taken, and never one the scenario's own ``workspace/`` ships: a recording
can make a replay's runner missing, never make it run a program of its choosing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Final, Literal, cast

from dsh.errors import ScenarioError
from dsh.events.messages import Block, joined_text
from dsh.events.payloads import approval_policy_of
from dsh.events.vocabulary import RUNTIME_CONTEXT_PREFIX, SANDBOX_MODE, TOOL_RESULT, TURN_END, USER_MESSAGE
from dsh.replay.files import RecordedLogs, declared_input, hook_commands, read_recorded, recorded_commands
from dsh.replay.served import recorded_glob_cap
from dsh.store import LoadedSession
from dsh.tools.approval import APPROVAL_CONTEXT, ApprovalOutcome, ApprovalPolicy, ApprovalRequest
from dsh.tools.sandbox import SANDBOX_MODES, SandboxMode, SandboxPolicy, mode_in_runtime_context

ANSWER_KINDS: Final = ("allow_once", "allow_always", "reject_once", "reject_always")
OFFERED: Final[dict[str, ApprovalOutcome]] = {"allow_once": "allowed-once", "reject_once": "rejected"}
"""The kinds of the two options dsh offers (``allow-once``, ``reject-once``) and their outcomes."""
SNAPSHOT_DEFAULT: Final[SandboxMode] = "danger-full-access"


def read_permission_answers(directory: Path) -> list[str]:
    """``input.json``'s ``permissionAnswers`` kinds, in order (absent: none)."""
    raw = declared_input(directory).get("permissionAnswers", [])
    where = f"scenario {directory.name}: input.json"
    if not isinstance(raw, list):
        raise ScenarioError(f"{where}: 'permissionAnswers' must be a list of {{kind}} objects")
    kinds = []
    for i, answer in enumerate(raw):
        kind = answer.get("kind") if isinstance(answer, dict) else None
        if kind not in ANSWER_KINDS:
            raise ScenarioError(
                f"{where}: permissionAnswers[{i}] needs a kind, one of {', '.join(ANSWER_KINDS)}"
            )
        kinds.append(kind)
    return kinds


class RecordedAnswers:
    """An ``Approver`` that gives the scenario's recorded answers in order (``cancelled`` after the last).

    An answer of a kind dsh does not offer (``allow_always``, ``reject_always``) is a problem
    of the run, as in the original harness, and decides nothing (``unavailable``).
    """

    def __init__(self, kinds: list[str], scenario: str) -> None:
        self._kinds = list(kinds)
        self._scenario = scenario
        self.problems: list[str] = []

    @property
    def pending(self) -> int:
        """How many recorded answers are left."""
        return len(self._kinds)

    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        if not self._kinds:
            return "cancelled"
        kind = self._kinds.pop(0)
        outcome = OFFERED.get(kind)
        if outcome is None:
            self.problems.append(
                f"scenario {self._scenario}: permission answer {kind!r} for {request.tool_name} is not an "
                "option dsh offers (allow_once, reject_once)"
            )
            return "unavailable"
        return outcome


def _snapshot_text(message: object) -> str | None:
    """The text of a logged message when it is a runtime-context snapshot (by its text: a
    recording made through ``dsh serve`` has no ``source``)."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        text = joined_text(cast(Block, b) for b in content if isinstance(b, dict))
    else:
        text = str(content or "")
    return text if text.startswith(RUNTIME_CONTEXT_PREFIX) else None


def _snapshot_mode(message: object) -> SandboxMode | None:
    """The mode a logged message states when it is a runtime-context snapshot."""
    text = _snapshot_text(message)
    return mode_in_runtime_context(text) if text is not None else None


def _snapshot_approval(message: object) -> ApprovalPolicy | None:
    """The approval policy a logged runtime-context snapshot states (its ``approval:policy``
    section: "Approval prompts are disabled in this session…" is ``never``)."""
    text = _snapshot_text(message)
    for policy, stated in APPROVAL_CONTEXT.items():
        if text is not None and stated in text:
            return policy
    return None


def recorded_approval(loaded: LoadedSession | None) -> ApprovalPolicy | None:
    """The approval policy the recorded session's first turn ran under, if the log says: its
    last own ``approval/policy`` (not a delegation's copy) before the first turn's end, else
    the one its first runtime-context snapshot states — what the recorded model was told,
    whatever the configuration default of the replaying process is."""
    if loaded is None:
        return None
    logged: ApprovalPolicy | None = None
    stated: ApprovalPolicy | None = None
    for event in loaded.events[loaded.inherited_event_count :]:
        policy = approval_policy_of(event)
        if policy in ("ask", "never") and not event.data.get("source"):
            logged = cast(ApprovalPolicy, policy)
        elif event.type == USER_MESSAGE and stated is None:
            stated = _snapshot_approval(event.data)
        elif event.type == TURN_END and (logged or stated):
            break
    return logged or stated


def shows_runtime_context(loaded: LoadedSession | None) -> bool:
    """Whether the recorded model was shown a runtime-context snapshot (no recording yet: yes).

    A recording of a session with no file policy (a library agent) has none; its replay
    shows none either, or the check would see a message the recorded model never saw."""
    if loaded is None:
        return True
    return any(e.type == USER_MESSAGE and _snapshot_mode(e.data) for e in loaded.events)


def logs_recorded_mode(loaded: LoadedSession | None) -> bool:
    """Whether the recorded session logged its own ``sandbox/mode`` in its first turn (a
    session choice, not a delegation's copy): the replay logs it too, where the live loop logs
    one, so both logs hold the same events (a fork child's cut counts them)."""
    if loaded is None:
        return False
    for event in loaded.events[loaded.inherited_event_count :]:
        if event.type == SANDBOX_MODE and not event.data.get("source"):
            return True
        if event.type == TURN_END:
            return False
    return False


def recorded_mode(loaded: LoadedSession | None) -> SandboxMode | None:
    """The file policy the recorded session's first turn ran under, if the log says (else
    the first one a snapshot states)."""
    if loaded is None:
        return None
    mode: SandboxMode | None = None
    for event in loaded.events[loaded.inherited_event_count :]:
        if event.type == SANDBOX_MODE and event.data.get("mode") in SANDBOX_MODES:
            mode = event.data["mode"]
        elif event.type == USER_MESSAGE and mode is None:
            mode = _snapshot_mode(event.data)
        elif event.type == TURN_END and mode is not None:
            break  # else the first snapshot later on (a ``dsh serve`` recording's turns are its calls)
    return mode


_MISSING_RUNNER = re.compile(r"(?:Runner failure|spawn failed): Error: spawn \{\{cwd\}\}/(\S+) ENOENT")


def recorded_missing_runner(loaded: LoadedSession | None, directory: Path) -> str | None:
    """The workspace-relative sandbox runner the recording could not start, if it says so."""
    if loaded is None:
        return None
    for event in loaded.events[loaded.inherited_event_count :]:
        if event.type != TOOL_RESULT or not isinstance(event.data, dict):
            continue
        for block in event.data.get("message", {}).get("content", []):
            if not isinstance(block, dict) or block.get("type") != "tool-result":
                continue
            found = _MISSING_RUNNER.search(joined_text(block.get("content", [])))
            if found is None:
                continue
            name = PurePosixPath(found.group(1))
            shipped = directory / "workspace" / name
            shipped_it = shipped.exists() or shipped.is_symlink()
            if not name.is_absolute() and ".." not in name.parts and not shipped_it:
                return str(name)
    return None


@dataclass(frozen=True, slots=True)
class ReplayPolicy:
    """The sandbox policy, approval policy and recorded answers a replay runs with."""

    sandbox: SandboxPolicy | None
    approval: ApprovalPolicy
    answers: RecordedAnswers = field(default_factory=lambda: RecordedAnswers([], ""))
    runtime_context: bool = True
    """Whether the replay shows the runtime-context snapshot (:func:`shows_runtime_context`)."""
    glob_cap: int | None = None
    """The recording's ``glob`` result cap, when it shows one (``dsh.replay.served.recorded_glob_cap``)."""


def replay_policy(directory: Path, primary: LoadedSession | None, *, confined: bool = True) -> ReplayPolicy:
    """What the scenario in ``directory`` replays under (``confined=False``: the recorded mode as is)."""
    mode = recorded_mode(primary) or SNAPSHOT_DEFAULT
    answers = RecordedAnswers(read_permission_answers(directory), directory.name)
    asks = mode != "danger-full-access" or bool(answers.pending)
    approval: ApprovalPolicy = recorded_approval(primary) or ("ask" if asks else "never")
    shown = shows_runtime_context(primary)
    runner = recorded_missing_runner(primary, directory)
    logged = logs_recorded_mode(primary)
    cap = recorded_glob_cap(primary.own_events) if primary is not None else None
    if confined and mode == "danger-full-access":  # confined, yet the model is shown the recorded mode
        confining = SandboxPolicy(mode="workspace-write", logged=logged, shown=mode, runner=runner)
        return ReplayPolicy(confining, approval, answers, shown, cap)
    return ReplayPolicy(SandboxPolicy(mode=mode, logged=logged, runner=runner), approval, answers, shown, cap)


def untrusted_warning(
    directory: Path,
    policy: SandboxPolicy | Literal["recorded"] | None = "recorded",
    recorded: RecordedLogs | None = None,
) -> str | None:
    """One line naming the commands a replay of ``directory`` runs and the policy they run
    under (``policy``; ``"recorded"``: what :func:`replay_policy` gives the recording, the
    default of every replay), or ``None`` if it runs none. ``recorded``: the logs the replay
    will run (read once by the caller), else they are read here."""
    recorded = recorded if recorded is not None else read_recorded(directory)
    commands = recorded_commands(directory, recorded) + hook_commands(directory)
    if not commands:
        return None
    if policy == "recorded":
        policy = replay_policy(directory, recorded.primary).sandbox
    how = policy.described() if policy is not None else "unconfined (no sandbox policy)"
    listed = "; ".join(f"`{c}`" for c in commands[:5]) + (
        f"; … ({len(commands) - 5} more)" if len(commands) > 5 else ""
    )
    return (
        f"warning: replaying {directory.name} runs {len(commands)} recorded command(s) on this machine, "
        f"{how}, in a temporary workspace: {listed} (pass --trust if you trust this recording)"
    )
