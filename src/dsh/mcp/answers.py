"""Which waiting request a stdio server's bad answer fails (the rule), and what reaches the SDK.

dsh sees every request it sends a server (:meth:`Answers.sent`) and every line back
(:meth:`Answers.received`, judged by :mod:`dsh.mcp.stdout`). A request fails **at once** —
the SDK gets a JSON-RPC error with code :data:`MALFORMED_ANSWER` for it instead of waiting
out the call's timeout — when:

- a bad answer names its id (a result that is not an object, a body that is not a valid
  response, a cut-off JSON text whose ``"id"`` can still be read), or a well-formed answer's
  result is not what its method returns (``initialize``, ``tools/list``, ``tools/call``);
- an answer cannot be matched to a request — a bad answer with no readable id, or an id dsh
  never sent (a wrong id) — while requests wait: **every** waiting request fails, since any
  of them may be the one answered (usually there is one, the call in flight).

An answer with an id dsh sent before but no longer waits for (a call already failed, timed
out or cancelled) is dropped quietly; with nothing waiting, a bad or stray answer is only
complained about (:class:`~dsh.mcp.complaints.Complaints`), as is noise.
"""

from __future__ import annotations

from typing import Final

from mcp.shared.message import SessionMessage
from pydantic import BaseModel, ValidationError

from dsh.mcp.complaints import Complaints, Kind, sample
from dsh.mcp.stdout import MAX_LINE, Answer, BadAnswer, Ignored, Message, Verdict, first_error, judge
from mcp import types as mt

MALFORMED_ANSWER: Final = -32098
"""The code of the error dsh gives the SDK for a request whose answer was malformed."""
RESULTS: Final[dict[str, type[BaseModel]]] = {
    "initialize": mt.InitializeResult,
    "tools/list": mt.ListToolsResult,
    "tools/call": mt.CallToolResult,
}


def _shown(rid: mt.RequestId) -> str:
    return str(rid) if isinstance(rid, int) else sample(rid)


class Answers:
    """The requests sent to one running server that wait for an answer."""

    def __init__(self, complaints: Complaints) -> None:
        self._complaints = complaints
        self._waiting: dict[mt.RequestId, str] = {}
        self._sent: set[mt.RequestId] = set()

    def sent(self, message: mt.JSONRPCMessage) -> None:
        """Note a message dsh writes to the server (before it is written)."""
        if isinstance(message.root, mt.JSONRPCRequest):
            self._waiting[message.root.id] = message.root.method
            self._sent.add(message.root.id)

    def received(self, line: bytes | None) -> list[SessionMessage]:
        """What the SDK gets for one line of stdout (``None``: a line over the size limit)."""
        too_long = BadAnswer(None, f"a line over {MAX_LINE >> 20} MiB (dropped)")
        verdict: Verdict | None = judge(line) if line is not None else too_long
        if verdict is None:
            return []
        if isinstance(verdict, Message):
            return [SessionMessage(verdict.message)]
        if isinstance(verdict, Ignored):
            self._complaints(verdict.kind, verdict.detail)
            return []
        if isinstance(verdict, Answer):
            return self._answer(verdict)
        return self._bad(verdict)

    def _answer(self, answer: Answer) -> list[SessionMessage]:
        method = self._waiting.pop(answer.id, None)
        if method is None:
            if answer.id in self._sent:
                return []  # late: its request already failed, timed out or was cancelled
            return self._fail_all(f"an answer with the id {_shown(answer.id)} that no request has", "stray")
        root, expected = answer.message.root, RESULTS.get(method)
        if isinstance(root, mt.JSONRPCResponse) and expected is not None:
            try:
                expected.model_validate(root.result)
            except ValidationError as exc:
                why = f"its result is not a {method} result ({first_error(exc)})"
                return [self._failure(answer.id, why)]
        return [SessionMessage(answer.message)]

    def _bad(self, bad: BadAnswer) -> list[SessionMessage]:
        if bad.id is not None and bad.id in self._waiting:
            del self._waiting[bad.id]
            return [self._failure(bad.id, bad.why)]
        if bad.id is not None and bad.id in self._sent:
            self._complaints("malformed", f"a late answer: {bad.why}")
            return []
        return self._fail_all(bad.why, "malformed")

    def _fail_all(self, why: str, kind: Kind) -> list[SessionMessage]:
        if not self._waiting:
            self._complaints(kind, why)
            return []
        failed = [self._failure(rid, why) for rid in self._waiting]
        self._waiting.clear()
        return failed

    @staticmethod
    def _failure(rid: mt.RequestId, why: str) -> SessionMessage:
        error = mt.ErrorData(code=MALFORMED_ANSWER, message=why)
        return SessionMessage(mt.JSONRPCMessage(mt.JSONRPCError(jsonrpc="2.0", id=rid, error=error)))
