"""Persistent terminals: PTY-backed shells and REPLs a session keeps across tool calls.

A :class:`TerminalTable` belongs to one session (the ``Agent`` owns it and closes every
terminal when the session's agent closes). Each terminal is a process on a pseudo-terminal
in its own session, started under the session's sandbox (:func:`dsh.tools.sandbox.confine`,
as ``bash`` is): ``shell`` is ``bash`` (no profile, no line editing, prompt ``dsh> ``),
``python`` is ``python3 -i``. Output is kept (CR LF read as LF) as the scrollback the
``terminal_read`` tool pages through. A send writes the text (and Enter) and waits: for the
terminal's prompt after 20 ms of silence (``stdin_read``), 250 ms of silence
(``inferred_idle``), the process's end (``session_exit``) or the timeout (``timeout``).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import pty
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from dsh.tools.process_group import session_groups, signal_group, wait_group_gone
from dsh.tools.sandbox import SandboxPolicy, confine

POLL_S: Final = 0.01
PROBE_S: Final = 0.02
IDLE_S: Final = 0.25
TIMEOUT_S: Final = 2.0
STARTUP_S: Final = 5.0
CLOSE_GRACE_S: Final = 0.5
SHELL_RC: Final = "exec 2>&1\nPS1='dsh> '\nPS2='> '\nunset PROMPT_COMMAND\n"
PROMPTS: Final = {"shell": ("dsh> ", "> "), "python": (">>> ", "... ")}
BACKENDS: Final = tuple(PROMPTS)


@dataclass(eq=False)
class Terminal:
    id: str
    name: str | None
    type: str
    proc: subprocess.Popen[bytes]
    fd: int
    output: str = ""
    """Everything read (the scrollback), CR LF as LF."""
    sending: bool = False
    closing: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    last_output: float = field(default_factory=time.monotonic)
    _cr: bool = False
    _decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace")
    )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def status(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "running"
        if code < 0:
            return f"exited code=null signal={signal.Signals(-code).name}"
        return f"exited code={code} signal=null"

    def feed(self, data: bytes) -> None:
        text = ("\r" if self._cr else "") + self._decoder.decode(data)
        self._cr = text.endswith("\r")
        if self._cr:
            text = text[:-1]
        self.output += text.replace("\r\n", "\n")
        self.last_output = time.monotonic()
        self.changed.set()


class TerminalTable:
    """One session's terminals (ids ``pty-<n>``, counted per session, never reused)."""

    def __init__(self) -> None:
        self._count = 0
        self._terminals: dict[str, Terminal] = {}
        self._rc: Path | None = None

    def all(self) -> list[Terminal]:
        return list(self._terminals.values())

    def get(self, terminal_id: str) -> Terminal | None:
        return self._terminals.get(terminal_id)

    def _argv(self, kind: str) -> list[str]:
        if kind == "python":
            return ["python3", "-i", "-q"]
        if self._rc is None:
            handle, name = tempfile.mkstemp(prefix="dsh-term-", suffix=".rc")
            with os.fdopen(handle, "w") as rc:
                rc.write(SHELL_RC)
            self._rc = Path(name)
        return ["bash", "--noprofile", "--noediting", "--rcfile", str(self._rc), "-i"]

    async def open(
        self, kind: str, name: str | None, cwd: Path, *, policy: SandboxPolicy | None, workspace: Path,
        env: dict[str, str],
    ) -> tuple[Terminal, str]:  # fmt: skip
        """Start a terminal of ``kind``; its id and what it printed before it was ready."""
        self._count += 1
        terminal_id = f"pty-{self._count}"
        argv = confine(policy, self._argv(kind), workspace, cwd)
        master, slave = pty.openpty()
        env = {**env, "TERM": "dumb", "PS1": "dsh> ", "PYTHONUNBUFFERED": "1"}
        try:
            proc = await asyncio.to_thread(
                subprocess.Popen, argv, stdin=slave, stdout=slave,
                stderr=subprocess.DEVNULL if kind == "shell" else slave,
                cwd=cwd, env=env, start_new_session=True, close_fds=True,
            )  # fmt: skip
        except OSError:
            os.close(master)
            raise
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        terminal = Terminal(terminal_id, name, kind, proc, master)
        asyncio.get_running_loop().add_reader(master, self._readable, terminal)
        self._terminals[terminal_id] = terminal
        await self._settle(terminal, 0, STARTUP_S)
        return terminal, terminal.output

    def _readable(self, terminal: Terminal) -> None:
        try:
            data = os.read(terminal.fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the other side is gone
            with contextlib.suppress(ValueError, OSError):
                asyncio.get_running_loop().remove_reader(terminal.fd)
            terminal.changed.set()
            return
        terminal.feed(data)

    async def _settle(self, terminal: Terminal, start: int, within: float) -> str:
        """Wait for the prompt, silence, the end or the timeout; the reason."""
        began = time.monotonic()
        prompts = PROMPTS.get(terminal.type, ())
        while True:
            now = time.monotonic()
            new = terminal.output[start:]
            quiet = now - terminal.last_output
            if terminal.proc.poll() is not None:
                await asyncio.sleep(PROBE_S)  # what it wrote last
                return "session_exit"
            if new and quiet >= PROBE_S and new.endswith(prompts):
                return "stdin_read"
            if new and quiet >= IDLE_S:
                return "inferred_idle"
            if now - began >= within:
                return "timeout"
            terminal.changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_S):
                    await terminal.changed.wait()

    async def send(
        self, terminal: Terminal, text: str, *, submit: bool, within: float = TIMEOUT_S
    ) -> tuple[str, str]:
        """Write ``text`` (and Enter); the new output and why the wait ended."""
        start = len(terminal.output)
        terminal.sending = True
        try:
            data = (text + ("\n" if submit else "")).encode()
            while data:
                try:
                    written = os.write(terminal.fd, data)
                except BlockingIOError:
                    await asyncio.sleep(POLL_S)
                    continue
                data = data[written:]
            reason = await self._settle(terminal, start, within)
        finally:
            terminal.sending = False
        return terminal.output[start:], reason

    async def close(self, terminal: Terminal) -> None:
        """Stop the terminal's process group (SIGHUP, then SIGKILL), then every other group of
        its session (a shell's jobs, each in its own group: one that ignores SIGHUP — every
        child of ``nohup dsh`` does — outlives the shell), and forget it."""
        terminal.closing = True
        jobs = session_groups(terminal.pid) - {terminal.pid}  # read while its leader pins the id
        signal_group(terminal.pid, signal.SIGHUP)
        if not await wait_group_gone(terminal.pid, CLOSE_GRACE_S):
            signal_group(terminal.pid, signal.SIGKILL)
            await wait_group_gone(terminal.pid, 2.0)
        for group in jobs:
            signal_group(group, signal.SIGKILL)
            await wait_group_gone(group, 2.0)
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(terminal.fd)
        with contextlib.suppress(OSError):
            os.close(terminal.fd)
        with contextlib.suppress(ChildProcessError, OSError):
            terminal.proc.wait(timeout=0.5)
        self._terminals.pop(terminal.id, None)

    async def aclose(self) -> None:
        """Close every terminal (the session ends)."""
        for terminal in self.all():
            await self.close(terminal)
        if self._rc is not None:
            with contextlib.suppress(OSError):
                self._rc.unlink()
            self._rc = None
