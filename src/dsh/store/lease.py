"""Session leases: one live writer per session — the per-handle lease table and OS file locks.

A store handle keeps a :class:`LeaseTable` over a backend that can *try once* to take a
session's lock, name the current holder, and release. The table adds what every backend
shares: the ``wait`` polling loop, the one-line :class:`~dsh.errors.SessionBusyError`, and
sharing within one handle (a second ``lease`` of a session the handle already holds is
granted; the lock is released after the last token is). Closing the table releases all.

:class:`FileLeases` is the backend of the JSONL and SQLite stores: ``flock(LOCK_EX |
LOCK_NB)`` on one lock file per session, which the kernel releases when the holder dies.
The holder writes ``{"pid", "host", "since"}`` into the file it locked, so a refused writer
can name it. Releasing unlinks the file while still holding the lock; an acquirer that
locked a file no longer at the path (it raced such a release) retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Generic, Protocol, TypeVar

import orjson

from dsh import jsonx
from dsh.errors import SessionBusyError, StoreError
from dsh.ids import now_ms
from dsh.store.base import LeaseHolder, SessionLease
from dsh.store.notices import report

try:  # POSIX only
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - non-POSIX platforms
    _fcntl = None  # type: ignore[assignment]

POLL_INTERVAL_S: Final = 0.05
"""How often a waiting writer retries (``wait`` > 0)."""

_PLAIN_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
_SAFE_BYTES: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_MAX_STEM: Final = 240

L = TypeVar("L")
T = TypeVar("T")


def session_file_stem(session_id: str) -> str:
    """A filesystem-safe, injective file name stem for ``session_id``.

    Ids with characters outside ``[A-Za-z0-9._-]`` (or a leading ``.``) are escaped as
    ``~XX`` per UTF-8 byte.
    """
    if _PLAIN_ID.fullmatch(session_id):
        name = session_id
    else:
        raw = session_id.encode("utf-8", "surrogatepass")
        name = "".join(
            chr(b) if b in _SAFE_BYTES and not (i == 0 and b == 0x2E) else f"~{b:02X}"
            for i, b in enumerate(raw)
        )
    if not name or len(name) > _MAX_STEM:
        raise StoreError(f"session id {session_id[:40]!r} cannot be used as a file name")
    return name


def current_holder() -> LeaseHolder:
    """This process as a lease holder, from now."""
    return LeaseHolder(os.getpid(), socket.gethostname(), now_ms())


def busy_error(session_id: str, holder: LeaseHolder | None) -> SessionBusyError:
    if holder is None:
        return SessionBusyError(session_id, None, None, None)
    return SessionBusyError(session_id, holder.pid, holder.host, holder.since_text)


def encode_holder(holder: LeaseHolder) -> bytes:
    return jsonx.dumps_unchecked({"pid": holder.pid, "host": holder.host, "since": holder.since})


def decode_holder(data: bytes | str) -> LeaseHolder | None:
    """The holder recorded in ``data``, or ``None`` when it is not (yet) a complete record."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(raw, dict):
        return None
    pid, host, since = raw.get("pid"), raw.get("host"), raw.get("since")
    if type(pid) is not int or not isinstance(host, str) or type(since) is not int:
        return None
    return LeaseHolder(pid, host, since)


class LeaseBackend(Protocol[L]):
    """What a store provides to a :class:`LeaseTable`: one try, the holder, a release."""

    async def try_acquire(self, session_id: str, me: LeaseHolder) -> L | None:
        """Take the session's lock now and record ``me``; ``None`` when another holder has it."""
        ...

    async def holder(self, session_id: str) -> LeaseHolder | None:
        """Who holds the session's lock, if that is recorded."""
        ...

    async def release(self, lock: L) -> None:
        """Give back a lock :meth:`try_acquire` returned (the session is free again)."""
        ...

    async def give_up(self, session_id: str) -> None:
        """The table stopped trying for ``session_id`` (busy or cancelled): drop any resources kept."""
        ...


@dataclass(slots=True, eq=False)
class _Held(Generic[L]):
    lock: L
    holder: LeaseHolder
    count: int = 1


class _Token(Generic[L]):
    """One ``lease()`` grant; the lock goes when the last token of the handle is released."""

    __slots__ = ("_released", "_table", "holder", "session_id")

    def __init__(self, table: LeaseTable[L], session_id: str, holder: LeaseHolder) -> None:
        self._table = table
        self._released = False
        self.session_id = session_id
        self.holder = holder

    async def release(self) -> None:
        """Give the grant back; a cancel that comes meanwhile does not stop the backend's
        release half-way (it goes on, shielded, and the cancel is raised here)."""
        if self._released:
            return
        self._released = True
        await asyncio.shield(self._table.release(self.session_id))

    def __repr__(self) -> str:
        return f"SessionLease({self.session_id!r}, pid {self.holder.pid})"


class LeaseTable(Generic[L]):
    """The leases one store handle holds, over a :class:`LeaseBackend`."""

    def __init__(self, backend: LeaseBackend[L]) -> None:
        self._backend = backend
        self._held: dict[str, _Held[L]] = {}
        self._gates: dict[str, asyncio.Lock] = {}

    def holds(self, session_id: str) -> bool:
        return session_id in self._held

    async def acquire(self, session_id: str, wait: float = 0.0) -> SessionLease:
        """Take (or share) ``session_id``'s lease, polling up to ``wait`` seconds for a holder to go."""
        gate = self._gates.setdefault(session_id, asyncio.Lock())
        async with gate:
            held = self._held.get(session_id)
            if held is not None:
                held.count += 1
                return _Token(self, session_id, held.holder)
            me = current_holder()
            lock = await self._poll(session_id, me, time.monotonic() + max(wait, 0.0))
            self._held[session_id] = _Held(lock, me)
            return _Token(self, session_id, me)

    async def _poll(self, session_id: str, me: LeaseHolder, deadline: float) -> L:
        announced = False
        try:
            while True:
                lock = await self._backend.try_acquire(session_id, me)
                if lock is not None:
                    return lock
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise busy_error(session_id, await self._backend.holder(session_id))
                if not announced:  # say once why we wait, and for whom
                    announced = True
                    busy = busy_error(session_id, await self._backend.holder(session_id))
                    report(f"{busy}; waiting up to {remaining:.0f} s for it")
                await asyncio.sleep(min(POLL_INTERVAL_S, remaining))
        except BaseException:
            await asyncio.shield(self._backend.give_up(session_id))
            raise

    async def release(self, session_id: str) -> None:
        held = self._held.get(session_id)
        if held is None:
            return
        held.count -= 1
        if held.count <= 0:
            del self._held[session_id]
            await self._backend.release(held.lock)

    async def close(self) -> None:
        """Release every held lock; the first failure is raised after trying all."""
        first_error: BaseException | None = None
        held, self._held = self._held, {}
        for entry in held.values():
            try:
                await self._backend.release(entry.lock)
            except Exception as exc:  # keep releasing the others
                first_error = first_error or exc
        if first_error is not None:
            raise first_error


async def blocking_acquire(attempt: Callable[[], T | None], undo: Callable[[T], None]) -> T | None:
    """Run a blocking ``attempt`` in a thread; if the caller is cancelled, ``undo`` what it took."""
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(None, attempt)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            got = await future
            if got is not None:
                undo(got)
        raise


async def _off_loop(fn: Callable[[], T]) -> T:
    return await asyncio.get_running_loop().run_in_executor(None, fn)


@dataclass(frozen=True, slots=True)
class FileLock:
    fd: int
    path: Path


class FileLeases:
    """Leases as ``flock``'ed files: ``<directory>/<prefix><stem><suffix>`` per session."""

    def __init__(self, directory: Path, *, prefix: str = "", suffix: str = ".lock") -> None:
        self.directory = directory
        self.prefix = prefix
        self.suffix = suffix

    def path_for(self, session_id: str) -> Path:
        return self.directory / f"{self.prefix}{session_file_stem(session_id)}{self.suffix}"

    def _try_sync(self, session_id: str, me: LeaseHolder) -> FileLock | None:
        if _fcntl is None:  # pragma: no cover - non-POSIX platforms
            raise StoreError("session leases need POSIX file locks (fcntl), not available here")
        path = self.path_for(session_id)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            while True:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
                try:
                    _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    return None
                except BaseException:
                    os.close(fd)
                    raise
                try:
                    current = os.stat(path).st_ino
                except FileNotFoundError:
                    current = -1
                if current != os.fstat(fd).st_ino:  # a holder released (unlinked) it meanwhile
                    os.close(fd)
                    continue
                try:
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, encode_holder(me), 0)
                except BaseException:
                    os.close(fd)
                    raise
                return FileLock(fd, path)
        except OSError as exc:
            raise StoreError(f"cannot take the session lease {path}: {exc.strerror or exc}") from exc

    def _holder_sync(self, session_id: str) -> LeaseHolder | None:
        path = self.path_for(session_id)
        for _ in range(10):  # the holder may be writing its record right now
            try:
                holder = decode_holder(path.read_bytes())
            except OSError:
                holder = None
            if holder is not None:
                return holder
            time.sleep(0.02)
        return None

    @staticmethod
    def _release_sync(lock: FileLock) -> None:
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock.path)
        finally:
            os.close(lock.fd)

    async def try_acquire(self, session_id: str, me: LeaseHolder) -> FileLock | None:
        return await blocking_acquire(lambda: self._try_sync(session_id, me), self._release_sync)

    async def holder(self, session_id: str) -> LeaseHolder | None:
        return await _off_loop(lambda: self._holder_sync(session_id))

    async def give_up(self, session_id: str) -> None:
        return None

    async def release(self, lock: FileLock) -> None:
        try:
            await _off_loop(lambda: self._release_sync(lock))
        except OSError as exc:
            raise StoreError(f"cannot release the session lease {lock.path}: {exc.strerror or exc}") from exc


__all__ = [
    "POLL_INTERVAL_S",
    "FileLeases",
    "FileLock",
    "LeaseBackend",
    "LeaseTable",
    "busy_error",
    "current_holder",
    "decode_holder",
    "encode_holder",
    "session_file_stem",
]
