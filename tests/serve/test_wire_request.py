"""replay.wire_request: Chat Completions bodies back to dsh requests, and recordings through the wire."""

from __future__ import annotations

from dsh.events.messages import Message, tool_result_message, user_message
from dsh.events.payloads import RequestHeader
from dsh.model import ModelRequest
from dsh.model.openai_wire import request_body
from dsh.replay.derive import Derived, RecordedCall
from dsh.replay.entries import Entry
from dsh.replay.fidelity import SessionCheck, Tolerances
from dsh.replay.wire_request import read_body, request_from_body, wire_derived

TOOL = {"name": "read", "description": "Read a file.", "parameters": {"type": "object", "properties": {}}}


def test_a_body_maps_back_to_system_history_tools_and_config() -> None:
    body = {
        "model": "m",
        "max_completion_tokens": 99,
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "data"},
        ],
        "tools": [{"type": "function", "function": TOOL}],
    }
    request = request_from_body(body)
    assert (request.system, request.model, request.max_tokens) == ("be brief", "m", 99)
    assert request.tools == [TOOL]
    user, assistant, result = request.messages
    assert user["content"] == [{"type": "text", "text": "ab"}]
    assert assistant["content"] == [{"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}]
    assert result["content"][0]["toolCallId"] == "c1"
    assert result["content"][0]["content"] == [{"type": "text", "text": "data"}]


def test_what_the_wire_cannot_carry_is_lost_on_both_sides() -> None:
    history: list[Message] = [
        user_message("go"),
        {
            "role": "assistant",
            "content": [{"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}],
            "source": {"kind": "model"},
            "id": "m1",
        },
        tool_result_message("c1", [], is_error=True),
    ]
    header: RequestHeader = {"config": {"model": "m"}, "system": "sys", "tools": [{"name": "read"}]}
    calls = [RecordedCall(1, 1, 1, header), RecordedCall(1, 2, 3, header)]
    wired = wire_derived(Derived([Entry("chunks"), Entry("chunks")], calls, list(history)))
    check = SessionCheck("s", "id", wired, version=2, tolerances=Tolerances(), cwd=None)

    def live(messages: list[Message]) -> ModelRequest:
        return request_from_body(
            request_body(ModelRequest("s", "m", messages, "sys", [{"name": "read"}]), "m")
        )

    assert check.check(0, live(history[:1])) is None
    assert check.check(1, live(history)) is None
    other = tool_result_message("c1", [{"type": "text", "text": "other"}], is_error=False)
    found = check.check(1, live([*history[:2], other]))
    assert found is not None and "tool result of call c1" in found.what


def test_a_read_reuses_the_objects_of_the_equal_part_of_the_previous_body() -> None:
    tools = [{"type": "function", "function": TOOL}]
    head = [{"role": "system", "content": "s"}, {"role": "user", "content": "a"}]
    first = read_body({"model": "m", "messages": head, "tools": tools})
    grown = [*head, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    second = read_body({"model": "m", "messages": grown, "tools": [dict(tools[0])]}, first)
    assert second.request.messages[0] is first.request.messages[0]
    assert second.request.tools is first.request.tools
    assert second.request == request_from_body({"model": "m", "messages": grown, "tools": tools})
    changed = [head[0], {"role": "user", "content": "A"}, *grown[2:]]
    third = read_body({"model": "m", "messages": changed}, second)
    assert third.request.messages[0]["content"] == [{"type": "text", "text": "A"}]
    assert third.request.messages[1:] == second.request.messages[1:]
    assert third.request.tools == []
