"""``dsh diff``: two runs compared as replay compares a live run with its recording.

Run A plays the recording and run B the live run: before each of A's model calls, B's
request at the same call is put through A's :class:`~dsh.replay.fidelity.SessionCheck` —
the same normalization (workspace path, session ids, spill locators), the same header and
history rules, one implementation. After the last call the whole model-visible histories
are compared too, so a changed final answer is found. Sessions are paired root to root,
then each child with the child of the same subagent call position in its parent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from dsh.model import ModelRequest
from dsh.replay.derive import Derived, RecordedCall, derive
from dsh.replay.fidelity import Divergence, SessionCheck, Tolerances
from dsh.replay.reuse import Reuse, reuse_drops, tree_reuse
from dsh.session import timeline as tl
from dsh.session.prices import PriceTable
from dsh.session.spend import TreeSpend, tree_spend
from dsh.session.timeline import Timeline, child_calls
from dsh.session.usage import Tokens
from dsh.store import LoadedSession

Tree = tuple[str, Mapping[str, LoadedSession]]
SHORT = 60


def _short(text: str, limit: int = SHORT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class StepRow:
    """One model call of a session, as the per-step table shows it."""

    call: int
    turn: int | None
    step: int | None
    tools: tuple[str, ...]
    results: tuple[str, ...]
    text: str
    tokens: Tokens
    duration_ms: int

    @property
    def input_tokens(self) -> int:
        """Every input token of the call, cached or not."""
        return self.tokens.prompt

    @property
    def output_tokens(self) -> int:
        return self.tokens.output

    def to_json(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "turn": self.turn,
            "step": self.step,
            "tools": list(self.tools),
            "results": list(self.results),
            "text": self.text,
            "usage": {
                "inputTokens": self.input_tokens,
                "outputTokens": self.output_tokens,
                "cacheReadTokens": self.tokens.cache_read,
            },
            "durationMs": self.duration_ms,
        }


@dataclass(frozen=True, slots=True)
class SessionPair:
    """Two sessions in the same place of their trees, with their step tables."""

    label: str
    a: str | None
    b: str | None
    rows_a: tuple[StepRow, ...] = ()
    rows_b: tuple[StepRow, ...] = ()


@dataclass(frozen=True, slots=True)
class RunDiff:
    """The comparison: the first divergence (``None``: the runs behave the same) and the pairs."""

    a: str
    b: str
    divergence: Divergence | None
    pairs: tuple[SessionPair, ...] = field(default=())
    spend: tuple[TreeSpend, TreeSpend] | None = None
    """Each run's calls, tokens and cost (A, B): before → after."""
    reuse: tuple[tuple[Reuse, ...], tuple[Reuse, ...]] = ((), ())
    """Each run's per-request prefix reuse (A, B)."""
    prices: PriceTable = field(default_factory=PriceTable)

    @property
    def equal(self) -> bool:
        return self.divergence is None

    @property
    def cache_drops(self) -> list[str]:
        """B's requests that rewrite their prefix where A's same request did not."""
        return reuse_drops(*self.reuse)

    def to_json(self) -> dict[str, Any]:
        found = None
        if self.divergence is not None:
            d = self.divergence
            found = {
                "session": d.session,
                "call": d.call,
                "turn": d.turn,
                "step": d.step,
                "what": d.what,
                "a": d.recorded,
                "b": d.live,
                "diff": d.diff(),
            }
        spend = None
        if self.spend is not None:
            spend = {"a": self.spend[0].to_json(self.prices), "b": self.spend[1].to_json(self.prices)}
        return {
            "equal": self.equal,
            "a": self.a,
            "b": self.b,
            "divergence": found,
            "spend": spend,
            "cache": {
                "a": [r.to_json() for r in self.reuse[0]],
                "b": [r.to_json() for r in self.reuse[1]],
                "drops": self.cache_drops,
            },
            "sessions": [
                {
                    "label": p.label,
                    "a": p.a,
                    "b": p.b,
                    "rows": {"a": [r.to_json() for r in p.rows_a], "b": [r.to_json() for r in p.rows_b]},
                }
                for p in self.pairs
            ],
        }


def step_rows(loaded: LoadedSession) -> tuple[StepRow, ...]:
    """The session's own model calls: tool calls asked, results got, text, usage, duration."""
    rows: list[StepRow] = []
    started = None
    tools: dict[str, int] = {}
    timeline = Timeline()
    for event in loaded.own_events:
        for item in timeline.feed(loaded.header.id, event):
            if isinstance(item, tl.Step):
                started = event.time
            elif isinstance(item, tl.Answer):
                begin = started if started is not None else event.time
                rows.append(
                    StepRow(
                        len(rows) + 1,
                        item.turn,
                        item.step,
                        tuple(c.name for c in item.calls),
                        (),
                        _short(item.text),
                        Tokens.of(item.usage),
                        max(0, event.time - begin),
                    )
                )
                started = event.time
            elif isinstance(item, tl.ToolCall) and rows:
                tools[item.call_id] = len(rows) - 1
            elif isinstance(item, tl.ToolResult) and (at := tools.get(item.call_id)) is not None:
                shown = ("error: " if item.is_error else "") + _short(item.text, 40)
                rows[at] = replace(rows[at], results=(*rows[at].results, shown))
    return tuple(rows)


def _version(loaded: LoadedSession) -> int:
    return 0 if any(e.type == "assistant/chunk" for e in loaded.events) else 2


def _derived(loaded: LoadedSession, where: str) -> Derived:
    cut = loaded.inherited_event_count
    return derive(loaded.events[cut:], where, strict=False, inherited=loaded.events[:cut])


def _request(sid: str, derived: Derived, call: RecordedCall | None) -> ModelRequest:
    header = call.header if call is not None else None
    config = (header or {}).get("config") or {}
    tools = (header or {}).get("tools")
    return ModelRequest(
        session_id=sid,
        model=str(config.get("model") or ""),
        messages=[derived.messages[i] for i in derived.history_of(call or derived.final())],
        system=(header or {}).get("system") if isinstance((header or {}).get("system"), str) else None,
        tools=tools if isinstance(tools, list) else (),
        max_tokens=config.get("maxTokens"),
    )


def compare_sessions(label: str, a: LoadedSession, b: LoadedSession) -> Divergence | None:
    """The first difference between two sessions' model-visible behaviour, else ``None``."""
    seen_a, seen_b = _derived(a, f"{label} (A)"), _derived(b, f"{label} (B)")
    extended = Derived(
        seen_a.entries,
        [*seen_a.calls, seen_a.final()],
        seen_a.messages,
        seen_a.received,
        seen_a.surfaces,
        seen_a.current,
    )
    check = SessionCheck(  # each side's own workspace is {{cwd}}, as in a replay of a recording
        label,
        a.header.id,
        extended,
        version=_version(a),
        tolerances=Tolerances(),
        cwd=b.header.cwd,
        recorded_cwd=a.header.cwd,
    )
    shared = min(len(seen_a.calls), len(seen_b.calls))
    for k in range(shared):
        found = check.check(k, _request(b.header.id, seen_b, seen_b.calls[k]))
        if found is not None:
            return found
    found = check.check(len(seen_a.calls), _request(b.header.id, seen_b, None))
    if found is not None:
        return found
    if len(seen_a.calls) != len(seen_b.calls):
        return Divergence(
            label,
            a.header.id,
            shared + 1,
            None,
            None,
            "the number of model calls",
            f"{len(seen_a.calls)} model calls",
            f"{len(seen_b.calls)} model calls",
        )
    return None


def _children(tree: Tree, sid: str) -> list[str]:
    """``sid``'s children in the order of the subagent calls that started them."""
    _, sessions = tree
    order = {}
    parent = sessions[sid]
    timeline = Timeline()
    for i, event in enumerate(parent.own_events):
        for item in timeline.feed(sid, event):
            if isinstance(item, tl.ToolCall) and item.delegates:
                order[item.call_id] = i
    by_call = {call: child for (p, call), child in child_calls(sessions).items() if p == sid}
    keyed = [by_call[c] for c in sorted(by_call, key=lambda c: order.get(c, len(order)))]
    rest = sorted(
        (
            s
            for s, loaded in sessions.items()
            if loaded.header.parent_session == sid and s not in keyed and s != sid
        ),
        key=lambda s: (sessions[s].header.created_at, s),
    )
    return keyed + rest


def diff_runs(a: Tree, b: Tree, prices: PriceTable | None = None) -> RunDiff:
    """Compare run ``a`` (the baseline) with run ``b`` over their whole session trees; each
    run's calls, tokens and cost come along (``prices``: the table with the user's overrides)."""
    pairs: list[SessionPair] = []
    first: Divergence | None = None
    pending: list[tuple[str, str | None, str | None]] = [("root", a[0], b[0])]
    while pending:
        label, sa, sb = pending.pop(0)
        la, lb = (a[1].get(sa) if sa else None), (b[1].get(sb) if sb else None)
        pairs.append(SessionPair(label, sa, sb, step_rows(la) if la else (), step_rows(lb) if lb else ()))
        if la is None or lb is None:
            if first is None:
                present = "A" if la is not None else "B"
                first = Divergence(
                    label,
                    sa or sb or "",
                    1,
                    None,
                    None,
                    f"session {label} (only in {present})",
                    "(present)" if la else "(nothing)",
                    "(present)" if lb else "(nothing)",
                )
            continue
        if first is None:
            first = compare_sessions(label, la, lb)
        kids_a, kids_b = _children(a, sa or ""), _children(b, sb or "")
        for i in range(max(len(kids_a), len(kids_b))):
            pending.append(
                (
                    f"{label}/child {i + 1}",
                    kids_a[i] if i < len(kids_a) else None,
                    kids_b[i] if i < len(kids_b) else None,
                )
            )
    spend = (tree_spend(a[1], a[0]), tree_spend(b[1], b[0]))
    reuse = (tuple(tree_reuse(a[1], a[0])), tuple(tree_reuse(b[1], b[0])))
    table = prices if prices is not None else PriceTable.load()
    return RunDiff(a[0], b[0], first, tuple(pairs), spend=spend, reuse=reuse, prices=table)
