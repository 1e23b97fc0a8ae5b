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
        "print(before, n, after, os.environ['THE_KEY'] == key, sys.argv[1] == key)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, KEY], env={**os.environ, "THE_KEY": KEY},
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert done.stdout.split() == ["2", "2", "0", "True", "True"]


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
