"""Keyless replay: script derivation, per-session binding, overrides, the ReplayModel.

Names load on first use (:mod:`dsh.lazy`): importing one replay module (the scenario file
names of :mod:`dsh.replay.layout`, say) does not import the whole tier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh.lazy import exports

_HOMES = {
    "derive_script": "dsh.replay.derive",
    "Entry": "dsh.replay.entries",
    "apply_override": "dsh.replay.entries",
    "entry_from_json": "dsh.replay.entries",
    "ReplayModel": "dsh.replay.model",
    "SessionScript": "dsh.replay.model",
    "script_for": "dsh.replay.model",
}

__all__ = [
    "Entry",
    "ReplayModel",
    "SessionScript",
    "apply_override",
    "derive_script",
    "entry_from_json",
    "script_for",
]

__getattr__, __dir__ = exports(__name__, _HOMES)

if TYPE_CHECKING:
    from dsh.replay.derive import derive_script
    from dsh.replay.entries import Entry, apply_override, entry_from_json
    from dsh.replay.model import ReplayModel, SessionScript, script_for
