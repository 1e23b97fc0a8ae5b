"""The one replay verdict: what a replay must reproduce to pass, and the problems when it did not.

A replay passes when no call diverged (:mod:`dsh.replay.fidelity`), every recorded call was
served, and per recorded session the live one gave the same final answer, the same tool
results (or a difference a declared tolerance allows) and the same harness actions — hook
runs and approvals, which no model saw (``docs/decisions/2026-12-01-replay-divergence-check.md``).
The scenario runner, the ``dsh_recording`` fixture and ``dsh serve replay``'s report all
decide through :func:`verdict`; the first divergence is worded by
:meth:`~dsh.replay.fidelity.Divergence.report`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh.errors import ReplayError
from dsh.events.descriptor import child_kind
from dsh.replay.fidelity import Divergence, ToolTally, harness_actions, tool_results
from dsh.replay.model import ReplayModel
from dsh.session import final_assistant_text
from dsh.store import LoadedSession


@dataclass(frozen=True, slots=True)
class SessionReport:
    """One recorded session and the live session it was bound to."""

    recorded_id: str
    live_id: str | None
    kind: str
    inherited_event_count: int
    calls: int
    consumed: int
    final_text: str
    recorded_text: str
    tool_results: ToolTally = field(default_factory=lambda: ToolTally(0, 0))
    divergence: Divergence | None = None
    not_reproduced: list[str] = field(default_factory=list)
    tolerated: list[Divergence] = field(default_factory=list)
    harness_actions: tuple[list[str], list[str]] | None = None
    """(recorded, live) hook runs and approvals when they differ."""

    @property
    def live_label(self) -> str:
        """How a report names the live side: its session id, or ``— (not started)`` when no
        live session was bound to the script (the run diverged or ended before it)."""
        return self.live_id or "— (not started)"

    def to_json(self) -> dict[str, Any]:
        return {
            "recordedId": self.recorded_id,
            "liveId": self.live_id,
            "kind": self.kind,
            "inheritedEventCount": self.inherited_event_count,
            "calls": self.calls,
            "consumed": self.consumed,
            "finalText": self.final_text,
            "toolResults": self.tool_results.to_json(),
            "divergence": self.divergence.to_json() if self.divergence else None,
            "notReproduced": self.not_reproduced,
            "tolerated": [t.to_json() for t in self.tolerated],
            "harnessActions": (
                None
                if self.harness_actions is None
                else {"recorded": self.harness_actions[0], "live": self.harness_actions[1]}
            ),
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a replay passed: its problems (the first divergence first) and its sessions."""

    problems: tuple[str, ...]
    sessions: tuple[SessionReport, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


def session_reports(
    model: ReplayModel,
    sessions: Mapping[str, LoadedSession],
    recorded: Mapping[str, LoadedSession],
    cwd: Path,
) -> list[SessionReport]:
    """One report per recorded script: what it was bound to, consumed and reproduced."""
    out = []
    for script in model.scripts:
        rec = recorded.get(script.label)
        live = sessions.get(script.bound_to) if script.bound_to else None
        live_own = live.events[live.inherited_event_count :] if live else []
        rec_own = rec.events[rec.inherited_event_count :] if rec else []
        redactor = script.check.tolerances.redactor if script.check else None
        final = final_assistant_text(live_own) if live else ""
        out.append(
            SessionReport(
                recorded_id=script.recorded_id,
                live_id=script.bound_to,
                kind=(child_kind(rec.header, rec_own) or "primary") if rec else "primary",
                # the live cut; a fork child that never started: the recording's
                inherited_event_count=live.inherited_event_count
                if live
                else rec.inherited_event_count
                if rec
                else 0,
                calls=len(script.entries),
                consumed=script.cursor,
                final_text=redactor.text(final) if redactor is not None else final,
                recorded_text=final_assistant_text(rec_own) if rec else "",
                tool_results=tool_results(
                    rec_own,
                    live_own,
                    cwd,
                    over_wire=script.wire is not None,
                    recorded_cwd=rec.header.cwd if rec else None,
                    redactor=redactor,
                ),
                divergence=script.divergence,
                not_reproduced=script.check.not_reproduced if script.check else [],
                tolerated=list(script.tolerated),
                harness_actions=harness_actions(rec_own, live_own) if live else None,
            )
        )
    return out


def verdict(
    scenario: str,
    *,
    divergences: Sequence[Divergence] = (),
    problems: Sequence[str] = (),
    unconsumed: str | None = None,
    sessions: Sequence[SessionReport] = (),
) -> Verdict:
    """The verdict: the first divergence (:meth:`Divergence.report`), then the run's own
    ``problems``, then ``unconsumed`` (recorded calls not served; said only when nothing
    diverged, which explains it), then each session's differences (:func:`session_problems`)."""
    found = [d.report(scenario) for d in divergences[:1]]
    found.extend(problems)
    if unconsumed is not None and not divergences:
        found.append(unconsumed)
    found.extend(session_problems(scenario, sessions))
    return Verdict(tuple(found), tuple(sessions))


def replay_verdict(
    scenario: str,
    model: ReplayModel,
    sessions: Mapping[str, LoadedSession],
    recorded: Mapping[str, LoadedSession],
    cwd: Path,
    *,
    problems: Sequence[str] = (),
) -> Verdict:
    """The verdict of an in-process replay through ``model`` (the runner's, the fixture's):
    ``sessions`` are the live logs, ``recorded`` the recorded ones by script label."""
    try:
        model.assert_consumed()
        unconsumed = None
    except ReplayError as exc:
        unconsumed = str(exc)
    reports = session_reports(model, sessions, recorded, cwd)
    return verdict(
        scenario, divergences=model.divergences, problems=problems, unconsumed=unconsumed, sessions=reports
    )


def session_problems(name: str, reports: Sequence[SessionReport]) -> list[str]:
    """Per session: the same final answer, the same harness actions (hooks, approvals), and
    every recorded tool result reproduced (or a difference tolerated and listed)."""
    problems = []
    diverged = any(report.divergence for report in reports)
    for report in reports:
        if report.live_id and not diverged and report.final_text != report.recorded_text:
            problems.append(
                f"scenario {name}: session {report.recorded_id} answered "
                f"{report.final_text!r}, the recording says {report.recorded_text!r}"
            )
        if report.harness_actions is not None and report.divergence is None:
            recorded, live = report.harness_actions
            problems.append(
                f"scenario {name}: session {report.recorded_id}: the recorded harness did "
                f"{'; '.join(recorded) or 'nothing'}, the live run did {'; '.join(live) or 'nothing'} "
                "(hooks and approvals must act as recorded)"
            )
        tally = report.tool_results
        if tally.equal < tally.total and report.divergence is None and not report.tolerated:
            problems.append(
                f"scenario {name}: session {report.recorded_id}: {tally.total - tally.equal} of "
                f"{tally.total} tool result(s) differ from the recording ({', '.join(tally.differing)})"
            )
    return problems
