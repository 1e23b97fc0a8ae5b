"""How ``--dist loadfile`` cuts the suite into work units: one per file, except that every test
under a folder of ``SHARED`` goes to one worker together (its package-scoped fixtures are then
set up once in the whole run, instead of once on every worker that drew one of its files)."""

from __future__ import annotations

from typing import Any

SHARED = {
    "tests/temporal": "a Temporal dev server, a scripted model and two `dsh worker` processes",
}
"""Folders run as one work unit, and what their package-scoped fixtures start."""


def scope_of(nodeid: str) -> str:
    """The work unit of a test: its file, or the folder of ``SHARED`` it is under."""
    path = nodeid.split("::", 1)[0]
    return next((folder for folder in SHARED if path.startswith(folder + "/")), path)


def make_scheduler(config: Any, log: Any) -> Any:
    """A ``loadfile`` scheduler whose work units are :func:`scope_of`."""
    from xdist.scheduler import LoadFileScheduling  # type: ignore[import-untyped]

    class SharedFolders(LoadFileScheduling):  # type: ignore[misc]  # xdist is untyped
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return SharedFolders(config, log)
