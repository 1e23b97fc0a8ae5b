"""The file names of a scenario directory (stdlib only, so the pytest plugin can match them
without importing the replay machinery)."""

from __future__ import annotations

PRIMARY = "session.jsonl"
"""The top-level session's recorded log (children: ``session.N.jsonl``)."""
INPUT = "input.json"
"""The scenario's prompts and settings; a directory holding one is a scenario."""
OVERRIDE = "replay.override.json"
"""The optional sidecar replacing recorded entries."""
