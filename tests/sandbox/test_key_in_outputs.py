"""The provider key never leaves a tool or a hook, even when a command reads it from the
shell that launched dsh (``/proc/<ancestor>/environ``: Landlock has no PID namespace,
``danger-full-access`` nothing at all). One scripted run per backend, through ``dsh run``:
the launching ``bash`` holds the key in its environment; the model asks for a foreground
``bash`` call that walks up ``/proc`` printing every ancestor's environ (long enough to
spill to a file) and a background job doing the same, then reads the job with
``job_output``; a ``PostToolUse`` hook walks up ``/proc`` too. The key's value must appear
nowhere: the store, ``dsh sessions export``, any request the model received, spill files.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply

KEY = "sk-parent-shell-DO-NOT-LEAK-7a41c0de93b2"
WALK = (
    "p=$$; while [ \"$p\" -gt 1 ]; do cat /proc/$p/environ 2>&1 | tr '\\0' '\\n' | grep -a -E "
    "'API_KEY|denied'; p=$(cut -d' ' -f4 /proc/$p/stat); done; echo WALKED"
)
PADDED = WALK + "; head -c 3000 /dev/zero | tr '\\0' x"
HOOKS = {
    "hooks": {"PostToolUse": [{"matcher": "job_output", "hooks": [{"type": "command", "command": WALK}]}]}
}


def _call(call_id: str, name: str, arguments: dict[str, object]) -> WireToolCall:
    return WireToolCall.split(call_id, name, json.dumps(arguments), 2)


def _handler(req: RecordedRequest) -> Response:
    tools = sum(1 for m in req.messages if m.get("role") == "tool")
    if tools == 0:
        return stream_reply(
            tool_calls=[
                _call("c1", "bash", {"command": PADDED, "description": "walk up /proc"}),
                _call("c2", "bash", {"command": WALK, "description": "walk", "run_in_background": True}),
            ]
        )
    if tools == 2:
        return stream_reply(tool_calls=[_call("c3", "job_output", {"job_id": "bash-1", "wait": True})])
    return stream_reply(text=["done"])


def _how(how: str) -> dict[str, str]:
    if how == "danger-full-access":
        return {"DSH_SANDBOX": "danger-full-access"}
    return {"DSH_SANDBOX": "workspace-write", "DSH_SANDBOX_BACKEND": how}


@pytest.mark.parametrize("how", ["danger-full-access", "landlock", "bubblewrap"])
def test_a_key_in_the_launching_shell_reaches_no_output(tmp_path: Path, how: str) -> None:
    ws, spill, store = tmp_path / "ws", tmp_path / "spill", tmp_path / "store"
    ws.mkdir()
    (ws / "hooks.json").write_text(json.dumps(HOOKS))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update({"DSH_STORE": f"jsonl:{store}", "DSH_SPILL_DIR": str(spill), **_how(how)})
    with OpenAICompatServer(handler=_handler) as server:
        dsh = shlex.join([sys.executable, "-m", "dsh.cli", "run", "Walk up.", "--base-url", server.base_url,
                          "--model", "m", "--json"])  # fmt: skip
        # the launching shell holds the key in its environment; "; true" keeps it dsh's parent
        done = subprocess.run(
            ["bash", "-c", f"{dsh}; true"],
            env={**env, "DEEPSEEK_API_KEY": KEY},
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        bodies = [r.body.decode("utf-8", "replace") for r in server.requests]
    if "no sandbox backend is usable" in done.stdout + done.stderr:
        pytest.skip(f"{how} cannot confine on this host")
    assert done.returncode == 0, done.stderr
    assert len(bodies) == 3, done.stdout[-2000:]
    seen = "\n".join(bodies)
    assert seen.count("WALKED") >= 2  # the foreground walk and the job's ran
    exported = subprocess.run(
        [sys.executable, "-m", "dsh.cli", "sessions", "list", "--json"],
        env=env, cwd=ws, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    for session in json.loads(exported):
        exported += subprocess.run(
            [sys.executable, "-m", "dsh.cli", "sessions", "export", session["id"]],
            env=env, cwd=ws, capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
    stored = "".join(p.read_text("utf-8", "replace") for p in store.rglob("*") if p.is_file())
    spilled = "".join(p.read_text("utf-8", "replace") for p in spill.rglob("*") if p.is_file())
    assert "Full formatted result stored at" in seen and spilled  # the walk's result spilled
    assert "hook/result" in stored and "WALKED" in stored  # the hook ran, its summary logged
    for place, text in {"requests": seen, "store": stored, "export": exported, "spill": spilled,
                        "stdout": done.stdout, "stderr": done.stderr}.items():  # fmt: skip
        assert KEY not in text, place
    if how == "danger-full-access":  # it did read the shell's environ: the value was masked
        assert "DEEPSEEK_API_KEY=***" in seen and "DEEPSEEK_API_KEY=***" in spilled
