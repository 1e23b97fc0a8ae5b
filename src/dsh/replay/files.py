"""Loading a scenario's recorded logs and override sidecar into a ReplayModel."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh import jsonx
from dsh.errors import OverrideError, ScenarioError
from dsh.events.vocabulary import TOOL_CALL
from dsh.hooks import FILE_NAMES, load_hook_file
from dsh.model.settings import DEFAULT_MODEL
from dsh.replay.entries import apply_override
from dsh.replay.fidelity import Drift, Tolerances
from dsh.replay.fixtures import SnapshotFixtures
from dsh.replay.layout import INPUT, OVERRIDE, PRIMARY
from dsh.replay.model import ReplayModel, SessionScript, script_for
from dsh.store import LoadedSession
from dsh.store.bulk import freeze_heap, paused_gc
from dsh.store.logfile import load_log_file

_CHILD = re.compile(r"^session\.(\d+)\.jsonl$")


@dataclass(frozen=True, slots=True)
class RecordedLogs:
    """A scenario's recorded sessions: the primary first, then children by file number."""

    primary: LoadedSession | None
    children: list[tuple[str, LoadedSession]]
    versions: dict[str, int] = field(default_factory=dict)
    """Each log's format version by file name (0: the original's, 2: ours)."""

    def by_label(self) -> dict[str, LoadedSession]:
        """Every recorded session by its script label (file name), the primary first."""
        primary = {PRIMARY: self.primary} if self.primary is not None else {}
        return {**primary, **dict(self.children)}


def child_files(directory: Path) -> list[Path]:
    """``session.1.jsonl``, ``session.2.jsonl``, ... — contiguous from 1."""
    found: dict[int, Path] = {}
    for path in directory.iterdir():
        m = _CHILD.match(path.name)
        if m:
            found[int(m.group(1))] = path
    numbers = sorted(found)
    if numbers != list(range(1, len(numbers) + 1)):
        raise ScenarioError(f"{directory}: child logs must be numbered 1..N without gaps, found {numbers}")
    return [found[n] for n in numbers]


def read_recorded(directory: Path) -> RecordedLogs:
    """Read every recorded log of a scenario (v0 or v2)."""
    versions: dict[str, int] = {}

    def load(path: Path) -> LoadedSession:
        decoded = load_log_file(path)
        versions[path.name] = decoded.version
        return decoded.as_loaded()

    primary_path = directory / PRIMARY
    primary = load(primary_path) if primary_path.exists() else None
    children = [(p.name, load(p)) for p in child_files(directory)]
    return RecordedLogs(primary, children, versions)


def read_override(directory: Path) -> object | None:
    """The parsed ``replay.override.json``, or ``None`` when the scenario has none."""
    path = directory / OVERRIDE
    if not path.exists():
        return None
    try:
        document: object = jsonx.loads(path.read_bytes())
    except jsonx.JSONDecodeError as exc:
        raise OverrideError(f"scenario {directory.name}: {OVERRIDE} is not valid JSON: {exc}") from exc
    return document


def check_scenario_directory(directory: Path, *, need_input: bool = False) -> None:
    """Refuse what is no scenario directory, in one line: a path that does not exist, a file,
    and (``need_input``: what is to be run step by step) a directory with neither an
    ``input.json`` nor a recorded ``session.jsonl`` (whose prompts are its steps)."""
    if not directory.exists():
        raise ScenarioError(f"scenario directory {directory} does not exist")
    if not directory.is_dir():
        raise ScenarioError(f"scenario {directory} is not a directory")
    if need_input and ((directory / INPUT).exists() or not (directory / PRIMARY).exists()):
        read_input(directory)


def read_input(directory: Path) -> dict[str, Any]:
    """The scenario's ``input.json`` as an object."""
    path = directory / INPUT
    try:
        doc = jsonx.loads(path.read_bytes())
    except FileNotFoundError as exc:
        raise ScenarioError(f"scenario {directory.name}: {INPUT} is missing") from exc
    except jsonx.JSONDecodeError as exc:
        raise ScenarioError(f"scenario {directory.name}: {INPUT} is not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise ScenarioError(f"scenario {directory.name}: {INPUT} must be a JSON object")
    return doc


def declared_input(directory: Path) -> dict[str, Any]:
    """``input.json`` as an object, ``{}`` when the scenario has none (a recording the
    ``dsh_recording`` fixture wrote unredacted declares nothing)."""
    return read_input(directory) if (directory / INPUT).exists() else {}


def read_tolerances(directory: Path, drift: Drift = "strict") -> Tolerances:
    """The tolerances the scenario declares (``input.json`` → ``"replay"``), with ``drift``."""
    doc = declared_input(directory)
    return Tolerances.from_scenario(doc.get("replay"), f"scenario {directory.name}: {INPUT}", drift)


def load_replay_model(
    directory: Path,
    *,
    cwd: Path | None = None,
    sliced: bool = True,
    tolerances: Tolerances | None = None,
    recorded: RecordedLogs | None = None,
) -> tuple[ReplayModel, RecordedLogs]:
    """A ReplayModel for the scenario in ``directory`` (``recorded``: its logs, when the caller
    has read them already — the warning naming the commands a replay runs is made from the
    same read as the replay, not from a second one).

    Every script checks each live request against its recording (``tolerances``: the
    scenario's declared rules and drift mode; default strict). A full-replacement override
    replaces the primary script *before* derivation, so a recorded call the override stands
    in for need not be servable. ``sliced=False`` only for tests that prove why the slice at
    the inherited cut is needed.
    """
    with paused_gc():  # thousands of recorded calls: millions of objects, none of them garbage
        replay, logs = _load_replay_model(directory, cwd, sliced, tolerances, recorded)
        replay.hold_heap(freeze_heap())  # no collection walks them again until the replay closes
    return replay, logs


def _load_replay_model(
    directory: Path, cwd: Path | None, sliced: bool, tolerances: Tolerances | None, read: RecordedLogs | None
) -> tuple[ReplayModel, RecordedLogs]:
    name = directory.name
    check_scenario_directory(directory)
    tolerances = tolerances if tolerances is not None else read_tolerances(directory)
    recorded = read if read is not None else read_recorded(directory)
    override = read_override(directory)
    if recorded.primary is None and override is None:
        raise ScenarioError(f"scenario {name}: {PRIMARY} is missing (record the scenario first)")

    def script(label: str, loaded: LoadedSession, *, cut: int, strict: bool = True) -> SessionScript:
        header = loaded.header
        return script_for(
            label, header.id, header.created_at, loaded.events, cut, header.parent_session,
            version=recorded.versions.get(label, 2), tolerances=tolerances, cwd=cwd, strict=strict,
            recorded_cwd=header.cwd,
        )  # fmt: skip

    if titles_by_model(recorded):
        override = None  # the override serves the title model (dsh.replay.upstream), not the session
    replaces = isinstance(override, list)
    if recorded.primary is not None:
        primary = script(
            PRIMARY, recorded.primary, cut=recorded.primary.inherited_event_count, strict=not replaces
        )
    else:
        primary = SessionScript(PRIMARY, "", 0, [])
    if override is not None:
        primary.entries = apply_override(primary.entries, override, f"scenario {name}: {OVERRIDE}")
    children = [
        script(label, loaded, cut=loaded.inherited_event_count if sliced else 0)
        for label, loaded in recorded.children
    ]
    model_name = recorded_model_name([recorded.primary, *(loaded for _, loaded in recorded.children)])
    original = recorded.versions.get(PRIMARY) == 0  # the original's recording: its harness fixtures
    fixtures = SnapshotFixtures(cwd) if original and cwd is not None else None
    replay = ReplayModel(primary, children, scenario=name, cwd=cwd, model_name=model_name, fixtures=fixtures)
    return replay, recorded


def recorded_model_name(sessions: Sequence[LoadedSession | None]) -> str:
    """The model the recording asked for: the primary session's last ``request/header``, else
    (a parent that never asked the model: its children were started from code with
    ``agent.spawn()``) the first child's that has one; :data:`DEFAULT_MODEL` when none did."""
    for loaded in sessions:
        for event in reversed(loaded.events if loaded else []):
            if event.type == "request/header":
                config = event.data.get("header", {}).get("config", {})
                name = config.get("model") if isinstance(config, dict) else None
                if isinstance(name, str) and name:
                    return name
                break
    return DEFAULT_MODEL


TITLE_REQUEST = "session/title-llm-request"


def titles_by_model(recorded: RecordedLogs) -> bool:
    """Whether the recording asked a title model (its override then scripts that model)."""
    primary = recorded.primary
    return primary is not None and any(e.type == TITLE_REQUEST for e in primary.events)


def _shown(command: str, limit: int = 80) -> str:
    escaped = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in command)
    return escaped if len(escaped) <= limit else escaped[: limit - 1] + "…"


def recorded_commands(directory: Path, recorded: RecordedLogs | None = None) -> list[str]:
    """The ``bash`` commands a replay of the scenario will run (recorded calls and override
    entries), each shown on one line with control characters escaped, in log order
    (``recorded``: its logs, already read)."""
    recorded = recorded if recorded is not None else read_recorded(directory)
    calls: list[object] = []
    for loaded in [recorded.primary, *(c for _, c in recorded.children)]:
        for event in loaded.events if loaded else []:
            if event.type == TOOL_CALL and event.data.get("name") == "bash":
                calls.append(event.data.get("arguments"))
    override = read_override(directory)
    for entry in override if isinstance(override, list) else []:
        for chunk in entry.get("chunks", []) if isinstance(entry, dict) else []:
            block = chunk.get("block") if isinstance(chunk, dict) else None
            if isinstance(block, dict) and block.get("type") == "tool-call" and block.get("name") == "bash":
                calls.append(block.get("arguments"))
    out: list[str] = []
    for raw in calls:
        try:
            args = jsonx.loads(raw) if isinstance(raw, str) else raw
        except jsonx.JSONDecodeError:
            continue
        command = args.get("command") if isinstance(args, dict) else None
        if isinstance(command, str) and _shown(command) not in out:
            out.append(_shown(command))
    return out


def hook_commands(directory: Path) -> list[str]:
    """The hook commands the scenario's ``workspace/`` configures (a replay runs them too)."""
    out: list[str] = []
    for dialect, name in FILE_NAMES.items():
        hooks = load_hook_file(directory / "workspace" / name, dialect)
        for groups in hooks.events.values() if hooks is not None else ():
            for group in groups:
                out.extend(f"hook: {_shown(c.command)}" for c in group.commands)
    return list(dict.fromkeys(out))
