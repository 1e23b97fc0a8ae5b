"""``read_image`` on real PNG/JPEG files, through the loop and a local model server over HTTP."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image as PILImage

from dsh.events.attachments import attachment_id
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.openai_compat import OpenAICompatModel
from dsh.model.scripted import ScriptedModel, text_reply, tool_call_reply
from dsh.store.jsonl import JsonlEventStore
from dsh.store.sqlite import SqliteEventStore
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import WireToolCall, stream_reply
from dsh.tools import ToolContext
from dsh.tools.registry import builtin_registry

VISION = "deepseek-v4-flash-vision-exp"


def image_bytes(
    width: int, height: int, fmt: str = "PNG", color: tuple[int, int, int] = (200, 10, 10)
) -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (width, height), color).save(out, fmt)
    return out.getvalue()


def _text(out: Any) -> str:
    return str(out.content[0]["text"])


async def _read(tmp_path: Path, name: str, store: Any = None, model: str = VISION, **kw: Any) -> Any:
    store = store or SqliteEventStore(tmp_path / "s.db")
    ctx = ToolContext(
        session_id="s",
        call_id="c",
        cwd=tmp_path,
        attachments=store,
        model=model,
        image_input="vision" in model,
        **kw,
    )
    return await builtin_registry().call("read_image", json.dumps({"file_path": name}), ctx)


@pytest.mark.parametrize(("fmt", "ext", "mime"), [("PNG", "png", "image/png"), ("JPEG", "jpg", "image/jpeg")])
@pytest.mark.parametrize("size", [(1, 1), (64, 48), (2000, 300)])
async def test_a_real_image_is_read_and_stored_once(
    tmp_path: Path, fmt: str, ext: str, mime: str, size: tuple[int, int]
) -> None:
    data = image_bytes(*size, fmt)
    (tmp_path / f"pic.{ext}").write_bytes(data)
    (tmp_path / f"copy.{ext}").write_bytes(data)
    store = JsonlEventStore(tmp_path / "logs")
    out = await _read(tmp_path, f"pic.{ext}", store)
    assert not out.is_error, out
    w, h = size
    assert _text(out) == (
        f"<path>{tmp_path}/pic.{ext}</path>\n<type>image</type>\n<content>\n"
        f"{mime} image, {w}x{h} px, {len(data)} bytes\n</content>"
    )
    assert out.content[1] == {
        "type": "image",
        "attachment": {
            "attachmentId": attachment_id(data), "mediaType": mime, "bytes": len(data),
            "width": w, "height": h, "name": f"pic.{ext}",
        },
    }  # fmt: skip
    assert list(out.content[1]["attachment"]) == [
        "attachmentId",
        "mediaType",
        "bytes",
        "width",
        "height",
        "name",
    ]
    await _read(tmp_path, f"copy.{ext}", store)  # identical bytes: one object
    objects = [p for p in (tmp_path / "logs" / "attachments").rglob("*") if p.is_file()]
    assert [p.name for p in objects] == [attachment_id(data).removeprefix("sha256:")]
    stored = await store.get_attachment(attachment_id(data))
    assert stored is not None and stored.data == data and stored.media_type == mime


async def test_the_original_red_png(tmp_path: Path, upstream: Path) -> None:
    (tmp_path / "red.png").write_bytes((upstream / "read-image" / "workspace" / "red.png").read_bytes())
    out = await _read(tmp_path, "red.png")
    assert out.content[1]["attachment"]["attachmentId"] == (
        "sha256:b1ff9c8ea3a780bad09b346c423d2d0e46815926879b18e841d928376a946640"
    )


def _refusal_cases(tmp: Path) -> list[tuple[str, str, str | None]]:
    (tmp / "wide.png").write_bytes(image_bytes(2001, 1))
    (tmp / "tall.jpg").write_bytes(image_bytes(10, 2500, "JPEG"))
    (tmp / "fake.png").write_bytes(image_bytes(4, 4, "JPEG"))
    (tmp / "broken.png").write_bytes(image_bytes(64, 64)[:60])
    (tmp / "garbage.gif").write_bytes(b"not an image at all")
    (tmp / "empty.webp").write_bytes(b"")
    (tmp / "huge.png").write_bytes(b"\x89PNG" + b"\0" * 3_670_017)
    (tmp / "dir.png").mkdir()
    d = str(tmp)
    side = "at least one image side exceeds the 2000px limit; downscale the image and read the smaller copy"
    return [
        ("wide.png", f'Error: cannot read "{d}/wide.png": {side}', None),
        ("tall.jpg", f'Error: cannot read "{d}/tall.jpg": {side}', None),
        (
            "fake.png",
            f'Error: cannot read "{d}/fake.png": the .png extension declares image/png, but the bytes use a '
            "different image format; rename the file to match its actual format if it is PNG/JPEG/WebP/GIF, "
            "or convert it to one of those formats",
            None,
        ),
        ("broken.png", "Error: Unsupported or malformed image data.", None),
        ("garbage.gif", "Error: Unsupported or malformed image data.", None),
        ("empty.webp", "Error: Image is empty.", None),
        (
            "huge.png",
            f'Error: cannot read "{d}/huge.png": 3670021 bytes exceeds the 3670016-byte limit',
            "FS_TOO_LARGE",
        ),
        ("missing.png", f'Error: cannot read "{d}/missing.png": not found', "FS_NOT_FOUND"),
        ("dir.png", f'Error: cannot read "{d}/dir.png": not a regular file', "FS_NOT_REGULAR_FILE"),
        (
            "notes.txt",
            'Error: cannot read "notes.txt": read_image only accepts PNG/JPEG/WebP/GIF paths',
            None,
        ),
        ("  ", "Error: file_path must be a non-empty string", None),
    ]


async def test_refusals_are_one_clear_error_and_store_nothing(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "s.db")
    for name, text, code in _refusal_cases(tmp_path):
        out = await _read(tmp_path, name, store)
        assert out.is_error and _text(out) == text, name
        assert out.code == code, name
    await store.close()
    import sqlite3

    with sqlite3.connect(tmp_path / "s.db") as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        count = db.execute("SELECT COUNT(*) FROM attachments").fetchone()[0] if "attachments" in tables else 0
    assert count == 0


async def test_a_text_only_model_and_no_store_are_refused_before_the_file_is_touched(tmp_path: Path) -> None:
    out = await _read(tmp_path, "nowhere/red.png", model="deepseek-v4-flash")
    assert _text(out) == (
        'Error: cannot read "nowhere/red.png" as an image: model "deepseek-v4-flash" does not declare image '
        "input; switch to an image-capable model to read images"
    )
    ctx = ToolContext(session_id="s", call_id="c", cwd=tmp_path, model=VISION, image_input=True)
    out = await builtin_registry().call("read_image", '{"file_path": "x.png"}', ctx)
    assert _text(out) == 'Error: cannot read "x.png" as an image: no attachment service is mounted'


async def test_the_image_reaches_a_vision_model_as_an_image_url_and_a_text_model_not(tmp_path: Path) -> None:
    data = image_bytes(3, 2)
    (tmp_path / "shot.png").write_bytes(data)
    args = json.dumps({"file_path": "shot.png"})
    for model_name, takes in ((VISION, True), ("deepseek-chat", False)):
        first = stream_reply(tool_calls=[WireToolCall.split("call_1", "read_image", args, 2)])
        async with OpenAICompatServer([first, stream_reply(text=["ok"])]) as server:
            model = OpenAICompatModel(base_url=server.base_url, api_key="sk-x", idle_timeout=2)
            store = SqliteEventStore(tmp_path / f"{takes}.db")
            config = AgentConfig(model=model_name, retry=NO_DELAY)
            async with await Agent.create(store, model=model, config=config, cwd=tmp_path) as agent:
                assert (await agent.run_turn("look")).ok
            await model.aclose()
            messages = server.bodies[1]["messages"]
        tool, follow = (messages[-2], messages[-1]) if takes else (messages[-1], None)
        assert tool["role"] == "tool"
        if takes:
            assert follow is not None
            assert tool["content"].endswith(f"image/png image, 3x2 px, {len(data)} bytes\n</content>")
            assert follow["content"] == [
                {"type": "text", "text": "Attached image(s) from tool result:"},
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64," + base64.b64encode(data).decode()},
                },
            ]
        else:  # the text route: the call is refused, no image travels
            assert "does not declare image input" in tool["content"]
            assert "image_url" not in json.dumps(messages)


async def test_in_a_scripted_turn_the_result_is_logged_with_the_originals_fields(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(image_bytes(5, 5))
    model = ScriptedModel([tool_call_reply("c1", "read_image", '{"file_path": "a.png"}'), text_reply("seen")])
    store = SqliteEventStore(tmp_path / "s.db")
    async with await Agent.create(
        store, model=model, config=AgentConfig(model=VISION, retry=NO_DELAY), cwd=tmp_path
    ) as agent:
        assert (await agent.run_turn("look")).ok
        result = next(e for e in agent.session.events if e.type == "tool/result")
    block = result.data["message"]["content"][0]["content"][1]
    assert block["attachment"]["attachmentId"].startswith("sha256:") and "error" not in result.data
