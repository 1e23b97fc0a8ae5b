"""The JSONL store's seal: what dsh last appended durably to a session file, so a cut is seen.

A session file cut back at a line boundary decodes as a valid, shorter session. The seal
beside it, ``<root>/.<file name>.seal``, records after every durable append the file's
event count, its committed byte length and a digest of its last line; a reader that finds
fewer bytes or events than the seal names reports the seqs that are missing (and the store
refuses to append after them), and a last sealed line that changed is corruption.

Layout: two fixed 64-byte slots, ``dshseal1 <count> <end> <digest>`` padded, each with a
checksum of its own; a writer overwrites one slot in place (``pwrite``), alternating, and the
reader takes the valid slot with the larger count. A torn slot write leaves the other slot
(one append older) in force: the seal may lag the file, never lead it (it is written only
after the file's ``fsync`` returned, and not synced itself: the kernel holds it at once, so a
killed process loses nothing; an OS crash can leave it older), so a crash can weaken the check
of the last appends, never make it report a loss that did not happen. The seal file is
created next to the session file (``create``, import, fork, or the first append to a file
an older dsh wrote); a file without a seal is not checked. The session files themselves
are unchanged (wire format).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from dsh.errors import CorruptLogError
from dsh.store.logfile import FILE_MODE

SEAL_SUFFIX: Final = ".seal"
SLOT: Final = 64
_MAGIC: Final = b"dshseal1"
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True, slots=True)
class Seal:
    """The file as dsh last appended it durably: ``count`` events, ``end`` bytes, last line's digest."""

    count: int
    end: int
    digest: str


def seal_path(path: Path) -> Path:
    """The seal of the session file ``path`` (hidden, so never listed as a session)."""
    return path.with_name(f".{path.name}{SEAL_SUFFIX}")


def line_digest(line: bytes) -> str:
    """A short digest of one line (without its newline)."""
    return hashlib.blake2b(line, digest_size=8).hexdigest()


def _check(body: bytes) -> bytes:
    return hashlib.blake2b(body, digest_size=4).hexdigest().encode()


def encode_slot(seal: Seal) -> bytes:
    body = b"%s %d %d %s" % (_MAGIC, seal.count, seal.end, seal.digest.encode())
    body = body.ljust(SLOT - 10)
    return body + b" " + _check(body) + b"\n"


def decode_slot(raw: bytes) -> Seal | None:
    """The seal in one slot, or ``None`` for an empty, torn or foreign one."""
    if len(raw) != SLOT or raw[-1:] != b"\n" or _check(raw[: SLOT - 10]) != raw[SLOT - 9 : SLOT - 1]:
        return None
    parts = raw[: SLOT - 10].split()
    if len(parts) != 4 or parts[0] != _MAGIC or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return Seal(int(parts[1]), int(parts[2]), parts[3].decode("ascii", "replace"))


def read_seal(path: Path) -> Seal | None:
    """The newest valid slot of ``path``'s seal; ``None`` when it has none (an older dsh's file)."""
    try:
        raw = seal_path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CorruptLogError(f"cannot read the seal of {path}: {exc.strerror or exc}") from exc
    slots = [decode_slot(raw[i : i + SLOT]) for i in (0, SLOT)]
    found = [s for s in slots if s is not None]
    return max(found, key=lambda s: (s.count, s.end)) if found else None


def open_seal(path: Path) -> int:
    """A read-write descriptor on ``path``'s seal, created (two empty slots) when missing."""
    fd = os.open(seal_path(path), os.O_RDWR | os.O_CREAT | _CLOEXEC, FILE_MODE)
    if os.fstat(fd).st_size < 2 * SLOT:
        os.pwrite(fd, b"\n" * (2 * SLOT), 0)
    return fd


def write_slot(fd: int, seal: Seal, slot: int) -> None:
    """Overwrite slot ``slot`` (0 or 1) with ``seal`` in place.

    Not synced: the kernel has it at once (a killed process loses nothing) and writes it back
    within its writeback interval; after an OS crash it may be older than the file, which
    only leaves the latest appends unchecked. A sync here cost +0.4 ms per durable append
    (+70%, docs/decisions/2026-12-02-jsonl-seal.md).
    """
    os.pwrite(fd, encode_slot(seal), slot * SLOT)


def write_new_seal(path: Path, seal: Seal) -> None:
    """The seal of a file just created (``seal`` in slot 0), replacing any stale one; not fsynced:
    a seal lost in a crash only means the file goes unchecked until its next durable append."""
    data = encode_slot(seal) + b"\n" * SLOT
    fd = os.open(seal_path(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _CLOEXEC, FILE_MODE)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def remove_seal(path: Path) -> None:
    """Remove ``path``'s seal if there is one."""
    seal_path(path).unlink(missing_ok=True)


def _seqs(first: int, last: int) -> str:
    return f"seq {first} is" if first == last else f"seqs {first}..{last} are"


def check_sealed(
    source: str, data: bytes, count: int, header_end: int, ends: list[int], seal: Seal
) -> str | None:
    """Compare a decoded file with its seal: the one-line loss report when sealed events are
    missing (``None`` when none are); a sealed last line that changed raises ``CorruptLogError``."""
    if seal.count > count:
        return (
            f"{source}: {_seqs(count, seal.count - 1)} missing — dsh appended {seal.count} events "
            f"durably ({seal.end} bytes) but the file holds {count}: it was cut short"
        )
    end = ends[seal.count - 1] if seal.count else header_end
    start = (ends[seal.count - 2] if seal.count > 1 else header_end) if seal.count else 0
    if end != seal.end or line_digest(data[start : end - 1]) != seal.digest:
        what = f"seq {seal.count - 1}" if seal.count else "the header"
        raise CorruptLogError(
            f"{source}, line {seal.count + 1}: the last line dsh appended durably ({what}) was rewritten"
        )
    return None
