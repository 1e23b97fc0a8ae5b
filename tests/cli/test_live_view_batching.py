"""A replay's live view prints consecutive deltas together (issue 40, item 3): a replay serves
its recorded chunks at once, and one Rich print per delta was most of ``dsh scenario replay``
at 5,000 calls. The output is the same as printing every delta: pieces are joined only while
Rich prints the joined text as it prints the pieces (one line within the width, no tab)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from dsh.cli.render import LiveView
from dsh.events import Event
from dsh.events.chunks import Chunk


def _stream(view: LiveView) -> None:
    chunks: list[Chunk] = [{"type": "block-start", "index": 0, "blockType": "reasoning"}]
    chunks += [{"type": "reasoning-delta", "index": 0, "text": t} for t in ("think ", "hard ", "now")]
    chunks.append({"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "think hard now"}})
    chunks.append({"type": "block-start", "index": 1, "blockType": "text"})
    pieces = [
        "the answer ",
        "is long ",
        "enough to pass ",
        "the width of ",
        "the console\nand ",
        "has\ta tab ",
        "x" * 50,
    ]
    pieces += [f"w{i} " for i in range(30)]
    chunks += [{"type": "text-delta", "index": 1, "text": t} for t in pieces]
    chunks.append({"type": "block-end", "index": 1, "block": {"type": "text", "text": "".join(pieces)}})
    chunks.append({"type": "finish", "reason": {"kind": "stop"}})
    view.event("root", Event("turn/start", 0, 0, {"turn": 1}))
    for chunk in chunks:
        view.chunk("root", chunk)
    view.event(
        "root",
        Event("tool/call", 1, 0, {"turn": 1, "step": 1, "callId": "c", "name": "bash", "arguments": "{}"}),
    )


def _counted(console: Console, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per ``console.print`` call from now on."""
    prints: list[int] = []
    real = console.print

    def counted(*args: object, **kwargs: object) -> None:
        prints.append(1)
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(console, "print", counted)
    return prints


def _printed(batch: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int]:
    out = io.StringIO()
    console = Console(file=out, width=40, color_system=None)
    prints = _counted(console, monkeypatch)
    _stream(LiveView(console, root_session="root", batch=batch))
    return out.getvalue(), len(prints)


def test_batched_deltas_print_exactly_what_one_print_per_delta_does(monkeypatch: pytest.MonkeyPatch) -> None:
    each, each_prints = _printed(False, monkeypatch)
    batched, batched_prints = _printed(True, monkeypatch)
    assert batched == each
    assert "think hard now" in each and "→ bash" in each
    assert batched_prints < each_prints / 2


def _piped(record: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int]:
    """The view on a console like ``make_console(live=True)`` piped: no colour, soft wrap.
    ``record=True`` keeps every line on Rich (a recording console must see all of it)."""
    out = io.StringIO()
    console = Console(
        file=out, width=40, color_system=None, soft_wrap=True, force_terminal=False, record=record
    )
    prints = _counted(console, monkeypatch)
    view = LiveView(console, root_session="root", batch=True, prompts=True)
    view.event(
        "root",
        Event(
            "user/message",
            0,
            0,
            {
                "role": "user",
                "source": {"kind": "user"},
                "content": [{"type": "text", "text": "say it \x1b[2J"}],
            },
        ),
    )
    view.event(
        "root",
        Event(
            "user/message",
            0,
            0,
            {"role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": "a\ttab"}]},
        ),
    )
    _stream(view)
    view.end_line()
    return out.getvalue(), len(prints)


def test_a_plain_piped_view_writes_its_text_as_rich_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped, streamed text goes straight to the file (Rich's print was ~30 us a line of a
    5,000-call replay); what is written is what Rich printed, tabs and escapes included."""
    rich, rich_prints = _piped(True, monkeypatch)
    direct, direct_prints = _piped(False, monkeypatch)
    assert direct == rich
    assert "› say it \\x1b[2J\n" in rich and "› a" in rich
    assert "think hard now" in direct and "→ bash" in direct
    # left to Rich: the tool call (markup), the prompt with a tab, the deltas with a newline, a
    # tab, and the one wider than the console
    assert direct_prints == 5 < rich_prints


def test_wide_characters_are_measured_in_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    """Printable ASCII counts one cell a character; anything else is measured by Rich (a CJK
    character takes two), so a batch of wide text still ends where Rich's line would."""

    def printed(batch: bool) -> str:
        out = io.StringIO()
        view = LiveView(Console(file=out, width=40, color_system=None), root_session="root", batch=batch)
        view.event("root", Event("turn/start", 0, 0, {"turn": 1}))
        view.chunk("root", {"type": "block-start", "index": 0, "blockType": "text"})
        for piece in ["漢字かな" * 2, "ｆｕｌｌ" * 2, "mixed 字 ", "漢字かな" * 3, "é" * 30]:
            view.chunk("root", {"type": "text-delta", "index": 0, "text": piece})
        view.chunk("root", {"type": "finish", "reason": {"kind": "stop"}})
        view.end_line()
        return out.getvalue()

    each = printed(False)
    assert "漢字かな" in each and "é" in each
    assert printed(True) == each


def test_a_prompt_line_is_measured_with_its_mark(monkeypatch: pytest.MonkeyPatch) -> None:
    """A prompt's line is ``› `` and its text: the mark's cells count, so a line that reaches the
    width goes to Rich, one below it is written straight; the output is Rich's either way."""

    def printed(record: bool) -> tuple[str, int]:
        out = io.StringIO()
        console = Console(
            file=out, width=40, color_system=None, soft_wrap=True, force_terminal=False, record=record
        )
        prints = _counted(console, monkeypatch)
        view = LiveView(console, root_session="root", batch=True, prompts=True)
        for text in ("p" * 37, "q" * 38, "字" * 18, "字" * 19):  # lines of 39, 40, 38 and 40 cells
            content = [{"type": "text", "text": text}]
            message = {"role": "user", "source": {"kind": "user"}, "content": content}
            view.event("root", Event("user/message", 0, 0, message))
        view.end_line()
        return out.getvalue(), len(prints)

    rich, _ = printed(True)
    direct, direct_prints = printed(False)
    assert direct == rich
    assert f"› {'p' * 37}\n" in direct and f"› {'字' * 19}\n" in direct
    assert direct_prints == 2  # the two lines as wide as the console
