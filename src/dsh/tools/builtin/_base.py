"""Shared pieces of the built-in tools: file I/O helpers and the ACP title of a file call.

The file tools speak the original's error texts: a path is shown as the lexical
``resolve(cwd, path)`` in double quotes (``cannot read "D": not found``), with the original's
``FS_*`` codes.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dsh.errors import ToolError
from dsh.tools.base import ToolLocation, arg_text
from dsh.tools.codes import FS_NOT_FOUND, FS_NOT_REGULAR_FILE, FS_NOT_TEXT, IO_ERROR, tool_error
from dsh.tools.workspace import ResolvedPath


def file_title(verb: str, args: Mapping[str, Any]) -> str | None:
    """``<verb> <file_path>`` for an ACP title, when the call names a file."""
    path = arg_text(args, "file_path")
    return f"{verb} {path}" if path else None


def file_locations(args: Mapping[str, Any], line: int | None = None) -> tuple[ToolLocation, ...]:
    """The ``file_path`` a call touches, for an ACP client."""
    path = arg_text(args, "file_path")
    return (ToolLocation(path, line),) if path else ()


def quoted(path: ResolvedPath) -> str:
    """The display path in the original's double quotes."""
    return f'"{path.shown}"'


def os_failure(action: str, path: ResolvedPath, exc: OSError) -> ToolError:
    """Map an unexpected ``OSError`` to a one-line ``ToolError`` naming the path."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return tool_error(f"cannot {action} {quoted(path)}: {reason}", IO_ERROR)


def not_found(action: str, path: ResolvedPath) -> ToolError:
    return tool_error(f"cannot {action} {quoted(path)}: not found", FS_NOT_FOUND)


def not_regular(action: str, path: ResolvedPath) -> ToolError:
    return tool_error(f"cannot {action} {quoted(path)}: not a regular file", FS_NOT_REGULAR_FILE)


def stat_file(action: str, path: ResolvedPath) -> os.stat_result | None:
    """``stat`` of the real path (``None`` when missing); a parent that is a file is refused."""
    try:
        return os.stat(path.real)
    except FileNotFoundError:
        return None
    except NotADirectoryError as exc:
        raise tool_error(
            f"cannot resolve {quoted(path)}: a parent path segment is not a directory", FS_NOT_FOUND
        ) from exc
    except OSError as exc:
        raise os_failure(action, path, exc) from exc


def decode_text(action: str, path: ResolvedPath, data: bytes) -> str:
    """``data`` as UTF-8 text; a NUL byte (binary) or invalid UTF-8 is refused."""
    if b"\x00" in data:
        raise tool_error(f"cannot {action} {quoted(path)}: binary file", FS_NOT_TEXT)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise tool_error(f"cannot {action} {quoted(path)}: invalid UTF-8 text", FS_NOT_TEXT) from exc


def read_regular(action: str, path: ResolvedPath) -> tuple[bytes, os.stat_result] | None:
    """The bytes of a regular file and its ``fstat`` (``None`` when missing); never opens FIFOs."""
    st = stat_file(action, path)
    if st is None:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise not_regular(action, path)
    try:
        with open(path.real, "rb") as handle:
            data = handle.read()
            return data, os.fstat(handle.fileno())
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_failure(action, path, exc) from exc


def atomic_write(path: ResolvedPath, data: bytes, old_mode: int | None) -> os.stat_result:
    """Write ``data`` to ``path.real`` through a temp file, ``fsync`` and a rename (blocking).

    Missing parent directories are created; a replaced file keeps ``old_mode``. Returns the
    new file's ``stat``.
    """
    real = path.real
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
    except NotADirectoryError as exc:
        raise tool_error(
            f"cannot resolve {quoted(path)}: a parent path segment is not a directory", FS_NOT_FOUND
        ) from exc
    except OSError as exc:
        raise os_failure("create the directory for", path, exc) from exc
    tmp = real.with_name(f".{real.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if old_mode is None else 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if old_mode is not None:
            os.chmod(tmp, old_mode)
        os.replace(tmp, real)
        return os.stat(real)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise os_failure("write", path, exc) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def file_report(path: ResolvedPath, body: str) -> str:
    """The tagged shape file tools answer in: path, type and a content section."""
    return f"<path>{path.shown}</path>\n<type>file</type>\n<content>\n{body}\n</content>"


def real_key(path: ResolvedPath) -> str:
    """The observation key of a path: its real path as a string."""
    return str(Path(path.real))
