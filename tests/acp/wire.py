"""Test helpers: spawn ``dsh acp`` as a real subprocess and talk raw JSON-RPC to it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.patience import patience

SERVER = [sys.executable, "-c", "from dsh.cli.acp_cmd import main; main()"]
TIMEOUT = patience(90.0)
"""A hang guard, not a timing: a wait for a frame ends when the frame comes or the server
exits (end of its stdout); this only bounds a server that hangs. On a loaded machine a
server's start alone took over 15 s (the guard this replaced)."""
SHUTDOWN = {"shutdown_timeout": TIMEOUT}
"""``transport_kwargs`` of the ACP SDK's ``spawn_agent_process``: after closing stdin it
SIGTERMs a server not gone within 2 s, which a loaded machine's server can take to exit."""

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SECRETS = ("DEEPSEEK_API_KEY", "DSH_API_KEY", "DSH_BASE_URL", "DEEPSEEK_BASE_URL", "DSH_MODEL", "DSH_STORE")


def server_env() -> dict[str, str]:
    """The parent's environment without any provider or store configuration (hermetic)."""
    return {k: v for k, v in os.environ.items() if k not in _SECRETS}


def server_args(
    *, replay: Path | None, store: str, profile: str = "full", log: Path | None = None
) -> list[str]:
    args = ["--store", store, "--profile", profile]
    if replay is not None:
        args += ["--replay", str(replay)]
    if log is not None:
        args += ["--log-file", str(log)]
    return args


def scenario_copy(source: Path, target: Path, *, override: Any = None) -> Path:
    """Copy a recorded scenario's logs (and input) into ``target``, optionally with an override."""
    target.mkdir(parents=True)
    for path in source.iterdir():
        if path.is_file() and (path.suffix == ".jsonl" or path.name == "input.json"):
            shutil.copy(path, target / path.name)
    if override is not None:
        (target / "replay.override.json").write_text(json.dumps(override))
    return target


def workspace_for(scenario: Path, tmp: Path) -> Path:
    """A writable copy of the scenario's ``workspace/`` (or an empty dir)."""
    cwd = tmp / "work"
    if (scenario / "workspace").is_dir():
        shutil.copytree(scenario / "workspace", cwd)
        for path in [cwd, *cwd.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)
    else:
        cwd.mkdir()
    return cwd.resolve()


class RawServer:
    """One ``dsh acp`` process (or ``command``); every stdout line is kept, parsed, in ``frames``."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        stderr_path: Path,
        cwd: Path | None = None,
        command: Sequence[str] = SERVER,
    ) -> None:
        self.args = list(args)
        self.command = list(command)
        self.stderr_path = stderr_path
        self.cwd = cwd
        self.frames: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        self._proc: asyncio.subprocess.Process | None = None
        self._next_id = 1

    async def __aenter__(self) -> RawServer:
        with self.stderr_path.open("wb") as err:
            self._proc = await asyncio.create_subprocess_exec(
                *self.command,
                *self.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=err,
                env=server_env(),
                cwd=self.cwd,
                limit=64 * 1024 * 1024,
            )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def proc(self) -> asyncio.subprocess.Process:
        assert self._proc is not None
        return self._proc

    async def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_raw(json.dumps(message).encode() + b"\n")

    def new_id(self) -> int:
        request_id = self._next_id
        self._next_id += 1
        return request_id

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and return its response frame (other frames are kept in order)."""
        request_id = await self.start(method, params)
        return await self.response(request_id)

    async def start(self, method: str, params: dict[str, Any] | None = None) -> int:
        request_id = self.new_id()
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})
        return request_id

    async def response(self, request_id: Any) -> dict[str, Any]:
        return await self.wait_for(lambda f: f.get("id") == request_id and "method" not in f)

    async def wait_for(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first frame (seen or still to come) matching ``predicate``."""
        for frame in self.frames:
            if predicate(frame):
                return frame
        return await asyncio.wait_for(self._read_until(predicate), TIMEOUT)

    def gone(self) -> str | None:
        """Why no further frame can come (the server exited), or ``None`` while it runs."""
        code = self.proc.returncode
        if code is None:
            return None
        return f"the server exited with {code}; stderr: {self.stderr_path.read_text()!r}"

    async def _read_until(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"server exited; stderr: {self.stderr_path.read_text()!r}")
            self.raw.append(line)
            frame: dict[str, Any] = json.loads(line)
            self.frames.append(frame)
            if predicate(frame):
                return frame

    async def close(self) -> int:
        """Close stdin, drain stdout, and return the exit code (killing a server that hangs)."""
        proc = self.proc
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        assert proc.stdout is not None
        try:
            rest = await asyncio.wait_for(proc.stdout.read(), TIMEOUT)
            for line in rest.splitlines(keepends=True):
                self.raw.append(line)
                self.frames.append(json.loads(line))
            return await asyncio.wait_for(proc.wait(), TIMEOUT)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):  # it may have exited meanwhile
                proc.kill()
            await proc.wait()
            raise AssertionError("dsh acp did not exit after stdin was closed") from None


def upstream_normalize(frame: dict[str, Any]) -> dict[str, Any]:
    """The original's snapshot normalization: every session id (any UUID) → ``{{sessionId}}``."""
    text = _UUID.sub("{{sessionId}}", json.dumps(frame))
    return json.loads(text)  # type: ignore[no-any-return]
