"""``dsh serve record DIR`` over an earlier recording (issue 36, item 8): refused unless ``--force``,
then replaced in one step when the server stops — never two recordings mixed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import openai
import pytest

from dsh.errors import UsageError
from dsh.serve.record import RecordServer
from dsh.serve.replay import ReplayServer
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply
from tests.serve.helpers import control, start_serve, stop

OLD = {"session.jsonl": b"old primary\n", "session.1.jsonl": b"old child\n", "session.2.jsonl": b"old\n",
       "input.json": b"{}\n", "notes.txt": b"mine\n"}  # fmt: skip


def _old_recording(directory: Path) -> None:
    directory.mkdir()
    for name, data in OLD.items():
        (directory / name).write_bytes(data)


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_a_non_empty_directory_is_refused_in_one_line_exit_2(tmp_path: Path) -> None:
    directory = tmp_path / "rec"
    _old_recording(directory)
    done = subprocess.run(
        [sys.executable, "-m", "dsh.cli", "serve", "record", str(directory), "--upstream", "http://127.0.0.1:9/v1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "is not empty" in done.stderr and "--force" in done.stderr and "Traceback" not in done.stderr
    assert _snapshot(directory) == OLD


def test_force_replaces_the_recording_as_one_step_when_the_server_stops(tmp_path: Path) -> None:
    directory = tmp_path / "rec"
    _old_recording(directory)
    with OpenAICompatServer(handler=lambda _: stream_reply(text=["o", "k"])) as upstream:
        process, base_url, token = start_serve(
            "record", str(directory), "--upstream", upstream.base_url, "--force"
        )
        try:
            with openai.OpenAI(base_url=base_url, api_key="sk-x", max_retries=0) as client:
                list(client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}], stream=True))  # fmt: skip
            during = _snapshot(directory)  # recorded, not yet replaced: the old one is whole
            control(base_url, "shutdown", token, method="POST")
        finally:
            _, err = stop(process)
    assert process.returncode == 0, err
    assert during == OLD
    after = _snapshot(directory)
    assert sorted(after) == ["input.json", "notes.txt", "session.jsonl"]  # old session.N.jsonl gone
    assert after["session.jsonl"] != OLD["session.jsonl"] and after["notes.txt"] == OLD["notes.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["rec"]  # no staging directory left
    assert [s.label for s in ReplayServer(directory).sessions] == ["session.jsonl"]


def test_an_empty_directory_needs_no_force_and_is_written_as_it_records(tmp_path: Path) -> None:
    directory = tmp_path / "rec"
    directory.mkdir()
    RecordServer("http://127.0.0.1:9/v1", directory)  # accepted
    with pytest.raises(UsageError, match="is not empty"):
        (directory / "session.jsonl").write_text("x\n")
        RecordServer("http://127.0.0.1:9/v1", directory)
    file = tmp_path / "file"
    file.write_text("")
    with pytest.raises(UsageError, match="not a directory"):
        RecordServer("http://127.0.0.1:9/v1", file, replace=True)
