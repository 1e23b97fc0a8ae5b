"""A real headless Chromium for the viewer's browser tests, and the viewer on a real socket."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn

from dsh.loop import Feed
from dsh.store.url import open_store
from dsh.ui.app import create_app
from dsh.ui.server import bind, url_of
from tests.patience import until_sync

CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def chromium_path() -> str:
    """The browser to drive, or skip the test saying why."""
    wanted = os.environ.get("DSH_UI_CHROMIUM")
    for path in (wanted, *CANDIDATES, shutil.which("chromium")):
        if path and Path(path).is_file() and os.access(path, os.X_OK):
            return path
    pytest.skip(
        "no Chromium found (looked for $DSH_UI_CHROMIUM, /usr/bin/chromium, chromium on PATH); "
        "`make test` installs Debian's chromium with apt-get when apt is available"
    )


@contextmanager
def serving(url: str, *, poll_interval: float = 0.05, feed: Feed | None = None) -> Iterator[str]:
    """The viewer over the store at ``url``, on 127.0.0.1:free-port in a thread; yields its URL."""
    sock = bind("127.0.0.1", 0)
    app = create_app(lambda: open_store(url), label=url, poll_interval=poll_interval, feed=feed)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        until_sync(lambda: server.started, "the viewer serves", every=0.025)
        yield url_of(sock).rstrip("/")
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
