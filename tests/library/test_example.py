"""``examples/library.py`` (shown by docs/guide/library.md) runs as it is against the local test server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dsh.store.sqlite import SqliteEventStore
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import WireToolCall, stream_reply

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "library.py"


def test_the_library_example_runs(tmp_path: Path) -> None:
    call = WireToolCall.split("c1", "get_weather", json.dumps({"city": "Oslo"}), 2)
    server = OpenAICompatServer(
        [stream_reply(tool_calls=[call]), stream_reply(text=["It is ", "3C."]), stream_reply(text="3C")]
    )
    server.start_in_thread()
    env = {**os.environ, "DSH_BASE_URL": server.base_url, "DSH_API_KEY": "sk-example"}
    try:
        out = subprocess.run(
            [sys.executable, str(EXAMPLE)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
    finally:
        server.stop_thread()
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == '[get_weather {"city": "Oslo"}]'
    assert lines[1] == "It is 3C."
    assert lines[2] == "fork: 3C"
    assert lines[3:] == [
        " user: What is the weather in Oslo?",
        'model: get_weather({"city": "Oslo"})',
        " tool: Oslo: 3C",
        "model: It is 3C.",
    ]
    assert [r.json["model"] for r in server.requests] == ["deepseek-chat"] * 3
    assert "sk-example" not in out.stdout + out.stderr


async def test_the_example_left_a_parent_and_its_fork_child(tmp_path: Path) -> None:
    test_the_library_example_runs(tmp_path)
    async with SqliteEventStore(tmp_path / "sessions.db") as store:
        sessions = await store.list_sessions()
        parent = next(s for s in sessions if s.header.parent_session is None)
        child = next(s for s in sessions if s.header.parent_session == parent.header.id)
        assert child.header.is_seeded and child.inherited_event_count > 0


def test_the_library_guide_shows_the_example() -> None:
    guide = (EXAMPLE.parents[1] / "docs" / "guide" / "library.md").read_text()
    block = guide[guide.index("```python\n") + len("```python\n") :]
    block = block[: block.index("```\n")]
    example = EXAMPLE.read_text().split('"""', 2)[2].lstrip("\n")
    assert block == example
