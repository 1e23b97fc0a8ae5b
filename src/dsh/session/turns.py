"""Each turn's prompt and final answer, and the first turn where two logs answered differently.

``dsh replay --until N --live`` continues a recording with a live model from turn N + 1 on,
asking the recording's own prompts; :func:`first_divergence` says where the live branch's
answers first differ from the recorded ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dsh.events import Event
from dsh.events.messages import joined_text
from dsh.events.vocabulary import ASSISTANT_MESSAGE, TURN_START
from dsh.session.digest import is_prompt, text_of


@dataclass(slots=True)
class TurnText:
    """A turn's first typed prompt (``None``: none, e.g. a woken turn) and its last answer text."""

    prompt: str | None = None
    answer: str = ""


def turn_texts(events: Sequence[Event]) -> dict[int, TurnText]:
    """Every turn of ``events`` by number: its prompt and final answer."""
    turns: dict[int, TurnText] = {}
    current: TurnText | None = None
    for e in events:
        if e.type == TURN_START and isinstance(e.data.get("turn"), int):
            current = turns.setdefault(e.data["turn"], TurnText())
        elif current is None:
            continue
        elif is_prompt(e) and current.prompt is None:
            current.prompt = text_of(e.data)
        elif e.type == ASSISTANT_MESSAGE:
            text = joined_text(e.data.get("message", {}).get("content", []))
            if text.strip():
                current.answer = text
    return turns


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first turn whose answers differ (``recorded`` ``None``: the recording had no such turn)."""

    turn: int
    recorded: str | None
    live: str


def first_divergence(recorded: Sequence[Event], live: Sequence[Event], after: int) -> Divergence | None:
    """The first turn after ``after`` where ``live``'s final answer is not ``recorded``'s."""
    was, now = turn_texts(recorded), turn_texts(live)
    for turn in sorted(t for t in now if t > after):
        old = was.get(turn)
        if old is None or old.answer != now[turn].answer:
            return Divergence(turn, None if old is None else old.answer, now[turn].answer)
    return None
