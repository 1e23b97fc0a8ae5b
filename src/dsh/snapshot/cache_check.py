"""The re-record cache check: a new recording's prefix reuse against the committed one's.

At ``record`` (``dsh scenario record``, ``pytest --dsh-snapshot=record``), each request of
the new run is compared with the same request of the recording it replaces
(:func:`dsh.replay.prefix.reuse_drops`): a request that now rewrites its prefix — a tool
reordered, a system-prompt section that changes per request, a message rewritten — is a
drop. ``fail`` (the default) refuses the recording naming each drop; ``warn`` writes it and
says them; ``off`` does not look.

At replay and refresh, a request of the run that rewrites its prefix (a replay reproduces the
recording's requests) fails the scenario unless ``input.json`` accepts its region
(:func:`accepted_breaks`); ``warn`` says it, ``off`` does not look.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from dsh.errors import ScenarioError, UsageError
from dsh.replay.files import read_recorded
from dsh.replay.layout import PRIMARY
from dsh.replay.reuse import Reuse, reuse_drops, tree_reuse
from dsh.store import LoadedSession

CacheCheck = Literal["fail", "warn", "off"]
CACHE_CHECKS: tuple[CacheCheck, ...] = ("fail", "warn", "off")


def cache_check(value: str) -> CacheCheck:
    """``fail``, ``warn`` or ``off`` (anything else: a one-line usage error)."""
    for known in CACHE_CHECKS:
        if value == known:
            return known
    raise UsageError(f"--cache {value!r} is not one of fail, warn, off")


def cache_drops(directory: Path, sessions: Mapping[str, LoadedSession], root: str) -> list[str]:
    """The drops of the new run ``sessions`` (its top-level session ``root``) against the
    recording committed in ``directory`` (none when there is none yet)."""
    if not (directory / PRIMARY).exists():
        return []
    logs = read_recorded(directory)
    if logs.primary is None:
        return []
    committed = {logs.primary.header.id: logs.primary, **{c.header.id: c for _, c in logs.children}}
    return reuse_drops(tree_reuse(committed, logs.primary.header.id), tree_reuse(sessions, root))


def accepted_breaks(document: Mapping[str, object]) -> tuple[str, ...]:
    """The regions ``input.json`` accepts a prefix rewrite at: ``"cache": {"accept":
    ["tools", "the system prompt", "message 3", "*"]}`` (``*``: any)."""
    cache = document.get("cache")
    accept = cache.get("accept") if isinstance(cache, dict) else None
    if accept is None:
        return ()
    if not isinstance(accept, list) or not all(isinstance(a, str) for a in accept):
        raise ScenarioError('input.json: "cache": {"accept": [...]} must list region names (or "*")')
    return tuple(accept)


def unaccepted_breaks(reuse: Sequence[Reuse], accepted: Sequence[str]) -> list[str]:
    """A line for each request that rewrites its prefix at a region ``accepted`` does not name."""
    return [
        f'{r.line()} (accept it in input.json: "cache": {{"accept": ["{r.broke.region}"]}})'
        for r in reuse
        if r.flagged and r.broke is not None and "*" not in accepted and r.broke.region not in accepted
    ]
