"""``dsh chat`` through a real pseudo-terminal: turns, Ctrl-C cancels a turn, Ctrl-D exits."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import select
import struct
import sys
import termios
import time
from pathlib import Path

from dsh.testing.server import RUNTIME_CONTEXT, OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Faults, Response, stream_reply

from .test_run_cli import _env, dsh


class Terminal:
    """``dsh chat`` as the session leader of a pty: keys in, screen text out."""

    def __init__(
        self, args: list[str], env: dict[str, str], cwd: Path, *, columns: int | None = None
    ) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: exec dsh with the pty as its controlling terminal
            if columns is not None:  # a narrow screen, set before dsh can ask its size
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
            os.chdir(cwd)
            os.execve(sys.executable, [sys.executable, "-m", "dsh.cli", *args], env)
        self.raw = b""
        self.consumed = 0

    def expect(self, text: str, timeout: float = 60.0) -> str:
        """Read until ``text`` has appeared (after what earlier calls consumed); return all read."""
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {text!r}; the screen:\n{self.screen}"
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:  # the child exited
                    chunk = b""
                assert chunk, f"dsh chat exited before {text!r}; the screen:\n{self.screen}"
                self.raw += chunk
        seen = self.screen
        self.consumed += seen.index(text) + len(text)
        return seen

    @property
    def screen(self) -> str:
        """What arrived after the last expected text (decoded whole: a character may span reads)."""
        return self.raw.decode(errors="replace")[self.consumed :]

    def send(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def wait(self, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with_select = select.select([self.fd], [], [], 0.1)[0]
            if with_select:
                with contextlib.suppress(OSError):
                    os.read(self.fd, 4096)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
        raise AssertionError("dsh chat did not exit")


def _reply(req: RecordedRequest) -> Response:
    prompt = req.prompt
    if prompt == "slow one":
        return stream_reply(text=["Working", " on", " it"], faults=Faults(stall_after=2, stall_seconds=None))
    return stream_reply(text=f"ANSWER to {prompt}")


def test_chat_turns_ctrl_c_cancels_the_turn_and_ctrl_d_exits(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=_reply) as server:
        term = Terminal(["chat", "--base-url", server.base_url], _env(tmp_path), tmp_path)
        banner = term.expect("Ctrl-D exits")
        session = banner.split("session ")[1].split()[0]
        term.expect("› ")
        term.send("first\r")
        term.expect("ANSWER to first")
        term.expect("› ")
        term.send("slow one\r")
        term.expect("Working")
        term.send("\x03")  # Ctrl-C: the tty sends SIGINT to dsh
        term.expect("cancelled")
        term.expect("› ")
        term.send("third\r")
        term.expect("ANSWER to third")
        term.expect("› ")
        term.send("\x04")  # Ctrl-D at an empty prompt: end of input
        code = term.wait()
        third = server.requests[-1].json["messages"]
    assert code == 0
    users = [m["content"] for m in third if m["role"] == "user"]
    assert users[1].startswith(RUNTIME_CONTEXT) and [users[0], *users[2:]] == ["first", "slow one", "third"]
    shown = dsh(tmp_path, "sessions", "show", session, "--events", "--json")
    ends = [
        e["data"]["reason"]["kind"] for e in json.loads(shown.stdout)["events"] if e["type"] == "turn/end"
    ]
    assert ends == ["completed", "aborted", "completed"]


def _compacting(req: RecordedRequest) -> Response:
    if req.prompt.startswith("Stop the task for a moment"):  # the summary request's instruction
        return stream_reply(text="## Current Work\n- the chat so far")
    return stream_reply(text=f"ANSWER to {req.prompt[:20]}")


def test_slash_compact_replaces_the_history_and_says_what_it_did(tmp_path: Path) -> None:
    long = "remember this: " + "the sky is blue and water is wet " * 30
    with OpenAICompatServer(handler=_compacting) as server:
        term = Terminal(["chat", "--base-url", server.base_url], _env(tmp_path), tmp_path)
        banner = term.expect("Ctrl-D exits")
        session = banner.split("session ")[1].split()[0]
        term.expect("› ")
        term.send("/compact\r")
        term.expect("nothing to compact yet")
        term.expect("› ")
        term.send(long + "\r")
        term.expect("ANSWER to remember")
        term.expect("› ")
        term.send("second\r")
        term.expect("ANSWER to second")
        term.expect("› ")
        calls = len(server.requests)
        term.send("/compact\r")
        line = term.expect(" tokens")
        term.expect("› ")
        term.send("/compact please\r")
        term.expect("/compact takes no arguments")
        term.expect("› ")
        term.send("third\r")
        term.expect("ANSWER to third")
        term.expect("› ")
        term.send("\x04")
        code = term.wait()
        last = server.requests[-1].json["messages"]
    assert code == 0 and len(server.requests) == calls + 2  # the summary call, then the third turn
    assert "compacted " in line and " messages, " in line and " → " in line
    texts = [str(m.get("content")) for m in last]
    assert "the chat so far" in texts[1] and not any(long in t for t in texts)  # after the system prompt
    shown = dsh(tmp_path, "sessions", "show", session, "--events", "--json")
    events = json.loads(shown.stdout)["events"]
    runs = [e for e in events if e["type"] == "command/run"]
    dones = [e["data"] for e in events if e["type"] == "command/done"]
    assert [r["data"]["args"] for r in runs] == ["", "", "please"]
    assert [d["kind"] for d in dones] == ["success", "success", "error"]
    summary = next(e for e in events if e["type"] == "compaction/summary")
    assert dones[1]["sourceEventSeq"] == summary["seq"]
    assert summary["data"]["sourceCommandId"] == runs[1]["data"]["commandId"]
