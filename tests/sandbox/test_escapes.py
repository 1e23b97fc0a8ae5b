"""Escapes from ``workspace-write``: each one works unconfined and is refused by the kernel when confined.

Every case runs with the same command under ``danger-full-access`` (unwrapped), where it
must succeed — proving the test really escapes — and confined, once per kernel sandbox
(the ``backend`` fixture: bubblewrap, Landlock), which must stop it. Nothing parses the
command: the refusals come from read-only mounts, hidden mounts and the empty network
namespace (bubblewrap), or from the Landlock ruleset.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.tools import ToolRegistry
from dsh.tools.sandbox import SandboxBackend, SandboxPolicy
from tests.patience import until
from tests.procs import processes_with

from .conftest import bash, make_ctx, text_of

FULL = SandboxPolicy(mode="danger-full-access")
DENIED = {"bubblewrap": "Read-only file system", "landlock": "Permission denied"}
"""How each backend's refusal of a write reads."""
HIDDEN = {"bubblewrap": "No such file or directory", "landlock": "Permission denied"}
"""How each backend's refusal to read a secret path reads (an empty mount / no read right)."""

ESCAPES = {
    "dotdot": "echo pwned > ../outside/escaped",
    "absolute": "echo pwned > {out}/escaped",
    "symlink": "ln -s {out} link && echo pwned > link/escaped",
    "cd-root": "cd / && echo pwned > .{out}/escaped",
    "background": (
        "setsid bash -c 'sleep 0.5; echo pwned > {out}/escaped' >/dev/null 2>&1 < /dev/null & sleep 0.2"
    ),
}


def _escaped(out: Path) -> bool:
    return (out / "escaped").exists()


async def _settle(case: str) -> None:
    if case == "background":
        await asyncio.sleep(1.5)  # longer than the background writer's delay


@pytest.mark.parametrize("case", sorted(ESCAPES))
async def test_write_escape_works_unconfined(base: Path, registry: ToolRegistry, case: str) -> None:
    out = base / "outside"
    await bash(registry, make_ctx(base / "ws", FULL), ESCAPES[case].format(out=out))
    await until(lambda: _escaped(out), "the escape wrote")  # the background writer: when it runs


@pytest.mark.parametrize("case", sorted(ESCAPES))
async def test_write_escape_is_refused_under_workspace_write(
    base: Path, registry: ToolRegistry, case: str, backend: SandboxBackend
) -> None:
    out = base / "outside"
    policy = SandboxPolicy(backend=backend)
    output = await bash(registry, make_ctx(base / "ws", policy), ESCAPES[case].format(out=out))
    await _settle(case)
    assert not _escaped(out), text_of(output)
    assert not output.is_error
    if case != "background":
        assert DENIED[backend] in text_of(output) and "[exit code: 1]" in text_of(output)


HARD_LINK = "ln {out}/target.txt hard && echo pwned >> hard"


async def test_hard_link_escape_works_unconfined(base: Path, registry: ToolRegistry) -> None:
    out = base / "outside"
    await bash(registry, make_ctx(base / "ws", FULL), HARD_LINK.format(out=out))
    assert (out / "target.txt").read_text() == "original\npwned\n"


async def test_hard_link_escape_is_refused_under_workspace_write(
    base: Path, registry: ToolRegistry, backend: SandboxBackend
) -> None:
    out = base / "outside"
    policy = SandboxPolicy(backend=backend)
    output = await bash(registry, make_ctx(base / "ws", policy), HARD_LINK.format(out=out))
    assert (out / "target.txt").read_text() == "original\n"
    assert "Invalid cross-device link" in text_of(output), text_of(output)
    assert not (base / "ws" / "hard").exists()


async def test_writes_inside_the_workspace_and_temp_still_work(
    base: Path, registry: ToolRegistry, backend: SandboxBackend
) -> None:
    ws = base / "ws"
    output = await bash(
        registry,
        make_ctx(ws, SandboxPolicy(backend=backend)),
        "mkdir -p sub && echo ok > sub/f && t=$(mktemp) && echo ok > $t && cat $t && rm $t",
    )
    assert text_of(output) == "ok\n" and (ws / "sub" / "f").read_text() == "ok\n"


async def test_read_only_refuses_writes_even_in_the_workspace(
    base: Path, registry: ToolRegistry, backend: SandboxBackend
) -> None:
    ws = base / "ws"
    policy = SandboxPolicy(mode="read-only", backend=backend)
    output = await bash(registry, make_ctx(ws, policy), "echo x > f; echo y > /tmp/f$$")
    assert not (ws / "f").exists()
    assert text_of(output).count(DENIED[backend]) == 2


SECRET_READ = "cat ~/.ssh/id_ed25519; cat ~/.netrc; echo done"


def _home_with_secrets(base: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = base / "outside" / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY\n")
    (home / ".netrc").write_text("machine x password NETRC-SECRET\n")
    monkeypatch.setenv("HOME", str(home))
    return home


async def test_secret_read_works_unconfined(
    base: Path, registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    _home_with_secrets(base, monkeypatch)
    output = await bash(
        registry, make_ctx(base / "ws", SandboxPolicy(mode="danger-full-access")), SECRET_READ
    )
    assert "PRIVATE-KEY" in text_of(output) and "NETRC-SECRET" in text_of(output)


async def test_secret_read_is_refused_under_workspace_write(
    base: Path, registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch, backend: SandboxBackend
) -> None:
    _home_with_secrets(base, monkeypatch)
    policy = SandboxPolicy(backend=backend)
    output = await bash(registry, make_ctx(base / "ws", policy), SECRET_READ)
    text = text_of(output)
    assert "PRIVATE-KEY" not in text and "NETRC-SECRET" not in text and "done" in text
    assert HIDDEN[backend] in text


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 that accepts and drops connections; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        server.close()


NET = "(echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED || echo REFUSED"


async def test_network_works_unconfined(base: Path, registry: ToolRegistry, listener: int) -> None:
    output = await bash(registry, make_ctx(base / "ws", FULL), NET.format(port=listener))
    assert text_of(output) == "CONNECTED\n"


async def test_network_is_refused_when_off(
    base: Path, registry: ToolRegistry, listener: int, backend: SandboxBackend
) -> None:
    policy = SandboxPolicy(network=False, backend=backend)
    output = await bash(registry, make_ctx(base / "ws", policy), NET.format(port=listener))
    assert text_of(output) == "REFUSED\n"


async def test_network_on_is_allowed_confined(
    base: Path, registry: ToolRegistry, listener: int, backend: SandboxBackend
) -> None:
    policy = SandboxPolicy(network=True, backend=backend)
    output = await bash(registry, make_ctx(base / "ws", policy), NET.format(port=listener))
    assert text_of(output) == "CONNECTED\n"


async def test_nothing_a_confined_call_starts_outlives_it(
    base: Path, registry: ToolRegistry, backend: SandboxBackend
) -> None:
    """A ``setsid`` daemon escapes the process-group kill; bubblewrap's PID namespace and the
    Landlock runner (its subreaper) end it with the call."""
    marker = f"dsh-outlive-{backend}-{os.getpid()}"
    command = _DAEMON.format(marker=marker) + "; exit 3"
    policy = SandboxPolicy(backend=backend)
    output = await bash(registry, make_ctx(base / "ws", policy), command)
    assert text_of(output).endswith("[exit code: 3]"), text_of(output)
    try:  # the kernel ends the namespace's members a moment after its init: a hang guard
        await until(lambda: processes_with(marker, zombies=False) == [], "the daemon is gone")
    finally:
        _kill(processes_with(marker, zombies=False))


async def test_a_setsid_daemon_outlives_an_unconfined_call(base: Path, registry: ToolRegistry) -> None:
    """The check above can fail: unconfined, the daemon survives the call."""
    marker = f"dsh-outlive-unconfined-{os.getpid()}"
    await bash(registry, make_ctx(base / "ws", FULL), _DAEMON.format(marker=marker))
    alive = processes_with(marker, zombies=False)
    _kill(alive)
    assert alive


_DAEMON = (
    "setsid bash -c 'exec -a {marker} sleep 600' >/dev/null 2>&1 < /dev/null & "
    "until pgrep -f {marker} >/dev/null; do sleep 0.05; done"  # the call ends once it runs
)


def _kill(pids: list[int]) -> None:
    for pid in pids:  # what the test started, by pid; it may be gone already
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def test_a_confined_command_killed_by_a_signal_says_so(
    base: Path, registry: ToolRegistry, backend: SandboxBackend
) -> None:
    output = await bash(registry, make_ctx(base / "ws", SandboxPolicy(backend=backend)), "kill -TERM $$")
    want = {"landlock": "[killed by signal: SIGTERM]", "bubblewrap": "[exit code: 143]"}[backend]
    assert text_of(output).endswith(want), text_of(output)  # bubblewrap reports its own status
