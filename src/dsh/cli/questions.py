"""Who answers ``ask_user_question`` in ``dsh run`` / ``dsh chat``: the terminal, or nobody.

On a terminal each question is shown on stderr with its options numbered (a picker: type a
number, or several separated by commas when the question allows more than one) and any
other text is a free answer; an empty line answers nothing. Piped, or with ``--json``,
nobody can answer: the model is told so in one line and goes on without the answer.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TextIO

from dsh.context.questions import Answer, Question, QuestionAsker, QuestionUnavailable

NOBODY = (
    "nobody can answer ask_user_question here (dsh is not reading a terminal); decide without the "
    "answer, or state the open question in your final reply"
)


class TerminalAsker:
    """Asks the person at the terminal, one question at a time."""

    def __init__(self, answers: TextIO, prompts: TextIO) -> None:
        self._in = answers
        self._out = prompts
        self._lock = asyncio.Lock()

    async def ask(self, questions: list[Question], *, session_id: str, call_id: str) -> list[Answer]:
        async with self._lock:
            return [await self._one(q) for q in questions]

    async def _one(self, question: Question) -> Answer:
        heading = f"[{question.header}] " if question.header else ""
        lines = [f"\ndsh: the agent asks: {heading}{question.question}"]
        for n, option in enumerate(question.options, 1):
            detail = f" — {option.description}" if option.description else ""
            lines.append(f"  {n}) {option.label}{detail}")
        if question.options:
            several = "numbers separated by commas" if question.multi_select else "a number"
            lines.append(f"answer ({several}, or type your own): ")
        else:
            lines.append("answer: ")
        self._out.write("\n".join(lines))
        self._out.flush()
        line = await asyncio.to_thread(self._in.readline)
        if not line:
            raise QuestionUnavailable("the user closed the terminal without answering")
        return pick(question, line.strip())


def pick(question: Question, text: str) -> Answer:
    """The answer ``text`` gives: option numbers (one, or several when allowed), else free text."""
    if not text:
        return Answer(question.id)
    parts = [p.strip() for p in text.split(",")] if question.multi_select else [text]
    if question.options and all(p.isdigit() and 1 <= int(p) <= len(question.options) for p in parts):
        labels = tuple(dict.fromkeys(question.options[int(p) - 1].label for p in parts))
        return Answer(question.id, labels)
    return Answer(question.id, (), text)


class NoAsker:
    """Nobody to ask: every question is refused with :data:`NOBODY`."""

    async def ask(self, questions: list[Question], *, session_id: str, call_id: str) -> list[Answer]:
        raise QuestionUnavailable(NOBODY)


def asker_for(interactive: bool = True) -> QuestionAsker:
    """The terminal when stdin is one (and the output is for a person), else nobody."""
    if interactive and sys.stdin.isatty():
        return TerminalAsker(sys.stdin, sys.stderr)
    return NoAsker()
