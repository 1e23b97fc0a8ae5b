"""Which open connection a dsh server closes when one peer address holds too many: the one
home of that rule.

A server that keeps a connection open while it waits for a request head (30 s by default)
can have every file descriptor held by idle connections (a slowloris, or a client leaking
sockets), and a legitimate request then waits that long. :class:`PeerSlots` caps the
connections of each peer address (:func:`default_peer_cap`: fewer than the descriptors one
process has) and makes room for a new connection by closing the peer's longest-idle one —
accepted with no request head yet, or kept alive between requests — never one that is being
answered. ``dsh serve`` and the scripted test server (:class:`dsh.http1.Listener`) and
``dsh ui`` (:mod:`dsh.ui.protocol`) share it. Stdlib only, so any layer may use it.
"""

from __future__ import annotations

import itertools
import resource
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

PEER_CAP = 256
"""The most connections one peer address may hold open (fewer where descriptors are fewer:
:func:`default_peer_cap`)."""
RESERVED_FDS = 32
"""Descriptors :func:`default_peer_cap` leaves to the process itself (files, the store, logs)."""
LOG_EVERY = 60.0
"""At most one log line per this many seconds about shed or refused connections."""

Log = Callable[[str], None]


def default_peer_cap() -> int:
    """The connections one peer address may hold: :data:`PEER_CAP`, or half the descriptors
    the process has beyond :data:`RESERVED_FDS` where that is fewer (at least 4), so that one
    peer alone never runs the server out of descriptors."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return PEER_CAP
    return max(4, min(PEER_CAP, (soft - RESERVED_FDS) // 2))


_TICKS = itertools.count()


@dataclass(eq=False, slots=True)
class Slot:
    """One open connection in a :class:`PeerSlots`: its peer address, how to close it, and
    since when it has been idle (waiting for a request head: ``None`` while a request is
    being read on or answered)."""

    peer: str
    close: Callable[[], object]
    idle_since: int | None = field(default_factory=lambda: next(_TICKS))

    def wait(self) -> None:
        """The connection waits for a request head (accepted, or kept alive after a reply)."""
        if self.idle_since is None:
            self.idle_since = next(_TICKS)

    def work(self) -> None:
        """A whole request head has arrived: not to be shed until it is answered."""
        self.idle_since = None


class PeerSlots:
    """The open connections of one server, by peer address: the one home of the shedding rule.

    A peer holds at most ``cap`` connections (default :func:`default_peer_cap`). A new one
    over the cap closes that peer's longest-idle connection first (accepted with no request
    head yet, or kept alive between requests: what a slowloris holds); when every one of them
    is busy answering a request, the new connection is refused instead. Out of descriptors,
    :meth:`shed_longest_idle` frees one from any peer. Each shedding is logged at most once
    per :data:`LOG_EVERY` seconds.
    """

    def __init__(self, cap: int | None = None, *, log: Log, name: str) -> None:
        if cap is not None and cap < 1:
            raise ValueError(f"a peer's connection cap must be at least 1, not {cap}")
        self.cap = cap if cap is not None else default_peer_cap()
        self.shed = 0
        """How many idle connections were closed to make room."""
        self.refused = 0
        """How many new connections were refused (their peer's connections all busy)."""
        self._log = log
        self._name = name
        self._by_peer: dict[str, set[Slot]] = {}
        self._logged_at: float | None = None

    def open(self, peer: str, close: Callable[[], object]) -> Slot | None:
        """The slot of a new connection from ``peer`` (``close`` closes it if it must be shed),
        or ``None`` when it must be refused."""
        held = self.held(peer)
        if held >= self.cap:
            idle = _longest_idle(self._by_peer[peer])
            if idle is None:
                self.refused += 1
                self._note(f"refused a connection from {peer}: its {held} connections are all busy")
                return None
            self._shed(idle, f"{peer} holds {held} connections, the most one address may")
        slot = Slot(peer, close)
        self._by_peer.setdefault(peer, set()).add(slot)
        return slot

    def held(self, peer: str) -> int:
        """How many connections ``peer`` holds open."""
        return len(self._by_peer.get(peer, ()))

    def closed(self, slot: Slot) -> None:
        """``slot``'s connection has ended."""
        mine = self._by_peer.get(slot.peer)
        if mine is not None:
            mine.discard(slot)
            if not mine:
                del self._by_peer[slot.peer]

    def shed_longest_idle(self) -> Slot | None:
        """Close the longest-idle connection of any peer (out of descriptors); ``None`` when
        none is idle."""
        idle = _longest_idle(slot for mine in self._by_peer.values() for slot in mine)
        if idle is not None:
            self._shed(idle, "out of file descriptors")
        return idle

    def _shed(self, slot: Slot, why: str) -> None:
        self.closed(slot)
        self.shed += 1
        self._note(f"{why}: closed an idle connection from {slot.peer}")
        slot.close()

    def _note(self, line: str) -> None:
        now = time.monotonic()
        if self._logged_at is None or now - self._logged_at >= LOG_EVERY:
            self._logged_at = now
            self._log(f"{self._name}: {line} (at most one such line a minute)")


def _longest_idle(slots: Iterable[Slot]) -> Slot | None:
    idle = [slot for slot in slots if slot.idle_since is not None]
    return min(idle, key=lambda slot: slot.idle_since or 0) if idle else None
