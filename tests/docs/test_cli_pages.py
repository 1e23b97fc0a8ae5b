"""docs/reference/cli/ is what tools/gen_cli_docs.py makes from dsh's --help now: a changed help
text, a new option or a new command fails here until `make docs` rewrites the pages."""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.gen_cli_docs import OUT, pages, stale, write


@pytest.fixture(scope="module")
def made() -> dict[str, str]:
    return pages()


def test_the_committed_cli_pages_are_the_help_of_today(made: dict[str, str]) -> None:
    wrong = stale(made)
    diffs: list[str] = []
    for name in wrong:
        path = OUT / name
        have = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        now = made.get(name, "").splitlines()
        diffs += difflib.unified_diff(have, now, f"committed {name}", f"--help now {name}", lineterm="")
    assert not wrong, (
        f"docs/reference/cli/ differs from dsh's --help ({', '.join(wrong)}): run `make docs` "
        "(or `python tools/gen_cli_docs.py`) and commit the pages\n" + "\n".join(diffs)
    )


def test_a_page_shows_the_help_exactly_as_dsh_prints_it_at_80_columns(made: dict[str, str]) -> None:
    dsh = Path(sys.executable).with_name("dsh")  # the installed console script
    env = {**os.environ, "COLUMNS": "80"}
    for args, page in [(("sessions", "list"), "sessions.md"), (("run",), "run.md"), ((), "index.md")]:
        printed = subprocess.run([dsh, *args, "--help"], env=env, capture_output=True, text=True)
        assert printed.returncode == 0, printed.stderr
        assert f"```text\n{printed.stdout.rstrip()}\n```\n" in made[page], " ".join(args)


def test_every_command_has_a_page_and_the_index_links_it(made: dict[str, str]) -> None:
    for name in made:
        if name != "index.md":
            assert f"]({name})" in made["index.md"], name
    assert {"run.md", "chat.md", "sessions.md", "replay.md", "serve.md"} <= set(made)


def test_the_generator_checks_and_rewrites(tmp_path: Path) -> None:
    want = {"index.md": "# Commands\n", "run.md": "# dsh run\n"}
    (tmp_path / "gone.md").write_text("# dsh gone\n")
    (tmp_path / "run.md").write_text("# old\n")
    assert stale(want, tmp_path) == ["gone.md", "index.md", "run.md"]
    assert write(want, tmp_path) == ["gone.md", "index.md", "run.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.md", "run.md"]
    assert stale(want, tmp_path) == []
