"""Test helper: the live processes whose command line mentions a marker (read from ``/proc``)."""

from __future__ import annotations

import os


def processes_with(marker: str, *, zombies: bool = True) -> list[int]:
    """Pids whose ``cmdline`` holds ``marker`` (``zombies=False``: leaving out exited ones
    that no one has reaped yet)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                line = handle.read()
            with open(f"/proc/{name}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in line and (zombies or state != b"Z"):
            found.append(int(name))
    return found
