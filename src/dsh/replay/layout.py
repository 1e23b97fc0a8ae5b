"""The file names of a scenario directory (no replay machinery imported, so the pytest plugin
can match them cheaply)."""

from __future__ import annotations

from dsh.redact.settings import SETTINGS_FILE

PRIMARY = "session.jsonl"
"""The top-level session's recorded log (children: ``session.N.jsonl``)."""
INPUT = SETTINGS_FILE
"""The scenario's prompts and settings; a directory holding one is a scenario."""
OVERRIDE = "replay.override.json"
"""The optional sidecar replacing recorded entries."""
