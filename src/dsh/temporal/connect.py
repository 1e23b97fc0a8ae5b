"""Connecting to a Temporal server: ``HOST:PORT`` → a client, or one line saying nobody answers."""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from temporalio.client import Client
from temporalio.service import RetryConfig

from dsh.errors import TemporalUnreachableError, UsageError

CONNECT_TIMEOUT: Final = timedelta(seconds=5)


def check_address(address: str) -> str:
    """``HOST:PORT`` as given, or a :class:`UsageError` naming it."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UsageError(f"--temporal {address!r}: give HOST:PORT (e.g. 127.0.0.1:7233)")
    return address


async def connect(address: str, *, namespace: str = "default", identity: str | None = None) -> Client:
    """A client of the server at ``address``; :class:`TemporalUnreachableError` when none answers."""
    try:
        return await Client.connect(
            check_address(address),
            namespace=namespace,
            identity=identity,
            connect_timeout=CONNECT_TIMEOUT,
            retry_config=RetryConfig(max_retries=1),
        )
    except RuntimeError as exc:
        raise TemporalUnreachableError(
            f"no Temporal server reachable at {address} (start one: dsh temporal dev)"
        ) from exc
