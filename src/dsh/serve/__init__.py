"""``dsh serve``: an OpenAI-compatible HTTP server that records and replays any client."""

from dsh.serve.replay import ReplayServer, ServedSession, load_sessions

__all__ = ["ReplayServer", "ServedSession", "load_sessions"]
