"""The heuristic estimator (``dsh.events.tokens``): a quarter token per UTF-16 unit, rounded up,
whatever the text is made of (ASCII, other BMP characters, astral ones: two units each)."""

from __future__ import annotations

import pytest

from dsh.events.messages import text_block
from dsh.events.tokens import message_price, text_tokens


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("a", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("é" * 4, 1),
        ("é" * 5, 2),
        ("😀", 1),
        ("😀" * 2, 1),
        ("😀" * 2 + "a", 2),
        ("a" * 4001, 1001),
    ],
)
def test_a_quarter_token_per_utf16_unit(text: str, tokens: int) -> None:
    assert text_tokens(text) == tokens


def test_a_message_is_its_blocks_and_four() -> None:
    message = {"role": "user", "content": [text_block("abcde"), {"type": "reasoning", "text": "😀😀😀"}]}
    assert message_price(message) == (2 + 4) + (2 + 4) + 4  # type: ignore[arg-type]
    assert message_price(None) == 0
