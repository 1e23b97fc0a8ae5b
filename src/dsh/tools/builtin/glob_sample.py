"""Over-cap ``glob`` results: the original's sampling across top-level entries and its footer.

The full list is in modification-time order. Each path's group is its first segment
relative to the search root (a file directly in the root is its own group); groups keep
the order they first appear in. Round r takes the r-th path of every group that still has
one, in group order, until ``cap`` paths are taken; the sample is printed grouped (each
group's paths together, in list order). The footer says how many were shown and, when the
groups are fewer than the paths, across how many of the top-level entries.
"""

from __future__ import annotations

import os

RECOVERY = "The complete result could not be saved; narrow pattern or path to see more."


def _group(path: str, root: str) -> str:
    rel = os.path.relpath(path, root) if root not in ("", ".") else path
    rel = rel.removeprefix("./").lstrip("/")
    return rel.split("/", 1)[0] if "/" in rel else rel


def sample(paths: list[str], root: str, cap: int) -> tuple[list[str], int, int]:
    """The shown paths (grouped), the groups shown (S) and all groups (T)."""
    groups: dict[str, list[str]] = {}
    for path in paths:
        groups.setdefault(_group(path, root), []).append(path)
    taken: dict[str, int] = dict.fromkeys(groups, 0)
    count, depth = 0, 0
    while count < cap:
        progressed = False
        for key, members in groups.items():
            if count >= cap:
                break
            if depth < len(members):
                taken[key] += 1
                count += 1
                progressed = True
        if not progressed:
            break
        depth += 1
    shown = [p for key, members in groups.items() for p in members[: taken[key]]]
    return shown, sum(1 for n in taken.values() if n), len(groups)


def over_cap(paths: list[str], root: str, cap: int, *, sampled: bool) -> tuple[list[str], str]:
    """The paths shown and the text of an over-cap result (``sampled=False``: the oldest ``cap``)."""
    if not sampled:
        shown = paths[:cap]
        return shown, "\n".join(shown) + f"\n\n(Showing {len(shown)} of {len(paths)} paths. {RECOVERY})"
    shown, s, t = sample(paths, root, cap)
    if t == len(paths):
        basis = "."
    else:
        basis = (
            f", sampled across {s} of the {t} top-level entries this pattern matched instead of taken in "
            "modification-time order."
        )
        if s < t:
            basis += " Narrow path to inspect a specific subtree."
    return shown, "\n".join(shown) + f"\n\n(Showing {len(shown)} of {len(paths)} paths{basis} {RECOVERY})"
