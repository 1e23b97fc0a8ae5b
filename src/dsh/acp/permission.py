"""Approvals over ACP: ``session/request_permission`` with the original's two options.

The request is ``{sessionId, toolCall: {toolCallId}, options: [{optionId: "allow-once",
name: "Allow once", kind: "allow_once"}, {optionId: "reject-once", name: "Reject", kind:
"reject_once"}]}``. The client's answer maps as the original's: the option ``allow-once``
selected ⇒ ``allowed-once``; ``cancelled`` ⇒ ``cancelled``; any other selection ⇒
``rejected``. No connection, or a failed request, raises, which the session's
:class:`~dsh.tools.approval.Approvals` records as ``unavailable``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from acp.interfaces import Client
from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate

from dsh.context.questions import Answer, Question, QuestionUnavailable
from dsh.errors import UsageError
from dsh.tools.approval import ApprovalOutcome, ApprovalRequest

ALLOW_ONCE: Final = "allow-once"
OPTIONS: Final = (
    PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once"),
    PermissionOption(option_id="reject-once", name="Reject", kind="reject_once"),
)


class AcpApprover:
    """Asks the ACP client of the connection ``connection()`` returns (``None``: not connected)."""

    def __init__(self, connection: Callable[[], Client | None]) -> None:
        self._connection = connection

    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        conn = self._connection()
        if conn is None:
            raise UsageError("no ACP client is connected to ask")
        response = await conn.request_permission(
            session_id=request.session_id,
            tool_call=ToolCallUpdate(tool_call_id=request.call_id or ""),
            options=list(OPTIONS),
        )
        outcome = response.outcome
        if isinstance(outcome, AllowedOutcome):
            return "allowed-once" if outcome.option_id == ALLOW_ONCE else "rejected"
        return "cancelled"


SKIP: Final = "skip"


class AcpAsker:
    """``ask_user_question`` over ACP: each question is a ``session/request_permission``
    whose title is the question and whose options are its choices (plus ``Skip``); the
    selected choice is the answer. A question without choices, a multi-select one beyond
    its first pick, or a cancelled request cannot be answered this way (the model is told)."""

    def __init__(self, connection: Callable[[], Client | None]) -> None:
        self._connection = connection

    async def ask(self, questions: list[Question], *, session_id: str, call_id: str) -> list[Answer]:
        conn = self._connection()
        if conn is None:
            raise QuestionUnavailable("no ACP client is connected to ask")
        answers = []
        for question in questions:
            if not question.options:
                raise QuestionUnavailable(
                    "the ACP client can only pick among choices, and this question has none; ask with options"
                )
            options = [
                PermissionOption(option_id=f"choice-{i}", name=o.label, kind="allow_once")
                for i, o in enumerate(question.options)
            ]
            options.append(PermissionOption(option_id=SKIP, name="Skip", kind="reject_once"))
            title = f"{question.header}: {question.question}" if question.header else question.question
            response = await conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id=call_id, title=title),
                options=options,
            )
            outcome = response.outcome
            if not isinstance(outcome, AllowedOutcome):
                raise QuestionUnavailable("the user dismissed the question")
            picked = outcome.option_id.removeprefix("choice-")
            chosen = (question.options[int(picked)].label,) if picked.isdigit() else ()
            answers.append(Answer(question.id, chosen))
        return answers
