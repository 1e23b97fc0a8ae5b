"""The ``dsh_serve`` pytest fixtures: a record/replay server per test.

``dsh_serve`` yields the server's base URL (any client, any library). ``dsh_serve_client``
yields a :class:`ServeClient` for Python clients built on ``httpx2`` (the ``openai`` SDK and
what wraps it): ``http_client()`` / ``async_http_client()`` answer in-process when
replaying (:class:`~dsh.serve.transport.ReplayTransport`, no socket; the HTTP server is
started only if the test asks for ``base_url``) and go through the recording proxy when
recording (:class:`~dsh.serve.transport.RedirectTransport`). Both fixtures share one server.

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
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # registered for every pytest run: the servers are imported when a test asks
    import httpx2

    from dsh.serve.record import RecordServer
    from dsh.serve.replay import ReplayServer
    from dsh.serve.transport import RedirectTransport, ReplayTransport
    from dsh.snapshot.redaction import RedactOptions

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

    @property
    def started(self) -> bool:
        return self._thread.is_alive()

    def start(self, timeout: float = 10.0) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(timeout)

    def stop(self, timeout: float = 30.0) -> dict[str, Any]:
        """Closes the server (if it was started) and returns its report."""
        if not self.started:
            self._loop.close()
            return self.server.report()
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


class ServeClient:
    """What ``dsh_serve_client`` yields: this test's server, for clients in the same process."""

    def __init__(self, background: BackgroundServer, *, directory: Path) -> None:
        self.directory = directory
        self._background = background

    @property
    def server(self) -> ReplayServer | RecordServer:
        return self._background.server

    @property
    def record(self) -> bool:
        """Whether this test records (through ``dsh serve record``) rather than replays."""
        from dsh.serve.replay import ReplayServer

        return not isinstance(self._background.server, ReplayServer)

    @property
    def token(self) -> str:
        """The server's per-run control token: send it as ``X-Dsh-Token`` to ``/_dsh/report``
        and ``/_dsh/shutdown`` (the fixture stops the server itself at teardown)."""
        return self._background.server.token

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (a replay's HTTP server starts on first use)."""
        if not self._background.started:
            self._background.start()
        return self._background.base_url

    def transport(self) -> ReplayTransport | RedirectTransport:
        """In-process replay, or a redirect to the recording proxy."""
        from dsh.serve.replay import ReplayServer
        from dsh.serve.transport import RedirectTransport, ReplayTransport

        server = self._background.server
        if isinstance(server, ReplayServer):
            return ReplayTransport(server)
        return RedirectTransport(self.base_url)

    def http_client(self, **kwargs: Any) -> httpx2.Client:
        """An ``httpx2.Client`` on :meth:`transport` (``kwargs`` go to the client)."""
        import httpx2

        return httpx2.Client(transport=self.transport(), **kwargs)

    def async_http_client(self, **kwargs: Any) -> httpx2.AsyncClient:
        """An ``httpx2.AsyncClient`` on :meth:`transport` (``kwargs`` go to the client)."""
        import httpx2

        return httpx2.AsyncClient(transport=self.transport(), **kwargs)


def _check_clean(directory: Path, redact: RedactOptions) -> None:
    """After a record: ``dsh scenario scan`` over what it wrote; a finding fails the test."""
    from dsh.snapshot.redaction import secrets_left

    if not directory.is_dir():
        return
    names = sorted(
        p.name for p in directory.iterdir() if p.name.startswith("session") or p.name == "input.json"
    )
    left = secrets_left(directory, names, redact)
    if left:
        pytest.fail(
            f"dsh_serve: the recording {directory} still holds secrets:\n" + "\n".join(left), pytrace=False
        )


@pytest.fixture
def dsh_serve_client(request: pytest.FixtureRequest) -> Iterator[ServeClient]:
    """This test's record/replay server as a :class:`ServeClient`."""
    from dsh.serve.record import RecordServer
    from dsh.serve.replay import ReplayServer

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
        # record mode re-records: an earlier recording is replaced whole when the test ends
        from dsh.snapshot.plugin import redaction_options

        redact = redaction_options(request.config)
        background = BackgroundServer(RecordServer(str(upstream), directory, replace=True, redact=redact))
        background.start()
    else:
        if not (directory / "session.jsonl").exists():
            pytest.fail(f"dsh_serve: no recording at {directory} (run with --dsh-snapshot=record)")
        background = BackgroundServer(ReplayServer(directory, speed=float(options.get("speed", 0))))
    try:
        yield ServeClient(background, directory=directory)
    finally:
        report = background.stop()
    if record:
        _check_clean(directory, redact)
        return
    if not report["ok"]:  # the replay verdict (dsh.replay.verdict), as the server reports it
        refused = f" ({len(report['refused'])} request(s) refused with 409)" if report["refused"] else ""
        pytest.fail(
            f"dsh_serve replay of {directory}{refused}:\n" + "\n".join(report["problems"]), pytrace=False
        )


@pytest.fixture
def dsh_serve(dsh_serve_client: ServeClient) -> str:
    """The base URL (``http://127.0.0.1:PORT/v1``) of this test's record/replay server."""
    return dsh_serve_client.base_url
