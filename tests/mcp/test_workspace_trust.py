"""``dsh.mcp.trust`` through its seam (``ask``): what the person is shown, "not this time" is
not remembered, a broken answers file is one line, an unwritable one is said and not a start."""

from __future__ import annotations

from pathlib import Path

from dsh.mcp.trust import Proposal, session_servers

from .conftest import write_config


def test_not_this_time_is_asked_again_and_the_file_is_shown_as_written(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    write_config(ws / ".mcp.json", calc={"command": "${SHELL}", "args": ["-c", "echo ${SECRET_TOKEN}"]},
                 web={"type": "http", "url": "https://example.com/${PATH_PART}"})  # fmt: skip
    shown: list[object] = []

    def not_now(proposal: Proposal) -> None:
        shown.append(proposal.shown)

    notices: list[str] = []
    for _ in range(2):
        assert session_servers(ws, (), trusted=False, ask=not_now, home=home, notice=notices.append) == ()
    assert shown == [(("calc", ("${SHELL}", "-c", "echo ${SECRET_TOKEN}")),
                      ("web", ("http", "https://example.com/${PATH_PART}")))] * 2  # fmt: skip
    assert notices == [] and not home.exists()


def test_a_broken_answers_file_is_one_line_and_an_unwritable_one_is_said(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    write_config(ws / ".mcp.json", calc={"command": "calc"})
    (home / "mcp-trust.json").write_text("{not json")
    notices: list[str] = []
    specs = session_servers(ws, (), trusted=False, ask=lambda _: True, home=home, notice=notices.append)
    assert [s.name for s in specs] == ["calc"]
    assert len(notices) == 1 and notices[0].startswith(f"dsh: {home / 'mcp-trust.json'}: not readable ")
    notices.clear()
    asked: list[Proposal] = []
    again = session_servers(ws, (), trusted=False, ask=asked.append, home=home, notice=notices.append)
    assert [s.name for s in again] == ["calc"] and asked == [] and notices == [], "remembered over it"

    notices.clear()
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the home directory should be")
    said = notices.append
    assert session_servers(ws, (), trusted=False, ask=lambda _: False, home=blocked, notice=said) == ()
    assert notices[-1].startswith(f"dsh: the answer is not remembered: {blocked}/mcp-trust.json: "), notices
