"""The recorder of ``dsh serve record``: what it appends for history the client wrote itself."""

from __future__ import annotations

from dsh import jsonx
from dsh.events.chunks import Chunk
from dsh.events.messages import Block, Message
from dsh.model import ModelRequest
from dsh.model.scripted import text_reply
from dsh.serve.recorder import Settled, new_session


def test_history_the_client_wrote_is_logged_in_the_loops_key_order() -> None:
    """An assistant message and a tool result the client sent (no call made them) are logged
    as ``{turn, step, message}``: no ``stream``, the ids the recorder gave them last."""
    session = new_session(None, None)
    result: Block = {"type": "tool-result", "toolCallId": "c0", "content": [], "isError": False}
    messages: list[Message] = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}},
        {"role": "assistant", "content": [{"type": "text", "text": "earlier"}]},
        {"role": "tool", "content": [result], "source": {"kind": "tool"}},
    ]
    chunks: list[Chunk] = text_reply("now")
    settled = Settled(chunks, [0] * (len(chunks) - 1), None, {"inputTokens": 3}, {"prompt_tokens": 3})
    session.add_call(ModelRequest("s", "m", messages), settled)
    logged = [(e.type, list(e.data)) for e in session.closed()]
    assert logged == [
        ("turn/start", ["turn"]),
        ("user/message", ["role", "content", "source", "id"]),
        ("assistant/message", ["turn", "step", "message"]),
        ("tool/result", ["turn", "step", "message"]),
        ("request/header", ["header", "reason"]),
        ("step/start", ["turn", "step"]),
        ("assistant/message", ["turn", "step", "message", "usage", "wireUsage", "stream"]),
        ("step/end", ["turn", "step"]),
        ("turn/end", ["turn", "reason"]),
    ]
    written = session.events[2].data
    assert list(written["message"]) == ["role", "content", "source", "id"]
    assert jsonx.dumps(written["message"]["source"]) == b'{"kind":"model","provider":"client"}'
