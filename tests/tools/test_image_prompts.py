"""Images in prompts: the library (``run_turn([text, Image])``), ``dsh run --image``, ACP image blocks."""

from __future__ import annotations

import base64
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ImageContentBlock, ResourceContentBlock, TextContentBlock

from dsh import Image
from dsh.acp.prompt import admit_prompt
from dsh.errors import UsageError
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.loop.prompts import ImagePromptError
from dsh.model.scripted import ScriptedModel, text_reply
from dsh.store.sqlite import SqliteEventStore
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply
from dsh.workspace.snapshot import MEDIA_TYPE as MANIFEST_MEDIA_TYPE
from tests.tools.test_read_image import VISION, image_bytes


def _attachments(db: Path) -> int:
    """The attachments stored, but the workspace checkpoints' manifests (``dsh run`` takes one
    after each turn; the workspace's files share the images' content-addressed ids)."""
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        if "attachments" not in tables:
            return 0
        sql = "SELECT COUNT(*) FROM attachments WHERE media_type != ?"
        return int(conn.execute(sql, (MANIFEST_MEDIA_TYPE,)).fetchone()[0])


async def test_a_library_prompt_with_an_image_is_logged_as_the_original(
    tmp_path: Path, upstream: Path
) -> None:
    red = upstream / "read-image" / "workspace" / "red.png"
    store = SqliteEventStore(tmp_path / "s.db")
    model = ScriptedModel([text_reply("DONE")])
    async with await Agent.create(
        store, model=model, config=AgentConfig(model=VISION, retry=NO_DELAY)
    ) as agent:
        parts: list[str | Image] = [
            "Inspect this image, then reply with exactly ",
            Image.from_path(red),
            "the single word DONE.",
        ]
        assert (await agent.run_turn(parts)).text == "DONE"
        prompt = next(e for e in agent.session.events if e.type == "user/message")
    assert prompt.data["content"] == [
        {"type": "text", "text": "Inspect this image, then reply with exactly "},
        {
            "type": "image",
            "attachment": {
                "attachmentId": "sha256:b1ff9c8ea3a780bad09b346c423d2d0e46815926879b18e841d928376a946640",
                "mediaType": "image/png", "width": 1, "height": 1, "bytes": 69,
            },
        },
        {"type": "text", "text": "the single word DONE."},
    ]  # fmt: skip
    assert prompt.data["source"] == {"kind": "user"}
    assert list(prompt.data["content"][1]["attachment"]) == [
        "attachmentId",
        "mediaType",
        "width",
        "height",
        "bytes",
    ]
    assert _attachments(tmp_path / "s.db") == 1


async def test_an_image_prompt_to_a_text_model_is_refused_whole(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    config = AgentConfig(model="deepseek-chat", retry=NO_DELAY)
    async with await Agent.create(store, model=ScriptedModel([]), config=config) as agent:
        with pytest.raises(ImagePromptError, match='model "deepseek-chat" does not declare image input'):
            await agent.run_turn(["look", Image.from_bytes(image_bytes(2, 2), "image/png")])
        assert agent.session.events == []  # no turn started
    assert _attachments(tmp_path / "s.db") == 0


def test_corrupt_and_oversized_images_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"Unsupported or malformed image data\."):
        Image.from_bytes(b"\x89PNG broken", "image/png")
    big = tmp_path / "big.png"
    big.write_bytes(b"\0" * 3_670_017)
    with pytest.raises(UsageError, match="3670017 bytes exceeds the 3670016-byte limit"):
        Image.from_path(big)
    with pytest.raises(UsageError, match="Image exceeds the configured per-side pixel limit"):
        Image.from_bytes(image_bytes(2001, 1), "image/png")


def test_acp_image_blocks_are_admitted_as_the_original() -> None:
    data = base64.b64encode(image_bytes(3, 3)).decode()
    text = TextContentBlock(type="text", text="see ")
    image = ImageContentBlock(type="image", data=data, mime_type="image/png")
    link = ResourceContentBlock(type="resource_link", name="a.py", uri="file:///w/a.py")
    parts = admit_prompt([text, image, link, TextContentBlock(type="text", text="now")], images=True)
    assert isinstance(parts, list) and parts[0] == "see " and isinstance(parts[1], Image)
    assert parts[2:] == ['\n[resource_link name="a.py" uri="file:///w/a.py"]\n', "now"]
    refusals = [
        (image, False, "inline image prompts were not advertised by this connection"),
        (ImageContentBlock(type="image", data=data, mime_type="image/bmp"), True,
         "image mimeType must be image/png, image/jpeg, image/webp, or image/gif"),
        (ImageContentBlock(type="image", data=data + "\n", mime_type="image/png"), True,
         "image data must be canonical base64"),
        (ImageContentBlock(type="image", data=base64.b64encode(b"junk").decode(), mime_type="image/png"),
         True,
         "Unsupported or malformed image data."),
    ]  # fmt: skip
    for block, advertised, detail in refusals:
        with pytest.raises(Exception) as caught:
            admit_prompt([text, block], images=advertised)
        assert getattr(caught.value, "code", None) == -32602
        assert str(caught.value.args[0]) == f"Invalid params: {detail}"


def _dsh(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "DSH_STORE": f"sqlite:{tmp_path / 's.db'}",
        "NO_COLOR": "1",
        "HOME": str(tmp_path),
    }
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


def test_dsh_run_image_sends_image_url_parts(tmp_path: Path) -> None:
    one, two = image_bytes(2, 2), image_bytes(4, 1, "JPEG")
    (tmp_path / "a.png").write_bytes(one)
    (tmp_path / "b.jpg").write_bytes(two)
    with OpenAICompatServer([stream_reply(text=["seen"])]) as server:
        args = ["run", "what is this?", "--image", "a.png", "--image", "b.jpg", "--base-url", server.base_url]
        out = _dsh(tmp_path, *args, "--model", VISION, "--no-tools")
        body: Any = server.bodies[0]
    assert out.returncode == 0, out.stderr
    user = next(m for m in body["messages"] if m["role"] == "user")
    assert user["content"] == [
        {"type": "text", "text": "what is this?"},
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(one).decode()},
        },
        {
            "type": "image_url",
            "image_url": {"url": "data:image/jpeg;base64," + base64.b64encode(two).decode()},
        },
    ]
    assert _attachments(tmp_path / "s.db") == 2


def test_dsh_run_image_errors_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(image_bytes(2, 2))
    (tmp_path / "bad.png").write_bytes(b"nope")
    with OpenAICompatServer([]) as server:
        base = ["run", "look", "--base-url", server.base_url, "--no-tools"]
        text_model = _dsh(tmp_path, *base, "--model", "deepseek-chat", "--image", "a.png")
        corrupt = _dsh(tmp_path, *base, "--model", VISION, "--image", "bad.png")
        missing = _dsh(tmp_path, *base, "--model", VISION, "--image", "gone.png")
        assert server.requests == []
    assert text_model.returncode != 0
    assert text_model.stderr.strip().endswith('model "deepseek-chat" does not declare image input')
    assert corrupt.returncode == 2 and "Unsupported or malformed image data." in corrupt.stderr
    assert missing.returncode == 2 and "gone.png" in missing.stderr
    for out in (text_model, corrupt, missing):
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert _attachments(tmp_path / "s.db") == 0
