"""``session/fork``'s one dsh extension: where to cut, read from the request's ``_meta``.

ACP's ``session/fork`` (unstable in the SDK) names only the session; dsh reads
``_meta: {"dsh": {"atTurn": N}}`` for a branch after turn N (``dsh sessions fork --at N``), and
cuts after the last completed turn without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsh.acp.prompt import invalid_params


def fork_turn(meta: Mapping[str, Any]) -> int | None:
    """The turn ``_meta.dsh.atTurn`` names (``None``: none, the last completed turn)."""
    ours = meta.get("dsh")
    if ours is None:
        return None
    turn = ours.get("atTurn") if isinstance(ours, dict) else None
    if type(turn) is not int or turn < 1:
        raise invalid_params('_meta.dsh.atTurn must be a turn number from 1, as in {"dsh": {"atTurn": 3}}')
    return turn
