"""Keyless replay: script derivation, per-session binding, overrides, the ReplayModel."""

from dsh.replay.derive import derive_script
from dsh.replay.entries import Entry, apply_override, entry_from_json
from dsh.replay.model import ReplayModel, SessionScript, script_for

__all__ = [
    "Entry",
    "ReplayModel",
    "SessionScript",
    "apply_override",
    "derive_script",
    "entry_from_json",
    "script_for",
]
