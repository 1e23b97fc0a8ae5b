"""A model sends the whole history every call: what it mapped for the last request is reused
for the next, the very same messages only, and the bytes sent are what the mapping gives."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dsh import jsonx
from dsh.events.attachments import Attachment, attachment_id
from dsh.events.messages import Message, assistant_message, tool_result_message, user_message
from dsh.model import openai_wire
from dsh.model.openai_compat import OpenAICompatModel
from dsh.model.openai_wire import WireMemo, request_body, wire_message, wire_messages
from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply

from .conftest import collect, request

PNG = Attachment("image/png", b"\x89PNG not really")


def _image_message() -> Message:
    ref = {"attachmentId": attachment_id(PNG.data), "mediaType": "image/png", "bytes": 15}
    ref |= {"width": 1, "height": 1}
    content: Any = [{"type": "text", "text": "look"}, {"type": "image", "attachment": ref}]
    return {"role": "user", "content": content}


def _history() -> list[Message]:
    return [
        user_message("read a.py"),
        assistant_message(
            [
                {"type": "reasoning", "text": "I should read it."},
                {"type": "tool-call", "id": "c1", "name": "read", "arguments": '{"file_path":"a.py"}'},
            ],
            provider="deepseek",
            model="m",
        ),
        tool_result_message("c1", [{"type": "text", "text": "print(1)"}], is_error=False),
        assistant_message([{"type": "text", "text": "Done"}], provider="deepseek", model="m"),
        _image_message(),  # no image bytes sent: a text note in its place
    ]


def test_the_memo_gives_the_mapping_and_reuses_only_the_messages_it_mapped() -> None:
    memo = WireMemo()
    history = _history()
    first = memo.wire_messages("terse", history[:3])
    assert first == wire_messages("terse", history[:3])
    history.append(user_message("and then?"))
    second = memo.wire_messages("terse", history)
    assert second == wire_messages("terse", history)
    reused = zip(first[1:], second[1:4], strict=True)
    assert all(a is b for a, b in reused), "the same messages, not mapped again"
    copied = [copy.deepcopy(m) for m in history]  # equal messages, other objects: mapped afresh
    third = memo.wire_messages("terse", copied)
    assert third == second and not any(a is b for a, b in zip(second, third, strict=False))


def test_a_request_with_images_is_mapped_whole_and_forgets_the_memo() -> None:
    memo = WireMemo()
    history = _history()
    before = memo.wire_messages(None, history)
    images = {PNG.id: PNG}
    sent = memo.wire_messages(None, history, images)
    assert sent == wire_messages(None, history, images)
    assert sent[-1]["content"][1]["type"] == "image_url", "the bytes sent, not the memo's note"
    after = memo.wire_messages(None, history)
    assert after == before and not any(a is b for a, b in zip(before, after, strict=True))


async def test_a_model_maps_only_what_is_new_and_sends_the_same_bytes(
    server: OpenAICompatServer, model: OpenAICompatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    mapped: list[Message] = []

    def counted(message: Message, images: Any) -> list[dict[str, Any]]:
        mapped.append(message)
        return wire_message(message, images)

    monkeypatch.setattr(openai_wire, "wire_message", counted)
    history = _history()
    by_model: list[Message] = []
    for grown in (history[:2], history):
        server.enqueue(stream_reply(text="ok"))
        sent = request(grown, system="You are terse.")
        mapped.clear()
        await collect(model, sent)
        by_model += mapped
        assert server.requests[-1].body == jsonx.dumps_unchecked(request_body(sent, "test-model"))
    assert by_model == history, "each message mapped once, the second request only the new ones"
