"""What a session and its tree spent: tokens and cost per call, turn, session and tree.

Each session's own model calls (the timeline fold's :class:`~dsh.session.usage.Ledger`:
settlements, failed and retried attempts, streamed compaction summaries) are counted once,
by the session that made them; a fork child's inherited prefix is its parent's. A tree's
total is the sum over its sessions, keyed by session id, so no session counts twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dsh.session.bill import Bill
from dsh.session.digest import Derived
from dsh.session.prices import Cost, PriceTable
from dsh.session.usage import Ledger, Tokens

if TYPE_CHECKING:  # the fold is imported by what folds: pricing a listing's rows needs none of it
    from dsh.session.timeline.tree import Loaded


def spent_text(ledger: Ledger, prices: PriceTable) -> str:
    """``4 calls · in 1,200 (cache read 800, write 0) · out 300 · $0.0012``."""
    calls = len(ledger.calls)
    return f"{calls} call{'s' if calls != 1 else ''} · {ledger.tokens.text()} · {prices.cost(ledger).text()}"


@dataclass(frozen=True, slots=True)
class RowSpend:
    """A listed session's own calls and its tree's (itself and every listed descendant)."""

    own: Bill
    tree: Bill
    sessions: int
    """How many sessions the tree holds."""
    prices: PriceTable

    @property
    def cost(self) -> Cost:
        return self.prices.cost(self.own)

    @property
    def tree_cost(self) -> Cost:
        return self.prices.cost(self.tree)

    def to_json(self) -> dict[str, object]:
        """``calls``, ``tokens``, ``cost`` (own) and ``tree: {sessions, calls, tokens, cost}``."""
        return {
            "calls": self.own.calls,
            "tokens": self.own.tokens.to_wire(),
            "cost": self.cost.to_wire(),
            "tree": {
                "sessions": self.sessions,
                "calls": self.tree.calls,
                "tokens": self.tree.tokens.to_wire(),
                "cost": self.tree_cost.to_wire(),
            },
        }


def row_spends(
    parents: Mapping[str, str | None], derived: Mapping[str, Derived], prices: PriceTable
) -> dict[str, RowSpend]:
    """Each listed session's spend, from what the list already derived (its bill): the one
    function ``dsh sessions list`` prices its rows with (fed by any source of ``Derived``)."""
    bills = {sid: d.bill for sid, d in derived.items()}
    trees = subtree_bills(parents, bills)
    sizes = subtree_sizes(parents, bills)
    return {sid: RowSpend(bills[sid], trees[sid], sizes[sid], prices) for sid in bills}


@dataclass(frozen=True, slots=True)
class SessionSpend:
    """One session's own model calls."""

    session: str
    parent: str | None
    ledger: Ledger
    turns: tuple[tuple[int | None, Tokens], ...]
    """Per turn the session ended: its number and the tokens of its own calls."""

    def to_json(self, prices: PriceTable) -> dict[str, object]:
        """The session's totals, then ``perCall`` (each call: its settling event's seq, model,
        provider, tokens, cost) and ``perTurn`` (each ended turn's tokens)."""
        return {
            "sessionId": self.session,
            "parentSession": self.parent,
            "calls": len(self.ledger.calls),
            "tokens": self.ledger.tokens.to_wire(),
            "cost": prices.cost(self.ledger).to_wire(),
            "perCall": [
                {**call.to_wire(), "cost": prices.price(call.route, call.tokens, call.time).to_wire()}
                for call in self.ledger.calls
            ],
            "perTurn": [{"turn": turn, "tokens": tokens.to_wire()} for turn, tokens in self.turns],
        }


def session_spend(loaded: Loaded, ledger: Ledger | None = None) -> SessionSpend:
    """The fold of one session: its ledger and its usage per turn. ``ledger``: the session's
    own calls when a fold of its events already made them (:func:`tree_spend`'s ``ledgers``)."""
    header = loaded.header
    cut = loaded.inherited_event_count
    if ledger is None:
        from dsh.session.timeline import Timeline

        timeline = Timeline()
        timeline.begin(header.id, cut=cut, header=header)
        for event in loaded.events:
            timeline.feed(header.id, event)
        ledger = timeline.state(header.id).ledger
    calls = ledger.calls
    turns: list[tuple[int | None, Tokens]] = []
    at = 0
    for event in loaded.events:
        if event.type == "turn/end" and event.seq >= cut:
            start = at
            while at < len(calls) and calls[at].seq <= event.seq:  # settled by the turn's end
                at += 1
            turn = event.data.get("turn") if isinstance(event.data, dict) else None
            tokens = sum((c.tokens for c in calls[start:at]), Tokens())
            turns.append((turn if type(turn) is int else None, tokens))
    return SessionSpend(header.id, header.parent_session, ledger, tuple(turns))


@dataclass(frozen=True, slots=True)
class TreeSpend:
    """A root session and its descendants, each counted once."""

    root: str
    sessions: tuple[SessionSpend, ...]

    @property
    def ledger(self) -> Ledger:
        total = Ledger()
        for spend in self.sessions:
            total.merge(spend.ledger)
        return total

    def to_json(self, prices: PriceTable) -> dict[str, object]:
        """``{"sessionId", "calls", "tokens", "cost", "sessions": [per session]}``."""
        ledger = self.ledger
        return {
            "sessionId": self.root,
            "calls": len(ledger.calls),
            "tokens": ledger.tokens.to_wire(),
            "cost": prices.cost(ledger).to_wire(),
            "sessions": [s.to_json(prices) for s in self.sessions],
        }


def tree_spend(
    sessions: Mapping[str, Loaded], root: str, ledgers: Mapping[str, Ledger] | None = None
) -> TreeSpend:
    """The spend of ``root`` and every loaded session under it (parents before children).
    ``ledgers``: sessions' own calls a fold of the same logs already made (a transcript
    walk's, :func:`dsh.snapshot.transcript.walk_transcript`): those are not folded again."""
    from dsh.session.timeline.tree import SessionTree

    known = ledgers or {}
    order = [node.id for node in SessionTree.of(sessions, root).walk()] if root in sessions else []
    return TreeSpend(root, tuple(session_spend(sessions[sid], known.get(sid)) for sid in order))


def _ancestry(sid: str, parents: Mapping[str, str | None], known: Mapping[str, object]) -> list[str]:
    """``sid`` and its known ancestors, nearest first (cycle-safe)."""
    out: list[str] = []
    at: str | None = sid
    while at is not None and at in known and at not in out:
        out.append(at)
        at = parents.get(at)
    return out


def subtree_sizes(parents: Mapping[str, str | None], known: Mapping[str, object]) -> dict[str, int]:
    """For each session of ``known``: how many sessions its subtree holds (itself included)."""
    out = dict.fromkeys(known, 0)
    for sid in known:
        for at in _ancestry(sid, parents, known):
            out[at] += 1
    return out


def subtree_bills(parents: Mapping[str, str | None], bills: Mapping[str, Bill]) -> dict[str, Bill]:
    """For each session of ``bills``: its own calls and every descendant's (by ``parents``:
    session → parent), each session counted once however deep it is."""
    under: dict[str, list[Bill]] = {sid: [] for sid in bills}
    for sid, bill in bills.items():
        for at in _ancestry(sid, parents, bills):
            under[at].append(bill)
    return {sid: Bill.total(found) for sid, found in under.items()}
