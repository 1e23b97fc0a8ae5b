"""The one-store rule of a task queue: every worker polling it runs over the same store.

A turn's activities land on any worker of the queue, so they must all read and write one
store. A worker says which store it runs over in its Temporal identity
(``dsh-worker store=<kind>:<key> <pid>@<host>``; ``key``: a PostgreSQL URL's label without
the password and with the schema, or a file store's absolute path and host). Before it
starts polling, a worker describes the queue and reads the identities of its current
pollers: one that names another store refuses it (:class:`StoreNotSharedError`). So a
worker on SQLite or JSONL (a store of one machine) is refused on a queue that already has
PostgreSQL workers, and a PostgreSQL worker on a queue whose workers use a file store.
Pollers that are not dsh workers are ignored. The server keeps a poller listed for a few
minutes after it stops polling, so a worker moved to another store waits that long.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from typing import Final

from temporalio.client import Client

from dsh.errors import StoreNotSharedError
from dsh.store import EventStore, JsonlEventStore, SqliteEventStore
from dsh.temporal.pollers import queue_pollers

_IDENTITY: Final = re.compile(r"^dsh-worker store=(\S+) ")


@dataclass(frozen=True, slots=True)
class StoreIdentity:
    """Which store a worker runs over: ``postgres``, ``sqlite``, ``jsonl``, ``jsonl+zstd`` or
    ``memory``, and where (a JSONL root's two encodings are two stores: a root holds one)."""

    kind: str
    key: str

    @property
    def shared(self) -> bool:
        """Whether workers on other machines can use it (only PostgreSQL)."""
        return self.kind == "postgres"

    def __str__(self) -> str:
        return f"{self.kind}:{self.key}"


def store_identity(store: EventStore) -> StoreIdentity:
    """The identity of ``store`` (see the module docstring)."""
    host = socket.gethostname()
    if isinstance(store, SqliteEventStore):
        return StoreIdentity("sqlite", f"{host}:{os.path.abspath(store.path)}")
    if isinstance(store, JsonlEventStore):
        return StoreIdentity(store.encoding.url_scheme, f"{host}:{os.path.abspath(store.root)}")
    url = getattr(store, "url", None)
    if isinstance(url, str) and url.startswith(("postgresql:", "postgres:")):
        from dsh.store.postgres_url import parse_postgres_url  # psycopg's extra: only when in use

        target = parse_postgres_url(url)
        return StoreIdentity("postgres", f"{target.label}#{target.schema}")
    return StoreIdentity("memory", f"{host}/{os.getpid()}/{id(store)}")


def worker_identity(store: StoreIdentity) -> str:
    """The Temporal identity a dsh worker polls with."""
    return f"dsh-worker store={store} {os.getpid()}@{socket.gethostname()}"


def poller_store(identity: str) -> str | None:
    """The store a poller's identity names (``None``: not a dsh worker)."""
    found = _IDENTITY.match(identity)
    return found.group(1) if found else None


async def check_queue(client: Client, task_queue: str, mine: StoreIdentity) -> None:
    """Refuse to join ``task_queue`` when its pollers run over another store."""
    for identity in await queue_pollers(client, task_queue):
        theirs = poller_store(identity)
        if theirs is None or theirs == str(mine):
            continue
        shared = theirs.startswith("postgres:")
        what = "a shared PostgreSQL store" if shared else "another store"
        raise StoreNotSharedError(
            f"task queue {task_queue!r} already has workers on {what} ({theirs}); this worker's "
            f"store {mine} is not theirs: every worker of a queue must use the same store "
            "(give --store the queue's PostgreSQL URL, or use another --task-queue)"
        )
