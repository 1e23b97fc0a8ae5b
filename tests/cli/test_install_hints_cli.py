"""Install hints name this project's distribution, ``dsh-harness`` (``dsh`` on PyPI is another
project), from one home (``dsh.errors.install_hint``): met through the CLI with the extra's
module made unimportable, and no other spelling anywhere in the sources."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.errors import install_hint
from dsh.store.logfile import compress

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "src" / "dsh" / "snapshot" / "scenarios" / "subagent-fork"
LOG = b'{"type":"session","version":2,"id":"s1","createdAt":1,"cwd":"/w"}\n'


def without(module: str, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``dsh ARGV`` in a process where ``module`` cannot be imported (the extra is missing)."""
    code = (
        "import sys\n"
        f"sys.modules[{module!r}] = None\n"
        "from dsh.cli.app import main\n"
        f"sys.argv = ['dsh', *{list(argv)!r}]\n"
        "main()\n"
    )
    env = {**os.environ, "NO_COLOR": "1", "XDG_DATA_HOME": str(cwd / "data")}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_the_hint_names_the_distribution() -> None:
    assert install_hint("ui") == "pip install 'dsh-harness[ui]'"


@pytest.mark.parametrize(
    ("module", "argv", "extra"),
    [
        ("acp", ["acp"], "acp"),
        ("starlette", ["ui", "--store", "jsonl:store"], "ui"),
        ("psycopg", ["sessions", "list", "--store", "postgresql://127.0.0.1/test"], "postgres"),
        ("zstandard", ["log", "inspect", "log.jsonl.zst"], "zstd"),
        ("jinja2", ["replay", str(SCENARIO), "--html", "report.html"], "ui"),
    ],
)
def test_a_missing_extra_says_how_to_install_it(
    tmp_path: Path, module: str, argv: list[str], extra: str
) -> None:
    (tmp_path / "log.jsonl.zst").write_bytes(compress(LOG))
    out = without(module, *argv, cwd=tmp_path)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr
    (line,) = out.stderr.splitlines()
    assert line.startswith("dsh: error: ")
    assert f"pip install 'dsh-harness[{extra}]'" in line, line


def test_no_source_spells_the_hint_another_way() -> None:
    wrong = re.compile(r"pip install '?dsh\[|(?<![\w-])dsh\[(acp|ui|postgres|zstd|dev)")
    found = []
    docs = sorted((ROOT / "docs").rglob("*.md"))
    for path in [*sorted((ROOT / "src" / "dsh").rglob("*")), ROOT / "README.md", *docs]:
        if path.suffix in (".py", ".md") and path.is_file():
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if wrong.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
