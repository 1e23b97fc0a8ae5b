"""``dsh`` starts without importing the machinery a command does not need.

Every command's options are declared at import time (``--help`` and completion list them
all), but what a command runs — the loop, the tools, the stores, the scenario runner, ACP,
``dsh serve``, the viewer, rich — is imported when that command runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


# -- issue 35, item 15: a command that calls no model imports no model client ------------------
# (issue 40: the client is dsh.model.openai_compat over httpx2; dsh imports no ``openai`` SDK)

SCENARIO = Path(__file__).parents[2] / "src/dsh/snapshot/scenarios/text-turn"
_KEYS = ("DEEPSEEK_API_KEY", "DSH_API_KEY", "DSH_BASE_URL", "DEEPSEEK_BASE_URL", "DSH_STORE")


def sdk_modules(*argv: str, cwd: Path, stdin: str = "", log: Path | None = None) -> set[str]:
    """The model client's modules a real ``dsh`` process imported — the adapter, any ``openai``
    SDK module (``-X importtime``: on stderr, or in the ACP server's log
    file, where its stderr goes while serving)."""
    env = {k: v for k, v in os.environ.items() if k not in _KEYS}
    env["XDG_DATA_HOME"] = str(cwd / "data")
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dsh.cli", *argv],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )
    text = done.stderr + (log.read_text() if log is not None and log.exists() else "")
    found = set()
    for line in text.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name.split(".")[0] == "openai" or name == "dsh.model.openai_compat":
                found.add(name)
    return found


def test_commands_that_call_no_model_import_no_openai(tmp_path: Path) -> None:
    store = f"jsonl:{tmp_path / 'store'}"
    assert sdk_modules("replay", str(SCENARIO), "--store", store, cwd=tmp_path) == set()
    sid = next((tmp_path / "store").glob("*.jsonl")).name[:8]
    for argv in (
        ("--help",),
        ("run", "--help"),
        ("sessions", "list", "--store", store),
        ("sessions", "tree", "--store", store),
        ("log", sid, "--store", store),
        ("run", "   ", "--store", store),  # refused before anything
        ("run", "hi", "--resume", "nope", "--store", store, "--base-url", "http://127.0.0.1:9"),
    ):
        assert sdk_modules(*argv, cwd=tmp_path) == set(), argv
    log = tmp_path / "acp.log"
    init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
    acp = ("acp", "--replay", str(SCENARIO), "--store", "memory:", "--log-file", str(log))
    assert sdk_modules(*acp, cwd=tmp_path, stdin=init, log=log) == set()


def test_a_command_that_calls_a_model_does_import_it(tmp_path: Path) -> None:
    """The check above can fail: a turn against a (local) model imports the client; and no
    command imports the ``openai`` SDK (0.8 s of CPU; docs/decisions/2026-12-07-no-openai-sdk.md)."""
    from dsh.testing.server import OpenAICompatServer
    from dsh.testing.wire import stream_reply

    with OpenAICompatServer(handler=lambda r: stream_reply(text="ok")) as server:
        found = sdk_modules("run", "hi", "--store", "memory:", "--base-url", server.base_url, cwd=tmp_path)
    assert "dsh.model.openai_compat" in found
    assert not any(name.split(".")[0] == "openai" for name in found)


# -- issue 40, item 5: ``dsh --version`` and ``dsh run --help`` import only what they use ---------


def _main_with(*argv: str) -> str:
    """Code that runs the console script's ``main`` on ``argv`` (its exit caught)."""
    return (
        f"sys.argv = ['dsh', *{list(argv)!r}]\n"
        "from dsh.cli.app import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
    )


OTHER_COMMANDS = ("dsh.cli.acp_cmd", "dsh.cli.sessions_cmd", "dsh.cli.serve_cmd", "dsh.cli.ui_cmd")


def test_version_imports_neither_typer_nor_any_command() -> None:
    for flag in ("--version", "-V"):
        loaded = loaded_after(_main_with(flag))
        assert sorted(m for m in loaded if m.split(".")[0] in {"typer", "click", "rich", "asyncio"}) == []
        assert sorted(m for m in loaded if m.startswith("dsh.cli.") and m.endswith("_cmd")) == []
        assert "dsh.acp" not in loaded
        assert "importlib.metadata" not in loaded  # the version is dsh's own (~35 ms less)


def test_the_version_line_is_the_packages_and_the_installed_metadatas() -> None:
    """One home for the version: ``dsh.__version__``, which the build reads for the package's."""
    out = subprocess.run(
        [sys.executable, "-m", "dsh.cli", "--version"], capture_output=True, text=True, check=True, timeout=60
    )
    code = "import dsh, importlib.metadata as m; print(dsh.__version__, m.version('dsh-harness'))"
    ours, installed = loaded_version(code)
    assert out.stdout == f"dsh {ours}\n" and ours == installed


def loaded_version(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.split()


def test_run_help_imports_the_run_command_alone_and_no_event_loop() -> None:
    loaded = loaded_after(_main_with("run", "--help"))
    assert "dsh.cli.run_cmd" in loaded  # the check can fail: the command it names is imported
    assert sorted(loaded & {*OTHER_COMMANDS, "dsh.acp", "asyncio"}) == []


def test_the_whole_tree_still_has_every_command_and_each_group_its_subcommands_once() -> None:
    code = (
        "import typer.main\n"
        "from dsh.cli.tree import build_app\n"
        "build_app('sessions')\n"  # a first, partial build adds the sessions subcommands
        "from dsh.cli.app import app\n"
        "group = typer.main.get_command(app)\n"
        "import dsh.cli.sessions_cmd as s\n"
        "names = [c.name for c in s.sessions_app.registered_commands]\n"
        "assert len(names) == len(set(names)), names\n"
        "print(sorted(group.commands), sorted(group.commands['sessions'].commands))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    top, sessions = out.stdout.strip().split("] [")
    assert "'acp'" in top and "'run'" in top and "'temporal'" in top
    assert all(f"'{name}'" in sessions for name in ("list", "export", "rm", "prune", "tail", "tree"))
