"""A recording's first turns, then a live model: ``dsh replay DIR --until TURN --live`` and the
pytest plugin's ``--dsh-until TURN``.

The recording's primary session is imported into the store (kept as it is: it is the
parent), and a branch is made at the end of turn TURN — by reference, holding exactly the
recorded events, so no model is asked for them (keyless). The branch then runs the
recording's own prompts of the later turns against the configured provider (``--model`` may
differ from the recorded one), in a fresh copy of the scenario's workspace, with the
recording's system prompt. :func:`dsh.session.turns.first_divergence` says where its
answers first differ from the recorded ones.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dsh.errors import UsageError
from dsh.events import Event
from dsh.events.vocabulary import REQUEST_HEADER
from dsh.loop import Agent, AgentConfig, Feed
from dsh.loop.config import DEFAULT_SYSTEM_PROMPT
from dsh.model.settings import ProviderSettings
from dsh.replay.files import read_recorded
from dsh.replay.layout import PRIMARY
from dsh.session.turns import Divergence, first_divergence, turn_texts
from dsh.snapshot.runner import prepare_workspace
from dsh.store import EventStore
from dsh.store.transfer import import_log
from dsh.subagents import live_tools


@dataclass(frozen=True, slots=True)
class LiveRun:
    """The imported recording, the branch that went live, the turns it ran, and where it diverged."""

    recording: str
    branch: str
    turns: list[int]
    divergence: Divergence | None
    workspace: Path


def recorded_system(events: Sequence[Event]) -> str:
    """The system prompt of the recording's last ``request/header`` (dsh's default if none)."""
    for e in reversed(events):
        if e.type == REQUEST_HEADER:
            system = e.data.get("header", {}).get("system")
            if isinstance(system, str):
                return system
    return DEFAULT_SYSTEM_PROMPT


async def continue_live(
    directory: Path, store: EventStore, until: int, settings: ProviderSettings, feed: Feed
) -> LiveRun:
    """Branch the recording in ``directory`` at turn ``until`` and run its later prompts live."""
    recorded = read_recorded(directory).primary
    if recorded is None:
        raise UsageError(f"{directory}: no {PRIMARY} to continue (record the scenario first)")
    rid = recorded.header.id
    if not await store.exists(rid):
        await import_log(store, directory / PRIMARY)
    later = [(t, x.prompt) for t, x in sorted(turn_texts(recorded.events).items()) if t > until and x.prompt]
    if not later:
        raise UsageError(f"{directory}: the recording has no prompt after turn {until} to ask live")
    workspace = prepare_workspace(directory, Path(tempfile.mkdtemp(prefix="dsh-live-")))
    branch = await store.branch(rid, at=until, cwd=str(workspace))
    config = AgentConfig(model=settings.model, system=recorded_system(recorded.events))
    model = settings.open_model()
    try:
        agent = await Agent.resume(
            store, branch.header.id, model=model, tools=live_tools(), config=config, feed=feed
        )
        async with agent:
            for _turn, prompt in later:
                await agent.run_turn(prompt)
    finally:
        await model.aclose()
    live = await store.load(branch.header.id)
    divergence = first_divergence(recorded.events, live.events, until)
    return LiveRun(rid, branch.header.id, [t for t, _ in later], divergence, workspace)
