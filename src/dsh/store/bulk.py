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

What a bulk load keeps for a bounded run (a replay's recording) is frozen on purpose and
given back after: :func:`freeze_heap` moves what the collector tracks to its permanent
generation (``gc.freeze``) until the last :class:`HeapHold` is released (``gc.unfreeze``).
The last release unfreezes every frozen object, a long read's
included: they are walked again, nothing is lost.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
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


@contextmanager
def start_up() -> Iterator[Callable[[], None]]:
    """A command's start-up with the cyclic collector off: what it builds (its modules, the
    session it reads, the agent over it) lives as long as the process, and the collector
    walked it again and again meanwhile (~80 ms of a 100 k-event ``dsh run -c`` before its
    first request, ~10%: a full collection among the imports, young ones over the read).

    The block gets ``ready``: everything the collector tracks then is frozen (``gc.freeze``:
    never walked again, freed by reference counts as ever) and the collector is on again,
    for the work that follows (a turn's garbage is collected as ever). The block's end calls
    it if nothing did (a refusal, an error); only the first call counts. A collector that was
    off stays off."""
    was_enabled = gc.isenabled()
    gc.disable()
    done = False

    def ready() -> None:
        nonlocal done
        if not done:
            done = True
            if was_enabled:
                gc.freeze()
                gc.enable()

    try:
        yield ready
    finally:
        ready()


_lock = threading.Lock()
_holds = 0


class HeapHold:
    """One holder of the frozen heap (:func:`freeze_heap`); :meth:`release` is idempotent."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held = True

    def release(self) -> None:
        """Give the hold up; the last one returns the permanent generation to the collector."""
        global _holds
        with _lock:
            if not self._held:
                return
            self._held = False
            _holds -= 1
            if _holds == 0:
                gc.unfreeze()

    def refreeze(self) -> None:
        """While held, move what the collector tracks now to the permanent generation too
        (``gc.freeze``: a splice of its lists, no walk): a bounded run that grows its heap
        (a replay's live sessions, call after call) calls it at each step, so no later
        collection walks what it built so far. The last release gives it all back."""
        if self._held:
            gc.freeze()


def freeze_heap() -> HeapHold:
    """Move every object the collector tracks now to its permanent generation, where no
    collection walks it, until the last hold is released.

    For what a bulk load built and keeps for a run (call it in :func:`paused_gc`, so nothing
    it built was walked at all). Objects freed by their reference counts are freed as ever;
    a cycle that becomes garbage while frozen is collected only after the release."""
    global _holds
    with _lock:
        gc.freeze()
        _holds += 1
    return HeapHold()


def heap_held() -> int:
    """How many holds keep the heap frozen now."""
    return _holds
