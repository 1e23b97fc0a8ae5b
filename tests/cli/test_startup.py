"""``dsh`` starts without importing the machinery a command does not need.

Every command's options are declared at import time (``--help`` and completion list them
all), but what a command runs — the loop, the tools, the stores, the scenario runner, ACP,
``dsh serve``, the viewer, rich — is imported when that command runs.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "dsh.loop.agent",
    "dsh.tools.builtin.bash",
    "dsh.tools.registry",
    "dsh.store.sqlite",
    "dsh.store.jsonl",
    "dsh.snapshot.runner",
    "dsh.replay.fidelity",
    "dsh.acp.server",
    "dsh.serve.replay",
    "dsh.serve.record",
    "dsh.ui.app",
    "dsh.model.openai_compat",
    "rich.console",
    "dsh.tools.schema",
)


def loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_building_the_cli_imports_no_command_machinery() -> None:
    loaded = loaded_after("import typer.main\nfrom dsh.cli.app import app\ntyper.main.get_command(app)")
    assert sorted(loaded & set(HEAVY)) == []


def test_help_of_every_command_imports_no_command_machinery() -> None:
    loaded = loaded_after(
        "from dsh.cli.app import app\n"
        "for argv in (['--help'], ['run', '--help'], ['sessions', '--help'], ['replay', '--help'],\n"
        "             ['acp', '--help'], ['serve', 'replay', '--help'], ['ui', '--help']):\n"
        "    try:\n"
        "        app(argv, standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n"
    )
    assert sorted(loaded & set(HEAVY)) == []


def test_the_pytest_plugins_import_no_machinery() -> None:
    """Both plugins are registered (``pytest11``) for every pytest run wherever dsh is
    installed: loading them must cost a project that uses neither next to nothing."""
    loaded = loaded_after("import pytest\nimport dsh.snapshot.plugin\nimport dsh.serve.pytest_plugin")
    assert sorted(loaded & {*HEAVY, "httpx2", "openai", "dsh.hooks", "dsh.loop"}) == []


def test_a_command_still_imports_what_it_runs() -> None:
    """The check above can fail: running a command pulls in its machinery."""
    loaded = loaded_after(
        "from dsh.cli.app import app\n"
        "try:\n"
        "    app(['sessions', 'list', '--store', 'memory:', '--json'], standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    assert "dsh.store.sqlite" in loaded or "dsh.store.memory" in loaded
