"""How a JSONL store root keeps its session files on disk: plain ``.jsonl`` or ``.jsonl.zst``.

- Plain (``jsonl:DIR``, the default): the file is the log's lines.
- Zstd (``jsonl+zstd:DIR``): the file is a concatenation of independent Zstandard frames,
  each with its content checksum: frame 1 holds exactly the header line, the seed (if
  any) one more frame, and each write of an append batch one more frame (a durable append
  writes its events, and any buffered before them, as one frame). Every complete frame
  ends with a newline (it holds whole lines); an incomplete last frame is a torn tail
  (:func:`dsh.store.logfile.split_frames`): the complete lines it yields are kept and the
  next append truncates the file to the frame's start and writes them again, in its frame.
- A root is single-encoding: a session file of the other encoding found in it is refused
  (:meth:`FileEncoding.mismatch`), never read or listed.

Everything above the file bytes (the scan, the seal, fork slicing, summaries) works on the
plaintext lines, identical in both encodings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from dsh.errors import CorruptLogError, UnsupportedFormatError, UsageError
from dsh.store.lease import session_file_stem
from dsh.store.logfile import ZSTD_MAGIC, compress, split_frames

PLAIN_SUFFIX: Final = ".jsonl"
ZSTD_SUFFIX: Final = ".jsonl.zst"
COMPRESSIONS: Final = ("none", "zstd")
"""``JsonlEventStore(root, compression=...)``: the values it takes."""


@dataclass(frozen=True, slots=True)
class Unpacked:
    """A session file's bytes read back as plaintext lines."""

    plain: bytes
    complete_end: int
    """File offset after the last complete frame (plain: the file's size)."""
    complete_plain: int
    """Plaintext length of the complete frames (plain: the file's size)."""
    warnings: list[str]

    def resume(self, committed: int) -> tuple[int, bytes]:
        """``(file offset, carry)`` for a writer after the plaintext's ``committed`` bytes (its
        last complete line): where the next write starts, and the committed lines it must
        write again (those a torn last frame held; plain files never have any)."""
        if committed < self.complete_plain:  # plain: a torn last line
            return committed, b""
        return self.complete_end, self.plain[self.complete_plain : committed]


def _check_magic(raw: bytes, path: Path) -> None:
    if raw and not raw.startswith(ZSTD_MAGIC):
        raise CorruptLogError(f"{path}: not zstd-compressed (a {ZSTD.url_scheme} store file is zstd frames)")


@dataclass(frozen=True, slots=True)
class FileEncoding:
    """One of the two encodings (:data:`PLAIN`, :data:`ZSTD`)."""

    compression: str
    suffix: str
    url_scheme: str

    @property
    def zstd(self) -> bool:
        return self.compression == "zstd"

    def pack(self, plain: bytes) -> bytes:
        """The file bytes that append ``plain`` (whole lines; zstd: one frame)."""
        return compress(plain) if self.zstd and plain else plain

    def pack_new(self, header_line: bytes, body: bytes) -> bytes:
        """A new file's bytes: the header line, then ``body`` (zstd: a frame each)."""
        if not self.zstd:
            return header_line + body
        return self.pack(header_line) + self.pack(body)

    def unpack(self, raw: bytes, path: Path) -> Unpacked:
        """A session file's plaintext (zstd: complete frames, then the torn last frame's part)."""
        if not self.zstd:
            if raw.startswith(ZSTD_MAGIC):
                raise UnsupportedFormatError(
                    f"{path} is zstd-compressed; a plain JSONL store keeps .jsonl files "
                    f"(import it, or open a {ZSTD.url_scheme}:DIR store)"
                )
            return Unpacked(raw, len(raw), len(raw), [])
        _check_magic(raw, path)
        frames = split_frames(raw, str(path))
        if frames.complete_plain and frames.plain[frames.complete_plain - 1] != 0x0A:
            raise CorruptLogError(f"{path}: its complete zstd frames end inside a line")
        return Unpacked(frames.plain, frames.complete_end, frames.complete_plain, frames.warnings)

    def head(self, raw: bytes, path: Path) -> bytes:
        """The plaintext start of a file whose first bytes are ``raw`` (zstd: frame 1's)."""
        if not self.zstd:
            return self.unpack(raw, path).plain
        _check_magic(raw, path)
        return split_frames(raw, str(path), limit=1).plain

    def file_name(self, session_id: str) -> str:
        """The file name holding ``session_id`` (an injective, filesystem-safe mapping)."""
        return session_file_stem(session_id) + self.suffix

    @property
    def other(self) -> FileEncoding:
        return PLAIN if self.zstd else ZSTD

    def is_other(self, name: str) -> bool:
        """Whether ``name`` is a session file of the other encoding (hidden files never are)."""
        return name.endswith(self.other.suffix) and not name.startswith(".")

    def mismatch(self, path: Path) -> UnsupportedFormatError:
        """The one-line refusal of a session file of the other encoding in this root."""
        kind = "plain" if self.zstd else "zstd"
        return UnsupportedFormatError(
            f"{path}: encoding mismatch: a {kind} session file in a {self.url_scheme}: store "
            f"(a root holds one encoding; open it as {self.other.url_scheme}:{path.parent})"
        )


PLAIN: Final = FileEncoding("none", PLAIN_SUFFIX, "jsonl")
ZSTD: Final = FileEncoding("zstd", ZSTD_SUFFIX, "jsonl+zstd")


def encoding_for(compression: str) -> FileEncoding:
    """The encoding of ``JsonlEventStore(root, compression=)``: ``"none"`` or ``"zstd"``."""
    for encoding in (PLAIN, ZSTD):
        if encoding.compression == compression:
            return encoding
    raise UsageError(f"unknown JSONL compression {compression!r} (use one of {', '.join(COMPRESSIONS)})")
