"""Shared pieces of the built-in tools: the typed tool base class and safe file I/O helpers."""

from __future__ import annotations

import os
import secrets
import stat
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel

from dsh.errors import ToolInputError
from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.codes import BINARY_FILE, IO_ERROR, IS_DIRECTORY, NOT_A_FILE, NOT_FOUND, tool_error
from dsh.tools.workspace import ResolvedPath

A = TypeVar("A", bound=BaseModel)

BINARY_SNIFF_BYTES = 8192


class BuiltinTool(ABC, Generic[A]):
    """A tool with a typed ``call``; ``run`` checks the arguments are this tool's model."""

    name: str
    description: str
    args_model: type[A]
    concurrency_safe: bool = False

    def is_concurrency_safe(self, args: BaseModel) -> bool:
        return self.concurrency_safe

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        if not isinstance(args, self.args_model):
            raise ToolInputError(
                f"tool {self.name!r} expects {self.args_model.__name__} arguments, got {type(args).__name__}"
            )
        return await self.call(args, ctx)

    @abstractmethod
    async def call(self, args: A, ctx: ToolContext) -> ToolOutput:
        """The tool body, with validated arguments."""


def os_failure(action: str, path: Path, exc: OSError) -> Exception:
    """Map an ``OSError`` from file I/O to a one-line ``ToolError`` naming the path."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return tool_error(f"cannot {action} {path}: {reason}", IO_ERROR)


def require_file(path: ResolvedPath) -> None:
    """Raise unless ``path`` is an existing regular file (never opens FIFOs or devices)."""
    real = path.real
    if not real.exists():
        raise tool_error(f"file not found: {path.shown}", NOT_FOUND)
    if real.is_dir():
        raise tool_error(f"{path.shown} is a directory, not a file (use glob to list it)", IS_DIRECTORY)
    if not real.is_file():
        raise tool_error(f"{path.shown} is not a regular file", NOT_A_FILE)


def binary_error(path: ResolvedPath, why: str) -> Exception:
    return tool_error(
        f"{path.shown} looks like a binary file ({why}); only UTF-8 text is supported", BINARY_FILE
    )


def read_text(path: ResolvedPath) -> str:
    """The whole file as UTF-8 text (blocking); binary or non-UTF-8 content is refused."""
    require_file(path)
    try:
        data = path.real.read_bytes()
    except OSError as exc:
        raise os_failure("read", path.shown, exc) from exc
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise binary_error(path, "it contains NUL bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise binary_error(path, f"invalid UTF-8 at byte {exc.start}") from exc


def count_lines(text: str) -> int:
    """Lines as an editor counts them: a final line without a newline still counts."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def atomic_write(path: ResolvedPath, data: bytes) -> bool:
    """Write ``data`` to ``path.real`` through a temp file and a rename (blocking).

    Missing parent directories are created; an existing file keeps its permission bits.
    Returns whether the file was created (as opposed to replaced).
    """
    real = path.real
    if real.is_dir():
        raise tool_error(f"{path.shown} is a directory, not a file", IS_DIRECTORY)
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_failure("create the directory for", path.shown, exc) from exc
    try:
        old_mode: int | None = stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        old_mode = None
    except OSError as exc:
        raise os_failure("write", path.shown, exc) from exc
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
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise os_failure("write", path.shown, exc) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return old_mode is None


def file_report(path: ResolvedPath, body: str) -> str:
    """The tagged shape file tools answer in: path, type and a content section."""
    return f"<path>{path.shown}</path>\n<type>file</type>\n<content>\n{body}\n</content>"
