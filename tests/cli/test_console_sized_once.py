"""A console that is not a terminal (piped, redirected) is sized once: Rich would otherwise
ask the environment and the terminal at every print (25,000 prints in a 5,000-call replay's
live view took a third of its time), for an answer that cannot change."""

from __future__ import annotations

import io
import os

import pytest

from dsh.cli.tables import make_console


@pytest.mark.parametrize("live", [False, True])
def test_a_piped_console_never_asks_the_terminal_its_size_again(
    live: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdout", io.StringIO())
    console = make_console(live=live)
    asked: list[int] = []
    real = os.get_terminal_size

    def counting(fd: int = 1) -> os.terminal_size:
        asked.append(fd)
        return real(fd)

    monkeypatch.setattr(os, "get_terminal_size", counting)
    for i in range(5):
        console.print(f"line {i}", end="\n", markup=False, highlight=False)
    assert asked == []
    assert not console.is_terminal and console.width >= 80
