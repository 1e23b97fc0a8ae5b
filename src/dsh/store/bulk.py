"""Bulk decoding without the cyclic garbage collector.

Decoding a long log allocates hundreds of thousands of containers and no cycles; the
collector would walk the growing heap again and again meanwhile (40–55% of a 100 k-event
load). :func:`paused_gc` turns it off for the loop and back on after, if it was on.

What a long read decoded outlives it (a resumed session's history lives as long as its
agent), and the collector would still walk all of it once per generation after the read (the
young generation, then the middle, then the old: ~0.3 s for a 100 k-event session before
the first model request). So when the block left at least :data:`FREEZE_AT` new containers,
they are moved out of the collector's generations (``gc.freeze``): freed by their reference
counts as ever, never walked again. A short read changes nothing.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

FREEZE_AT = 50_000
"""New containers a paused block must leave behind for them to be frozen (a 100 k-event log
leaves ~10× that; a short session's read, a few thousand)."""


@contextmanager
def paused_gc() -> Iterator[None]:
    """Run the block with the cyclic collector off (restored after, whatever happens); a
    block that left :data:`FREEZE_AT` new containers or more has them frozen (not nested
    blocks: the outermost one decides)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_count()[0] >= FREEZE_AT:
                gc.freeze()
            gc.enable()
