"""The user's dsh directory: ``$DSH_HOME`` if set and non-empty, else ``~/.dsh`` (one rule)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def dsh_home(env: Mapping[str, str] | None = None) -> Path:
    """``$DSH_HOME`` if set and non-empty, else ``~/.dsh``."""
    env = os.environ if env is None else env
    home = env.get("DSH_HOME", "").strip()
    return Path(home).expanduser() if home else Path.home() / ".dsh"
