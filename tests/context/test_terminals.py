"""Terminal tools over real PTYs (a confined shell, ``python -i``): the original's result texts,
the 64-byte bound of its pty-tools recording, and every terminal ending with its session."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

from dsh.model.scripted import text_reply, tool_call_reply
from dsh.tools.builtin.terminal_tools import terminal_tools
from dsh.tools.sandbox import SandboxPolicy
from tests.context.helpers import context_agent
from tests.patience import patience
from tests.procs import processes_with


def _results(agent: Any) -> list[str]:
    return [
        e.data["message"]["content"][0]["content"][0]["text"]
        for e in agent.session.events
        if e.type == "tool/result"
    ]


async def test_a_confined_shell_answers_like_the_original_recording(tmp_path: Path) -> None:
    replies = [
        tool_call_reply("c1", "terminal_open", {"type": "shell", "name": "main"}),
        tool_call_reply("c2", "terminal_send", {"sessionId": "pty-1", "text": "printf 'PTY_OK\\n'"}),
        tool_call_reply("c3", "terminal_read", {"sessionId": "pty-1", "offset": 0, "count": 20}),
        tool_call_reply("c4", "terminal_read", {"sessionId": "pty-missing"}),
        tool_call_reply("c5", "terminal_list", {}),
        tool_call_reply("c6", "terminal_close", {"sessionId": "pty-1"}),
        tool_call_reply("c7", "terminal_list", {}),
        text_reply("DONE"),
    ]
    policy = SandboxPolicy(mode="workspace-write", logged=False)
    bounded = terminal_tools(max_result_bytes=64)  # the recording's bound
    agent, _ = await context_agent(tmp_path, replies, sandbox=policy, extra_tools=bounded)
    result = await agent.run_turn("Use a terminal")
    assert result.ok
    got = _results(agent)
    assert got[0] == "started terminal session pty-1 (main) [type: shell]\ndsh> "
    assert got[1] == "K\ndsh> \n[wait: stdin_read]\n[session: running]\n[output truncated]"
    assert got[2] == "dsh> printf 'PTY_OK\\n'\nPTY_OK\ndsh> \n[lines: 0-3 of 3]"
    assert got[3] == "Error: unknown PTY session pty-missing"
    assert got[4].startswith("pty-1 (main) [shell] running pid=")
    assert got[5:] == ["closed terminal session pty-1", "(no terminal sessions)"]
    meta = [e.data.get("meta") for e in agent.session.events if e.type == "tool/result"][1]
    assert meta == {
        "viewport": "printf 'PTY_OK\\n'\nPTY_OK\ndsh> ",
        "waitReason": "stdin_read",
        "sessionStatus": "running",
        "truncated": False,
    }
    await agent.aclose()


async def test_python_keeps_state_and_a_command_that_never_exits_dies_with_the_session(
    tmp_path: Path,
) -> None:
    replies = [
        tool_call_reply("c1", "terminal_open", {"type": "python"}),
        tool_call_reply("c2", "terminal_send", {"sessionId": "pty-1", "text": "x = 20 + 22"}),
        tool_call_reply("c3", "terminal_send", {"sessionId": "pty-1", "text": "print(x)"}),
        tool_call_reply("c4", "terminal_open", {"type": "shell"}),
        tool_call_reply("c5", "terminal_send", {"sessionId": "pty-2", "text": "echo $$; sleep 1234.5"}),
        tool_call_reply("c6", "terminal_open", {"type": "lisp"}),
        text_reply("DONE"),
    ]
    agent, _ = await context_agent(tmp_path, replies)
    assert (await agent.run_turn("Use python")).ok
    got = _results(agent)
    assert got[0] == "started terminal session pty-1 [type: python]\n>>> "
    assert got[2] == "print(x)\n42\n>>> \n[wait: stdin_read]\n[session: running]"
    assert got[4].endswith("\n[wait: inferred_idle]\n[session: running]")
    assert processes_with("1234.5") != []  # really running until the session ends
    assert got[5] == 'Error: no PTY backend registered for "lisp"'
    shells = [t.pid for t in agent.terminals.all()]
    assert len(shells) == 2
    await agent.aclose()  # the session ends: so do its terminals, the sleeping one included
    assert agent.terminals.all() == []
    # the sandbox's PID namespace is torn down by the kernel once its init is killed: a
    # member may outlive the group wait by a moment on a loaded machine, never for long
    deadline = time.monotonic() + patience(30)
    while processes_with("1234.5") and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert processes_with("1234.5") == []
    for pid in shells:
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().split()[2] == "Z"


async def test_a_job_ignoring_sighup_still_dies_with_its_terminal(tmp_path: Path) -> None:
    """Under ``nohup dsh ...`` every child inherits SIGHUP ignored: a shell's foreground job (in
    its own process group, job control on) outlives the shell's group unless the terminal's whole
    session is stopped."""
    replies = [
        tool_call_reply("c1", "terminal_open", {"type": "shell"}),
        tool_call_reply("c2", "terminal_send", {"sessionId": "pty-1", "text": "sleep 2345.6"}),
        text_reply("DONE"),
    ]
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # what nohup does to dsh
    try:
        agent, _ = await context_agent(tmp_path, replies)
        assert (await agent.run_turn("Sleep")).ok
    finally:
        signal.signal(signal.SIGHUP, before)
    assert processes_with("2345.6") != []
    await agent.aclose()
    deadline = time.monotonic() + patience(30)
    while processes_with("2345.6") and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert processes_with("2345.6") == [], "the job outlived its terminal"
