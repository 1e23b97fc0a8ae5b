"""``dsh serve``: an OpenAI-compatible HTTP server that records and replays any client.

Names load on first use (:mod:`dsh.lazy`), so the pytest plugin registered for every test
run imports none of the servers until a test asks for one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh.lazy import exports

_HOMES = {
    "ReplayServer": "dsh.serve.replay",
    "ServedSession": "dsh.serve.sessions",
    "load_sessions": "dsh.serve.sessions",
    "RedirectTransport": "dsh.serve.transport",
    "ReplayTransport": "dsh.serve.transport",
}

__all__ = ["RedirectTransport", "ReplayServer", "ReplayTransport", "ServedSession", "load_sessions"]

__getattr__, __dir__ = exports(__name__, _HOMES)

if TYPE_CHECKING:
    from dsh.serve.replay import ReplayServer
    from dsh.serve.sessions import ServedSession, load_sessions
    from dsh.serve.transport import RedirectTransport, ReplayTransport
