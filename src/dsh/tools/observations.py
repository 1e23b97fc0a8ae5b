"""What one session has seen of each file: the state behind the read-before-mutate guard.

Keyed by real path, an observation is either *present* at a version
(``dev:ino:size:mtimeNs:ctimeNs``) or *absent*. Successful reads record *present*, reads of
a missing file record *absent*, successful writes and edits record the new version; what
``bash`` does is not observed. One :class:`FileObservations` belongs to one agent (one
session) and reaches the tools as ``ToolContext.files``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Present:
    """The file existed at ``version`` when the session last saw it."""

    version: str


@dataclass(frozen=True, slots=True)
class Absent:
    """The file did not exist when the session last looked."""


ABSENT: Final = Absent()

Observation = Present | Absent


def file_version(st: os.stat_result) -> str:
    """The version an observation compares: ``dev:ino:size:mtimeNs:ctimeNs``."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


class FileObservations:
    """Per-session map from a file's real path to what the session last saw of it."""

    def __init__(self) -> None:
        self._seen: dict[str, Observation] = {}

    def get(self, real_path: str) -> Observation | None:
        """The last observation of ``real_path``, or ``None`` when the session never looked."""
        return self._seen.get(real_path)

    def saw_present(self, real_path: str, st: os.stat_result) -> None:
        self._seen[real_path] = Present(file_version(st))

    def saw_absent(self, real_path: str) -> None:
        self._seen[real_path] = ABSENT

    def __len__(self) -> int:
        return len(self._seen)
