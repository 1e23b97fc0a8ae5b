"""``dsh serve``: an OpenAI-compatible HTTP server that records and replays any client."""

from dsh.serve.replay import ReplayServer, ServedSession, load_sessions
from dsh.serve.transport import RedirectTransport, ReplayTransport

__all__ = ["RedirectTransport", "ReplayServer", "ReplayTransport", "ServedSession", "load_sessions"]
