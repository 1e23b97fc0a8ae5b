"""``dsh mcp replay DIR``: the recorded server, answered from its recording with no real server.

Each client request is matched against the recording's unconsumed requests of the same
method: one with equal params (``_meta`` aside: progress tokens differ per run) is served —
its recorded response with the live request's id, after the server notifications recorded
during it, followed by those recorded after it. Without an equal one, the first unconsumed
request of that method is the one it differs from: ``tools/call`` gets a tool-call error
result (``isError: true``) naming the difference, any other method the JSON-RPC error
``-32602`` naming it (``-32601`` when the recording has no request of that method left). Client
notifications and responses are read and not answered. At the end (the client closes
stdin) the :class:`ReplayReport` lists what was served, what differed and what was never
asked (the unconsumed requests).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dsh import jsonx
from dsh.mcp.exchange import Exchange, RecordedRequest

Message = dict[str, Any]
DIFFERS = -32602
NOT_RECORDED = -32601


def _shown(value: Any) -> str:
    text = jsonx.dumps_sorted(value)
    return text if len(text) <= 120 else text[:119] + "…"


def _bare(params: Any) -> Any:
    if isinstance(params, dict):
        return {k: v for k, v in params.items() if k != "_meta"}
    return params


def difference(recorded: Any, live: Any, path: str = "params") -> str | None:
    """Where ``live`` first differs from ``recorded`` (``None``: equal), in one phrase."""
    if isinstance(recorded, dict) and isinstance(live, dict):
        for key in sorted(set(recorded) | set(live)):
            if key not in live:
                return f"{path}.{key}: recorded {_shown(recorded[key])}, live missing"
            if key not in recorded:
                return f"{path}.{key}: not recorded, live {_shown(live[key])}"
            found = difference(recorded[key], live[key], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(live, list) and len(recorded) == len(live):
        for i, (a, b) in enumerate(zip(recorded, live, strict=True)):
            found = difference(a, b, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    return None if recorded == live else f"{path}: recorded {_shown(recorded)}, live {_shown(live)}"


@dataclass(slots=True)
class ReplayReport:
    """What one replay served, refused and left unasked."""

    served: list[str] = field(default_factory=list)
    differed: list[str] = field(default_factory=list)
    unconsumed: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"dsh mcp replay: {len(self.served)} request(s) served from the recording"]
        out += [f"dsh mcp replay: differs from the recording: {d}" for d in self.differed]
        out += [f"dsh mcp replay: recorded but never asked: {u}" for u in self.unconsumed]
        return out

    def to_json(self) -> dict[str, Any]:
        return {"served": self.served, "differed": self.differed, "unconsumed": self.unconsumed}


class ExchangeReplayer:
    """Answers a client's messages from ``exchange`` (the transport sends what :meth:`handle` returns)."""

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange
        self.report = ReplayReport()

    def _candidates(self, method: str) -> list[RecordedRequest]:
        return [r for r in self.exchange.requests if r.method == method and not r.consumed]

    def handle(self, message: Message) -> list[Message]:
        """The messages that answer one client message, in order (a request gets its
        notifications and response; anything else: nothing)."""
        if "method" not in message or "id" not in message:
            return []
        method, params, live_id = str(message["method"]), message.get("params"), message["id"]
        if self.exchange.redactor is not None:  # a live secret compares as its recorded placeholder
            params = self.exchange.redactor.value(params)
        candidates = self._candidates(method)
        for recorded in candidates:
            if recorded.response is not None and difference(_bare(recorded.params), _bare(params)) is None:
                recorded.consumed = True
                self.report.served.append(recorded.label())
                return [*recorded.during, {**recorded.response, "id": live_id}, *recorded.after]
        if not candidates:
            why = f"{method}: no recorded request of this method left"
            self.report.differed.append(why)
            return [_refusal(live_id, method, NOT_RECORDED, why)]
        found = difference(_bare(candidates[0].params), _bare(params)) or "no recorded response"
        why = f"{method} differs from the recording ({candidates[0].label()}): {found}"
        self.report.differed.append(why)
        return [_refusal(live_id, method, DIFFERS, why)]

    def finish(self) -> ReplayReport:
        """The report, with the recorded requests never served."""
        self.report.unconsumed = [r.label() for r in self.exchange.requests if not r.consumed]
        return self.report


def _refusal(live_id: Any, method: str, code: int, why: str) -> Message:
    text = f"dsh mcp replay: {why}"
    if method == "tools/call":
        result = {"content": [{"type": "text", "text": text}], "isError": True}
        return {"jsonrpc": "2.0", "id": live_id, "result": result}
    return {"jsonrpc": "2.0", "id": live_id, "error": {"code": code, "message": text}}
