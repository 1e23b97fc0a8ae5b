"""The time of a plain JSONL session file's last event, read from its end when its seal vouches
for it — what ``--continue`` needs of each file, without decoding the whole log.

The seal (``dsh.store.seal``) names the file's committed length, event count and a digest of
its last line. When the file is exactly that long, its last line is the sealed one: read
backwards from the end (no more than that line), checked against the digest, its ``time`` is
the last event's. Anything else — no seal, more or fewer bytes than sealed (a lagging seal, a
torn or cut tail), a zstd file, a digest or line that does not match — is :data:`UNKNOWN`: the
caller reads the file whole, as a listing does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

import orjson

from dsh.store.seal import line_digest, read_seal

UNKNOWN: Final = -1
"""Not known from the end alone (see the module docstring); never an event time here: those
are read as integers and a negative one is refused as unknown too."""
_WINDOW: Final = 1 << 16


def sealed_last_time(path: Path, size: int) -> int | None:
    """The last event's time of the plain session file ``path`` (``size`` bytes as stat'ed),
    ``None`` when it holds no event, :data:`UNKNOWN` when its seal cannot vouch for it."""
    seal = read_seal(path)
    if seal is None or seal.end != size:
        return UNKNOWN
    if seal.count == 0:
        return None
    line = _last_line(path, size)
    if line is None or line_digest(line) != seal.digest:
        return UNKNOWN
    try:
        time = orjson.loads(line).get("time")
    except (orjson.JSONDecodeError, AttributeError):
        return UNKNOWN
    return time if type(time) is int and time >= 0 else UNKNOWN


def _last_line(path: Path, size: int) -> bytes | None:
    """The file's last line without its newline, read from the end (``None``: the file does not
    end with a newline, or changed size meanwhile)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        window = _WINDOW
        while True:
            start = max(0, size - window)
            data = os.pread(fd, size - start, start)
            if len(data) != size - start or not data.endswith(b"\n"):
                return None
            cut = data.rfind(b"\n", 0, len(data) - 1)
            if cut >= 0:
                return data[cut + 1 : -1]
            if start == 0:  # one line: the header (a sealed count of 0 is handled before)
                return None
            window *= 4
    finally:
        os.close(fd)
