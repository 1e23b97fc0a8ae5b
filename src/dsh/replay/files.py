"""Loading a scenario's recorded logs and override sidecar into a ReplayModel."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from dsh import jsonx
from dsh.errors import OverrideError, ScenarioError
from dsh.replay.entries import apply_override
from dsh.replay.model import ReplayModel, SessionScript, script_for
from dsh.store import LoadedSession
from dsh.store.logfile import load_log_file

PRIMARY = "session.jsonl"
OVERRIDE = "replay.override.json"
_CHILD = re.compile(r"^session\.(\d+)\.jsonl$")


@dataclass(frozen=True, slots=True)
class RecordedLogs:
    """A scenario's recorded sessions: the primary first, then children by file number."""

    primary: LoadedSession | None
    children: list[tuple[str, LoadedSession]]


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
    primary_path = directory / PRIMARY
    primary = load_log_file(primary_path).as_loaded() if primary_path.exists() else None
    children = [(p.name, load_log_file(p).as_loaded()) for p in child_files(directory)]
    return RecordedLogs(primary, children)


def _script(label: str, loaded: LoadedSession) -> SessionScript:
    return script_for(
        label,
        loaded.header.id,
        loaded.header.created_at,
        loaded.events,
        loaded.inherited_event_count,
        loaded.header.parent_session,
    )


def load_replay_model(
    directory: Path, *, cwd: Path | None = None, sliced: bool = True
) -> tuple[ReplayModel, RecordedLogs]:
    """A ReplayModel for the scenario in ``directory`` (``sliced=False`` only for tests
    that prove why the slice at the inherited cut is needed)."""
    name = directory.name
    if not directory.is_dir():
        raise ScenarioError(f"scenario {directory} is not a directory")
    recorded = read_recorded(directory)
    override_path = directory / OVERRIDE
    if recorded.primary is None and not override_path.exists():
        raise ScenarioError(f"scenario {name}: {PRIMARY} is missing (record the scenario first)")
    if recorded.primary is not None:
        primary = _script(PRIMARY, recorded.primary)
    else:
        primary = SessionScript(PRIMARY, "", 0, [])
    if override_path.exists():
        try:
            document = jsonx.loads(override_path.read_bytes())
        except jsonx.JSONDecodeError as exc:
            raise OverrideError(f"scenario {name}: {OVERRIDE} is not valid JSON: {exc}") from exc
        primary.entries = apply_override(primary.entries, document, f"scenario {name}: {OVERRIDE}")
    children = []
    for label, loaded in recorded.children:
        if sliced:
            children.append(_script(label, loaded))
        else:
            children.append(
                script_for(label, loaded.header.id, loaded.header.created_at, loaded.events, 0,
                           loaded.header.parent_session)
            )  # fmt: skip
    return ReplayModel(primary, children, scenario=name, cwd=cwd), recorded
