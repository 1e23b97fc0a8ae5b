"""``ask_user_question``: the model asks the person (the original's schema, checks and texts).

The tool maps each question to ``{id, question, header?, options?, multiSelect?}`` and hands
them to the session's :class:`QuestionAsker` (``AgentConfig.questions``: a terminal picker in
``dsh run`` / ``dsh chat``, the client over ACP). Checks in the original's order: aborted,
no questions, a delegated caller (a subagent: the original's text — the child is told to put
the question in its final result), no asker. An asker that cannot reach anyone raises
:class:`QuestionUnavailable` with a one-line reason. The answer is compact JSON
``{"answers": [{"id", "selected": [...], "custom"?}]}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol

from pydantic import BaseModel, ConfigDict, Field

from dsh import jsonx
from dsh.errors import DshError
from dsh.tools.base import Tool, ToolContext, ToolOutput
from dsh.tools.codes import tool_error
from dsh.tools.schema import ToolArgs

QUESTIONS_EXTRA: Final = "dsh.context.questions"
"""``ToolContext.extras`` key of the session's :class:`QuestionAsker` (set by the agent)."""
DELEGATED: Final = (
    "human interaction is unavailable while the calling agent is owned by another live agent; include "
    "the unresolved question or decision in the child agent's final result"
)


class QuestionUnavailable(DshError):
    """Nobody can answer the question here (the reason, one line)."""


@dataclass(frozen=True, slots=True)
class Option:
    label: str
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    question: str
    header: str | None = None
    options: tuple[Option, ...] = ()
    multi_select: bool = False


@dataclass(frozen=True, slots=True)
class Answer:
    id: str
    selected: tuple[str, ...] = ()
    custom: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"id": self.id, "selected": list(self.selected)}
        if self.custom is not None:
            out["custom"] = self.custom
        return out


class QuestionAsker(Protocol):
    """Who answers a session's questions."""

    async def ask(self, questions: list[Question], *, session_id: str, call_id: str) -> list[Answer]:
        """One answer per question; raises :class:`QuestionUnavailable` when nobody can answer."""
        ...


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class OptionArgs(_Open):
    label: str = Field(description="Short user-facing option label.")
    description: str | None = Field(None, description="One sentence explaining the tradeoff or impact.")


class QuestionArgs(_Open):
    id: str = Field(description="Stable id for this question; echoed in the answer.")
    question: str = Field(description="The specific question to ask the user.")
    header: str | None = Field(
        None, description='Optional short heading for the question, such as "Confirm" or "Choose Mode".'
    )
    options: list[OptionArgs] | None = Field(
        None,
        description="Optional choices to show the user. If you recommend one, put it first and append "
        '"(Recommended)" to that label.',
    )
    multi_select: bool | None = Field(
        None, description="Whether the user may select more than one option. Defaults to false."
    )


class AskArgs(ToolArgs):
    questions: list[QuestionArgs] = Field(description="Questions to ask the user before continuing.")


class AskUserQuestionTool(Tool[AskArgs]):
    """Ask the person a question and wait for the answer."""

    name = "ask_user_question"
    description = (
        "Ask the user a concise question when you need confirmation, a choice, or missing information "
        "before proceeding. Send one or more questions, each with a stable id that will be echoed in the "
        "answer."
    )
    args_model = AskArgs

    async def call(self, args: AskArgs, ctx: ToolContext) -> ToolOutput:
        if not args.questions:
            raise tool_error("ask_user_question requires at least one question", "EMPTY_QUESTIONS")
        agent = ctx.agent
        if agent is not None and agent.header.delegation_depth > 0:
            raise tool_error(DELEGATED, "DELEGATED_CALLER")
        asker = ctx.extras.get(QUESTIONS_EXTRA)
        if asker is None:
            raise tool_error("no user-questions provider is registered", "NO_PROVIDER")
        questions = [
            Question(
                q.id,
                q.question,
                q.header,
                tuple(Option(o.label, o.description) for o in q.options or ()),
                bool(q.multi_select),
            )
            for q in args.questions
        ]
        try:
            answers = await asker.ask(questions, session_id=ctx.session_id, call_id=ctx.call_id)
        except QuestionUnavailable as exc:
            raise tool_error(str(exc), "NO_PROVIDER") from exc
        return ToolOutput.text(jsonx.dumps({"answers": [a.to_json() for a in answers]}).decode())
