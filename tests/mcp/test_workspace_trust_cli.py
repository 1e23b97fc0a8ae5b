"""A workspace's ``.mcp.json`` starts only when trusted (issue #46, item 5): a cloned
repository's file must not run its commands at the first turn of a piped ``dsh run``.

The server leaves a line in ``starts.txt`` each time it starts (how a test sees it did not).
Without a terminal: not started, one stderr line saying how to trust it; ``--trust-mcp`` or
``DSH_TRUST_MCP=1`` start it; the user's own ``--mcp-config`` servers start unasked. At a
terminal (a pty): asked once, naming the command and its arguments; the answer is
remembered for that file in ``$DSH_HOME/mcp-trust.json``; a changed file asks again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, stream_reply

from .conftest import KEY, calc_entry, copy_calc, dsh, write_config

REFUSED = (
    "dsh: not starting the workspace's MCP servers (.mcp.json: calc): "
    "pass --trust-mcp or set DSH_TRUST_MCP=1 to trust them"
)
ASKED = "start them? [y]es / [n]o"


def answering(req: RecordedRequest) -> Response:
    return stream_reply(text="ok")


def workspace(tmp: Path, *extra: str) -> tuple[Path, Path]:
    """A workspace whose ``.mcp.json`` runs the calc server (``extra``: more arguments), and
    the file its starts are counted in."""
    ws, starts = tmp / "ws", tmp / "starts.txt"
    ws.mkdir(exist_ok=True)
    entry = calc_entry(copy_calc(tmp / "servers"), starts=starts)
    entry["args"] += list(extra)
    write_config(ws / ".mcp.json", calc=entry)
    return ws, starts


def run(ws: Path, *args: str, **env: str) -> tuple[str, list[str]]:
    """``dsh run hi`` in ``ws``: its stderr and the tool names the model was offered."""
    with OpenAICompatServer(handler=answering) as model:
        out = dsh(ws, "run", "hi", "--base-url", model.base_url, *args, store=ws.parent / "s.db",
                  DSH_API_KEY=KEY, **env)  # fmt: skip
        tools = [t["function"]["name"] for t in model.requests[0].json.get("tools", [])]
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return out.stderr, tools


def started(starts: Path) -> int:
    return len(starts.read_text().splitlines()) if starts.exists() else 0


def test_a_piped_run_does_not_start_the_workspace_servers_and_says_how_to_trust_them(tmp_path: Path) -> None:
    ws, starts = workspace(tmp_path)
    stderr, tools = run(ws)
    assert started(starts) == 0, "the workspace's server was started unasked"
    assert "mcp__calc__add" not in tools
    assert stderr.splitlines().count(REFUSED) == 1, stderr
    assert not (tmp_path / "dsh-home" / "mcp-trust.json").exists(), "nothing was answered"


@pytest.mark.parametrize(("flags", "env"), [(("--trust-mcp",), {}), ((), {"DSH_TRUST_MCP": "1"})])
def test_trust_mcp_or_its_variable_starts_them(
    tmp_path: Path, flags: tuple[str, ...], env: dict[str, str]
) -> None:
    ws, starts = workspace(tmp_path)
    stderr, tools = run(ws, *flags, **env)
    assert started(starts) == 1 and "mcp__calc__add" in tools
    assert "not starting" not in stderr


def test_chat_without_a_terminal_does_not_start_them_either(tmp_path: Path) -> None:
    ws, starts = workspace(tmp_path)
    with OpenAICompatServer(handler=answering) as model:
        out = dsh(ws, "chat", "--base-url", model.base_url, store=tmp_path / "s.db", stdin="hi\n",
                  DSH_API_KEY=KEY)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert started(starts) == 0 and out.stderr.splitlines().count(REFUSED) == 1, out.stderr


def test_the_users_own_servers_start_unasked_beside_an_untrusted_workspace(tmp_path: Path) -> None:
    ws, starts = workspace(tmp_path)
    own_starts = tmp_path / "own-starts.txt"
    own = write_config(
        tmp_path / "own.json", mine=calc_entry(copy_calc(tmp_path / "servers"), starts=own_starts)
    )
    stderr, tools = run(ws, "--mcp-config", str(own))
    assert started(own_starts) == 1 and "mcp__mine__add" in tools, "--mcp-config is the user's own"
    assert started(starts) == 0 and "mcp__calc__add" not in tools and REFUSED in stderr
    replaced = write_config(
        tmp_path / "replaced.json", calc=calc_entry(copy_calc(tmp_path / "servers"), starts=own_starts)
    )
    stderr, tools = run(ws, "--mcp-config", str(replaced))
    assert started(own_starts) == 2 and started(starts) == 0 and "mcp__calc__add" in tools
    assert "not starting" not in stderr, "a workspace server the user's own replaces is not asked about"


def test_at_a_terminal_it_asks_once_per_file_and_remembers_the_answer(tmp_path: Path) -> None:
    ws, starts = workspace(tmp_path)
    with OpenAICompatServer(handler=answering) as model:

        def at_terminal(typed: str) -> str:
            out = dsh(ws, "run", "hi", "--base-url", model.base_url, store=tmp_path / "s.db", typed=typed,
                      DSH_API_KEY=KEY)  # fmt: skip
            assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
            return out.stderr

        first = at_terminal("y\n")
        assert started(starts) == 1 and first.count(ASKED) == 1, first
        server = tmp_path / "servers" / "calc_server.py"
        assert f"  calc: {sys.executable} {server}\n" in first, (
            "the question names the command and its arguments"
        )

        again = at_terminal("n\n")  # were it asked, "n" would keep the server from starting
        assert ASKED not in again and started(starts) == 2, "remembered for this file"

        workspace(tmp_path, "--changed")
        changed = at_terminal("n\n")
        assert changed.count(ASKED) == 1 and f"{server} --changed\n" in changed, "a changed file asks again"
        assert started(starts) == 2

        declined = at_terminal("y\n")
        assert ASKED not in declined and started(starts) == 2, "the no is remembered too"
        assert "(.mcp.json: calc): declined for this file" in declined and "--trust-mcp" in declined
        assert len(model.requests) == 4
    remembered = json.loads((tmp_path / "dsh-home" / "mcp-trust.json").read_text())
    assert remembered["workspaces"][str(ws)]["trusted"] is False
    assert (tmp_path / "dsh-home" / "mcp-trust.json").stat().st_mode & 0o077 == 0
