"""The one rule for a prompt's text: empty or whitespace-only is refused before anything runs.

``dsh run`` and ``dsh acp`` check it before a session is created; ``dsh chat`` ignores a blank
line; :meth:`dsh.loop.Agent.run_turn` raises :class:`~dsh.errors.EmptyPromptError` (a
``UsageError`` and a ``ValueError``) for a blank string prompt, before the turn starts.
"""

from __future__ import annotations

from dsh.errors import EmptyPromptError


def is_blank(text: str) -> bool:
    """Whether ``text`` holds nothing a model could act on (empty or only whitespace)."""
    return not text.strip()


def check_prompt(text: str, where: str = "the prompt") -> str:
    """``text`` itself, or :class:`~dsh.errors.EmptyPromptError` naming ``where`` when it is blank."""
    if is_blank(text):
        raise EmptyPromptError(f"{where} is empty: nothing to send (give the agent something to do)")
    return text


def stdin_prompt(text: str) -> str:
    """A prompt read from stdin: its one trailing newline (as ``echo`` and editors add) removed."""
    return text.removesuffix("\n").removesuffix("\r")
