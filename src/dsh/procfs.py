"""Keeping a secret out of this process's ``/proc/<pid>/environ`` and ``cmdline``.

Those two files show the process's original environment and argument blocks, which live in
its own memory, for as long as it runs: to any process of the same user, and, under the
Landlock sandbox (no PID namespace), to a confined ``bash`` command that walks up its
ancestors. Python keeps its own copies (``os.environ``, ``sys.argv``), so once a composition
root has read the provider key it overwrites the key's bytes in both blocks with ``*``: the
files then show ``DEEPSEEK_API_KEY=******``. It also marks the process not dumpable, so a
process of the same user without ``CAP_SYS_PTRACE`` cannot read its memory
(``/proc/<pid>/mem``) or those files at all. Measured with ``bench/redteam_secrets.py --extra``.
Linux only (elsewhere nothing is done); stdlib only, importable from any layer.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys

MIN_SECRET = 8
"""Shorter values are not scrubbed (they would match unrelated bytes)."""


def _blocks() -> list[tuple[int, int]]:
    """(start, end) of the argument and environment blocks (``proc(5)``: stat fields 48–51)."""
    with open("/proc/self/stat", "rb") as handle:
        fields = handle.read().rsplit(b")", 1)[1].split()
    arg_start, arg_end, env_start, env_end = (int(fields[n - 3]) for n in (48, 49, 50, 51))
    return [(arg_start, arg_end), (env_start, env_end)]


SET_DUMPABLE = 4  # PR_SET_DUMPABLE


def _not_dumpable() -> None:
    """Mark this process not dumpable: its ``/proc/<pid>/mem``, ``environ`` and the like then
    need ``CAP_SYS_PTRACE`` (a process of the same user without it — a ``danger-full-access``
    command run by a normal user — cannot read the key out of dsh's memory); no core dumps."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(SET_DUMPABLE, 0, 0, 0, 0)


def scrub_secret(secret: str | None) -> int:
    """Overwrite every occurrence of ``secret`` in this process's argument and environment
    blocks; returns how many were overwritten (0 off Linux, for a short or absent secret)."""
    if not secret or len(secret) < MIN_SECRET or not sys.platform.startswith("linux"):
        return 0
    _not_dumpable()
    needle = secret.encode()
    found = 0
    try:
        blocks = _blocks()
    except (OSError, ValueError, IndexError):
        return 0
    for start, end in blocks:
        if not 0 < start < end:
            continue
        block = ctypes.string_at(start, end - start)
        at = block.find(needle)
        while at >= 0:
            ctypes.memset(start + at, ord("*"), len(needle))
            found += 1
            at = block.find(needle, at + len(needle))
    return found
