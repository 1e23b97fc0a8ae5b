"""The tool-result spill rule: a long text result is saved to a file and replaced by a preview.

After a tool runs, the registry hands its result to :meth:`SpillPolicy.apply`. A
successful, all-text result of any tool except ``read``, ``history_read`` and
``history_search`` (they bound their own answers and page) whose UTF-8 size exceeds
``max_inline_bytes`` (default 800, as in the original's overlay that recorded
``bash-spill``) is written to ``<root>/session-<first 12 hex of sha256(session id)>/<12
random hex>-<tool>.txt`` and replaced by the original's preview::

    <first ceil(B/2) bytes><last floor(B/2) bytes>

    (Omitted N bytes. Full formatted result stored at: <path>. Use read with offset/limit,
    or grep this path to search within it.)

where B = max_inline_bytes - bytes(notice with N = the whole size) - 2, the cuts never split
a UTF-8 character, and N is the number of bytes actually dropped. When the preview would
still be too long, or the file cannot be written, the result is kept as it was.

The root is ``$DSH_SPILL_DIR`` when set, else ``<system temp dir>/dsh-spill-<12 hex of the
user>``: a per-user directory (mode 0700, refused when another user owns it) whose path is
as long as the original's ``/tmp/dsh-acp-snap-<9 hex>``, so previews keep the original's
byte budget.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import secrets
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final

from dsh.events.messages import text_block
from dsh.tools.base import ToolOutput

DEFAULT_MAX_INLINE_BYTES: Final = 800
SPILL_DIR_ENV: Final = "DSH_SPILL_DIR"
EXEMPT_TOOLS: Final = frozenset({"read", "history_read", "history_search"})


def default_spill_root() -> Path:
    """``$DSH_SPILL_DIR``, else a per-user directory under the system temp dir."""
    configured = os.environ.get(SPILL_DIR_ENV)
    if configured:
        return Path(configured)
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    owner = f"{user}:{os.getuid() if hasattr(os, 'getuid') else 0}"
    return Path(tempfile.gettempdir()) / f"dsh-spill-{hashlib.sha256(owner.encode()).hexdigest()[:12]}"


def session_dir_name(session_id: str) -> str:
    """``session-<first 12 hex of sha256(session id)>``."""
    return f"session-{hashlib.sha256(session_id.encode()).hexdigest()[:12]}"


def notice(omitted: int, locator: str) -> str:
    """The line that replaces the omitted middle of a spilled result."""
    return (
        f"(Omitted {omitted} bytes. Full formatted result stored at: {locator}. "
        "Use read with offset/limit, or grep this path to search within it.)"
    )


def _head(data: bytes, n: int) -> bytes:
    """At most ``n`` leading bytes, cut back to a character boundary."""
    n = max(0, min(n, len(data)))
    while 0 < n < len(data) and data[n] & 0xC0 == 0x80:
        n -= 1
    return data[:n]


def _tail(data: bytes, n: int) -> bytes:
    """At most ``n`` trailing bytes, cut forward to a character boundary."""
    start = len(data) - max(0, min(n, len(data)))
    while start < len(data) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:]


def preview(text: str, locator: str, max_inline_bytes: int) -> str | None:
    """The preview that replaces ``text`` spilled to ``locator``, or ``None`` if it would not fit."""
    data = text.encode("utf-8")
    budget = max_inline_bytes - len(notice(len(data), locator).encode("utf-8")) - 2
    if budget < 0:
        return None
    head = _head(data, (budget + 1) // 2)
    tail = _tail(data, budget // 2)
    omitted = len(data) - len(head) - len(tail)
    out = (head + tail).decode("utf-8") + "\n\n" + notice(omitted, locator)
    return out if len(out.encode("utf-8")) <= max_inline_bytes else None


def _private_dir(path: Path) -> None:
    """Create ``path`` (mode 0700) or check an existing one is a directory only we can use."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(f"{path} is not a directory")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise OSError(f"{path} belongs to another user")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


class SpillPolicy:
    """Where long results go and how long an inline result may be."""

    def __init__(
        self,
        root: str | Path | None = None,
        *,
        max_inline_bytes: int = DEFAULT_MAX_INLINE_BYTES,
        token: Callable[[], str] = lambda: secrets.token_hex(6),
    ) -> None:
        self.root = Path(os.path.abspath(root if root is not None else default_spill_root()))
        self.max_inline_bytes = max_inline_bytes
        self._token = token

    def path_for(self, session_id: str, tool: str) -> Path:
        """A fresh file path for one spilled result of ``tool``."""
        return self.root / session_dir_name(session_id) / f"{self._token()}-{tool}.txt"

    def apply(self, tool: str, session_id: str, output: ToolOutput) -> ToolOutput:
        """``output``, or its preview when it qualifies and the full text could be saved (blocking)."""
        if tool in EXEMPT_TOOLS or output.is_error or not output.content:
            return output
        if any(block.get("type") != "text" for block in output.content):
            return output
        text = "".join(str(block.get("text", "")) for block in output.content)
        if len(text.encode("utf-8")) <= self.max_inline_bytes:
            return output
        path = self.path_for(session_id, tool)
        shown = preview(text, str(path), self.max_inline_bytes)
        if shown is None:
            return output
        try:
            _private_dir(self.root)
            _private_dir(path.parent)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
        except OSError:
            return output
        return ToolOutput([text_block(shown)], output.is_error, output.code, output.meta)
