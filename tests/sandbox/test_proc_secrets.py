"""The provider key stays out of what a tool's command can read of the dsh process itself:
``/proc/<ancestor>/environ`` and ``cmdline``. Bubblewrap's PID namespace hides dsh; the
Landlock backend and ``danger-full-access`` do not, so the CLI overwrites the key in its own
argument and environment blocks once it has read it (``dsh.procfs``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply

KEY = "sk-proc-DO-NOT-LEAK-5f1c2a9e7d3b"
ANCESTORS = (
    "p=$$; while [ \"$p\" -gt 1 ]; do cat /proc/$p/environ /proc/$p/cmdline | tr '\\0' '\\n' "
    "| grep -A1 -E 'API_KEY|--api-key'; p=$(cut -d' ' -f4 /proc/$p/stat); done; echo WALKED"
)


def test_scrub_secret_overwrites_the_blocks_and_keeps_pythons_copies() -> None:
    code = (
        "import os, sys\n"
        "from dsh.procfs import scrub_secret\n"
        "key = os.environ['THE_KEY']\n"
        "before = open('/proc/self/environ','rb').read().count(key.encode())"
        " + open('/proc/self/cmdline','rb').read().count(key.encode())\n"
        "n = scrub_secret(key)\n"
        "after = open('/proc/self/environ','rb').read().count(key.encode())"
        " + open('/proc/self/cmdline','rb').read().count(key.encode())\n"
        "import ctypes\n"
        "dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)\n"  # PR_GET_DUMPABLE
        "print(before, n, after, os.environ['THE_KEY'] == key, sys.argv[1] == key, dumpable)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, KEY], env={**os.environ, "THE_KEY": KEY},
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert done.stdout.split() == ["2", "2", "0", "True", "True", "0"]  # and no longer dumpable


def _handler(req: RecordedRequest) -> Response:
    if any(m.get("role") == "tool" for m in req.messages):
        return stream_reply(text=["done"])
    args = json.dumps({"command": ANCESTORS, "description": "walk up /proc"})
    return stream_reply(tool_calls=[WireToolCall.split("call_1", "bash", args, 2)])


@pytest.mark.parametrize("how", ["landlock", "danger-full-access"])
def test_a_command_walking_up_proc_never_reads_the_key(tmp_path: Path, how: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update({"DEEPSEEK_API_KEY": KEY, "DSH_STORE": f"sqlite:{tmp_path / 's.db'}"})
    if how == "landlock":
        env["DSH_SANDBOX_BACKEND"] = "landlock"
    else:
        env["DSH_SANDBOX"] = "danger-full-access"
    with OpenAICompatServer(handler=_handler) as server:
        done = subprocess.run(
            [sys.executable, "-m", "dsh.cli", "run", "Walk up.", "--base-url", server.base_url,
             "--model", "m", "--api-key", KEY],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        second = server.requests[-1]
    if how == "landlock" and "no sandbox backend is usable" in done.stdout + done.stderr:
        pytest.skip("Landlock does not confine on this host")
    assert done.returncode == 0, done.stderr
    tool_result = next(m for m in second.messages if m.get("role") == "tool")
    assert "WALKED" in str(tool_result["content"])  # the walk ran, and it read the blocks
    content = str(tool_result["content"])
    if how == "landlock" and os.geteuid() == 0:
        # root without a capability cannot read a process that holds some (dsh, its shells)
        assert "environ: Permission denied" in content and "DEEPSEEK_API_KEY=" not in content
    else:
        assert "DEEPSEEK_API_KEY=****" in content  # dsh's environ, scrubbed
    assert KEY not in json.dumps(second.json)


PEEK = (
    "cat /proc/{pid}/environ | tr '\\0' '\\n' | grep -a PEEK_MARKER; head -c 1 /proc/{pid}/mem; echo PEEKED"
)


@pytest.mark.parametrize("how", ["danger-full-access", "landlock", "bubblewrap"])
async def test_a_confined_root_command_reads_no_other_process(tmp_path: Path, how: str) -> None:
    """Another process's ``environ`` and ``mem``: readable unconfined; bubblewrap's PID namespace
    hides it; under Landlock as root, the dropped capabilities forbid it (the kernel lets a
    process read one that holds capabilities it lacks only with ``CAP_SYS_PTRACE``); Landlock's
    own ptrace rule forbids ``mem``. (A normal user's ``environ`` stays readable under
    Landlock: no ABI up to 7 scopes ``/proc``.)"""
    from dsh.tools import builtin_registry
    from dsh.tools.sandbox import SandboxBackend, SandboxPolicy

    from .conftest import BACKEND_FAILURES, bash, make_ctx, text_of

    if how != "danger-full-access" and BACKEND_FAILURES[how]() is not None:
        pytest.skip(f"{how} cannot confine here")
    if os.geteuid() != 0:
        pytest.skip("the capability rule is root's (CI runs as root)")
    other = subprocess.Popen(["sleep", "60"], env={"PEEK_MARKER": "peek-value-123"})
    try:
        policy = (
            SandboxPolicy(mode="danger-full-access")
            if how == "danger-full-access"
            else SandboxPolicy(backend=cast(SandboxBackend, how))
        )
        registry = builtin_registry(max_inline_bytes=None)
        out = text_of(await bash(registry, make_ctx(tmp_path, policy), PEEK.format(pid=other.pid)))
    finally:
        other.kill()
        other.wait()
    assert "PEEKED" in out
    assert ("peek-value-123" in out) == (how == "danger-full-access"), out
