"""dsh's own agent recorded through dsh serve record: the directory is an ordinary scenario
that dsh scenario replay passes, dsh sessions import reads and dsh ui shows (the same logs as
everything else)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from dsh.serve.pytest_plugin import BackgroundServer
from dsh.serve.record import RecordServer
from dsh.store.url import open_store
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, stream_reply
from dsh.ui.app import create_app
from tests.cli.test_run_cli import _two_step  # a bash tool call, then 'All done.'


def _dsh(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update({"DSH_STORE": f"sqlite:{cwd / 's.db'}", "NO_COLOR": "1", "PYTHONUTF8": "1"})
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _record_and_replay(
    tmp_path: Path, upstream_handler: Callable[[RecordedRequest], Response], prompt: str
) -> tuple[Path, Path, str, dict[str, Any]]:
    """``dsh run prompt`` recorded through ``dsh serve record``, then ``dsh scenario replay``
    of the directory: (workspace, directory, the run's stdout, the replay's JSON report)."""
    work, directory = tmp_path / "work", tmp_path / "rec"
    work.mkdir()
    with OpenAICompatServer(handler=upstream_handler) as upstream:
        proxy = BackgroundServer(RecordServer(upstream.base_url, directory))
        proxy.start()
        try:
            run = _dsh(work, "run", prompt, "--base-url", proxy.base_url,
                       "--api-key", "sk-serve-e2e", "--model", "test-model")  # fmt: skip
        finally:
            proxy.stop()
    assert run.returncode == 0, run.stderr
    replay = _dsh(work, "scenario", "replay", str(directory), "--json", "--trust")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    return work, directory, run.stdout, json.loads(replay.stdout)


def test_a_dsh_run_recorded_through_serve_replays_as_a_scenario(tmp_path: Path) -> None:
    work, directory, stdout, report = _record_and_replay(tmp_path, _two_step, "Run the marker command.")
    assert "All done." in stdout
    (session,) = report["sessions"]
    assert (report["ok"], session["calls"], session["consumed"]) == (True, 2, 2)
    assert (session["toolResults"], session["finalText"]) == ({"equal": 1, "total": 1}, "All done.")
    store = f"sqlite:{tmp_path / 'imported.db'}"
    imported = _dsh(work, "sessions", "import", str(directory / "session.jsonl"), "--json", "--store", store)
    assert imported.returncode == 0, imported.stderr
    (record,) = json.loads(imported.stdout)
    with TestClient(create_app(lambda: open_store(store), label=store)) as viewer:  # what dsh ui serves
        page = viewer.get(f"/s/{record['id']}")
    assert page.status_code == 200
    assert "All done." in page.text and "CLI_OK" in page.text


def _failing_read(req: RecordedRequest) -> Response:
    """A read with a wrong argument (an error result, which the wire cannot mark), then the answer."""
    if any(m.get("role") == "tool" for m in req.messages):
        return stream_reply(text=["Bad ", "argument."])
    args = json.dumps({"path": "missing.txt"})  # read takes file_path
    return stream_reply(tool_calls=[WireToolCall.split("call_1", "read", args, 2)])


def test_a_failing_tool_recorded_through_serve_replays_as_a_scenario(tmp_path: Path) -> None:
    """The wire carries no isError: the live run's error result must not read as a divergence."""
    *_, report = _record_and_replay(tmp_path, _failing_read, "Read missing.txt.")
    (session,) = report["sessions"]
    assert (session["consumed"], session["toolResults"]) == (2, {"equal": 1, "total": 1})
