"""The ``dsh_serve`` pytest fixture: a record/replay server per test, its base URL yielded.

Registered for every pytest run by the package's ``pytest11`` entry point, named after the
module so that a ``pytest_plugins = ["dsh.serve.pytest_plugin"]`` line left in a conftest
is a no-op and ``-p no:dsh.serve.pytest_plugin`` turns it off. The mode is the snapshot
plugin's (``--dsh-snapshot`` / ``DSH_SNAPSHOT``): ``replay`` (default) and ``refresh``
replay, ``record`` records through ``dsh serve record``, ``once`` records only when the
directory does not exist yet. The directory is
``<test file's folder>/recordings/<test name>`` unless the test is marked
``@pytest.mark.dsh_serve(directory=..., upstream=..., speed=...)``; the upstream for
recording comes from the marker or ``DSH_SERVE_UPSTREAM`` (no upstream → the test is
skipped with that reason). The server runs on its own thread and event loop, so sync and
async tests can use it alike. At teardown a replayed test fails if any request got a 409 or
a recorded call was not served.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh.serve.record import RecordServer
from dsh.serve.replay import ReplayServer

UPSTREAM_ENV = "DSH_SERVE_UPSTREAM"


class BackgroundServer:
    """A ``ReplayServer`` or ``RecordServer`` on a thread with its own loop."""

    def __init__(self, server: ReplayServer | RecordServer) -> None:
        self.server = server
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="dsh-serve", daemon=True)

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def start(self, timeout: float = 10.0) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(timeout)

    def stop(self, timeout: float = 30.0) -> dict[str, Any]:
        try:
            asyncio.run_coroutine_threadsafe(self.server.close(), self._loop).result(timeout)
            return self.server.report()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
            if not self._thread.is_alive():
                self._loop.close()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "dsh_serve(directory=None, upstream=None, speed=0): where dsh_serve records and replays"
    )


def _mode(config: pytest.Config) -> str:
    try:
        value = config.getoption("--dsh-snapshot")
    except ValueError:
        value = None
    raw = str(value if value is not None else os.environ.get("DSH_SNAPSHOT", "")).strip()
    return raw or "replay"


@pytest.fixture
def dsh_serve(request: pytest.FixtureRequest) -> Iterator[str]:
    """The base URL (``http://127.0.0.1:PORT/v1``) of this test's record/replay server."""
    marker = request.node.get_closest_marker("dsh_serve")
    options: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    default = Path(str(request.node.path)).parent / "recordings" / re.sub(r"[^\w.-]+", "_", request.node.name)
    directory = Path(options.get("directory") or default)
    mode = _mode(request.config)
    record = mode == "record" or (mode == "once" and not (directory / "session.jsonl").exists())
    if record:
        upstream = options.get("upstream") or os.environ.get(UPSTREAM_ENV)
        if not upstream:
            pytest.skip(f"dsh_serve: recording needs an upstream (marker upstream= or ${UPSTREAM_ENV})")
        background = BackgroundServer(RecordServer(str(upstream), directory))
    else:
        if not (directory / "session.jsonl").exists():
            pytest.fail(f"dsh_serve: no recording at {directory} (run with --dsh-snapshot=record)")
        background = BackgroundServer(ReplayServer(directory, speed=float(options.get("speed", 0))))
    background.start()
    try:
        yield background.base_url
    finally:
        report = background.stop()
    if record:
        return
    problems = [f"409: {r.get('message')}\n{r.get('diff', '')}" for r in report["refused"]]
    problems += [f"recorded calls not served in {label}" for label in report["unconsumed"]]
    if problems:
        pytest.fail(f"dsh_serve replay of {directory}:\n" + "\n".join(problems), pytrace=False)
