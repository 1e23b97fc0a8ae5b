"""``save``: turn a real session (and all its descendants) from any store into a scenario."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from dsh import jsonx
from dsh.errors import ScenarioError
from dsh.events.descriptor import find_descriptor
from dsh.redact import Redactor
from dsh.replay.layout import INPUT, PRIMARY
from dsh.session.timeline import Prompt, Request, Timeline
from dsh.snapshot.recording import TRANSCRIPT, scenario_logs, write_recording
from dsh.snapshot.redaction import (
    DEFAULT_REDACTION,
    RedactOptions,
    read_input_document,
    redact_lines,
    redact_sessions,
    redact_tree,
)
from dsh.snapshot.transcript import build_transcript, dumps_lines, normalize
from dsh.store import EventStore, LoadedSession
from dsh.store.bulk import paused_gc


async def _family(store: EventStore, root: str) -> dict[str, LoadedSession]:
    """The root session and every descendant, loaded."""
    sessions = {root: await store.load(root)}
    frontier = [root]
    while frontier:
        for child in await store.children(frontier.pop()):
            sid = child.header.id
            if sid not in sessions:
                sessions[sid] = await store.load(sid)
                frontier.append(sid)
    return sessions


def _prompts(loaded: LoadedSession, *, top: bool) -> list[tuple[int, list[dict[str, Any]]]]:
    """Each user prompt of the session with its time, as steps — for a top-level session with
    a ``resumeSession`` before a prompt whose turn a resumed process ran (its first call logged
    a ``resume`` request header: ``dsh run --resume`` in a second process), so the replay
    logs what that process logged."""
    out: list[tuple[int, list[dict[str, Any]]]] = []
    pending = False  # the last prompt's first call is not seen yet
    timeline = Timeline()
    for event in loaded.own_events:
        for item in timeline.feed(loaded.header.id, event):
            if isinstance(item, Prompt):
                out.append((event.time, [{"op": "prompt", "text": item.text}]))
                pending = True
            elif isinstance(item, Request) and pending:
                if top and item.reason == "resume" and len(out) > 1:
                    out[-1][1].insert(0, {"op": "resumeSession"})
                pending = False
    return out


def _from_code(sessions: dict[str, LoadedSession], parent: str) -> list[LoadedSession]:
    """The children of ``parent`` started from code (``Agent.spawn`` / ``Agent.fork``: no
    ``subagent/descriptor``, which every delegating tool logs)."""
    found = [
        s for s in sessions.values()
        if s.header.parent_session == parent and find_descriptor(s.own_events) is None
    ]  # fmt: skip
    return sorted(found, key=lambda s: (s.header.created_at, s.header.id))


def session_steps(sessions: dict[str, LoadedSession], root: str) -> list[dict[str, Any]]:
    """The steps that replay ``root``: a new session, then its prompts and — in time order —
    the children code started (``spawnChild`` / ``forkChild``, numbered 1.. as started) and
    their prompts (``prompt {child}``); a child is started before anything at the same time."""
    items: list[tuple[int, int, str, list[dict[str, Any]]]] = []
    frontier = [root]
    while frontier:
        sid = frontier.pop()
        for time, steps in _prompts(sessions[sid], top=sid == root):
            items.append((time, 1, sid, steps))
        for child in _from_code(sessions, sid):
            items.append((child.header.created_at, 0, child.header.id, []))
            frontier.append(child.header.id)
    numbers: dict[str, int] = {}
    out: list[dict[str, Any]] = [{"op": "newSession"}]
    for _, rank, sid, steps in sorted(items, key=lambda item: (item[0], item[1])):
        if rank == 0:
            loaded = sessions[sid]
            numbers[sid] = len(numbers) + 1
            step: dict[str, Any] = {"op": "forkChild" if loaded.inherited_event_count else "spawnChild"}
            parent = numbers.get(loaded.header.parent_session or "")
            if parent is not None:
                step["parent"] = parent
            out.append(step)
            continue
        for step in steps:
            if sid in numbers and step["op"] == "prompt":
                step["child"] = numbers[sid]
            out.append(step)
    return out


async def save_scenario(
    store: EventStore,
    session_id: str,
    directory: Path,
    *,
    workspace: Path | None = None,
    force: bool = False,
    redact: RedactOptions = DEFAULT_REDACTION,
) -> list[str]:
    """Write ``session_id`` and its descendants as a scenario in ``directory``.

    ``session.jsonl`` is the session (a top-level one), ``session.N.jsonl`` each descendant in
    the order the runner binds them, ``input.json`` its prompts, the normalized transcript,
    and — with ``workspace`` — a copy of that folder as ``workspace/`` (it should be the
    workspace as it was before the run). Every file, the workspace copy's text files too, is
    redacted by ``redact``'s rule (:mod:`dsh.snapshot.redaction`; its salt goes to ``input.json``).
    Returns the files written.
    """
    raw = await _family(store, session_id)
    root = raw[session_id]
    if root.header.parent_session is not None:
        raise ScenarioError(
            f"session {session_id} is a child of {root.header.parent_session}; save the top-level session"
        )
    previous = await asyncio.to_thread(read_input_document, directory) if force else {}
    rule = redact.rule(previous)
    with paused_gc():  # copies of whole logs, no cycles: the collector would walk them ~40 times
        sessions = redact_sessions(raw, rule.redactor)
        transcript = redact_lines(
            normalize(build_transcript(raw, session_id), cwd=root.header.cwd or None), rule.redactor
        )
        files = {
            **scenario_logs(sessions, session_id, root.header.cwd or ""),
            TRANSCRIPT: dumps_lines(transcript).encode(),
        }
        document = rule.input_document({"steps": session_steps(sessions, session_id)})
    return await asyncio.to_thread(_write, directory, document, files, workspace, force, rule.redactor)


def _write(
    directory: Path,
    document: dict[str, Any],
    files: dict[str, bytes],
    workspace: Path | None,
    force: bool,
    redactor: Redactor | None,
) -> list[str]:
    if (directory / PRIMARY).exists() and not force:
        raise ScenarioError(f"{directory} already holds a recording (pass --force to replace it)")
    if workspace is not None and not workspace.is_dir():
        raise ScenarioError(f"--workspace {workspace}: not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / INPUT).write_text(jsonx.dumps(document).decode() + "\n")
    if workspace is not None:
        target = directory / "workspace"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(workspace, target, symlinks=True)
        redact_tree(target, redactor)
    return [INPUT, *write_recording(directory, files)]
