"""Delegation's one home: admission (background, depth), depths, the descriptor event."""

from dsh.subagents import delegate


def test_a_child_sits_one_below_its_parent() -> None:
    assert delegate.child_depth(0) == 1
    assert delegate.parent_depth(delegate.child_depth(3)) == 3
    assert delegate.depth_below(4, 2) == 2


def test_admission_refuses_a_disabled_background_before_the_depth() -> None:
    refused = delegate.refusal(background=True, background_allowed=False, parent_depth=5, max_depth=2)
    assert refused == delegate.BACKGROUND_DISABLED


def test_admission_refuses_a_child_deeper_than_max_depth() -> None:
    assert delegate.refusal(background=False, background_allowed=True, parent_depth=1, max_depth=2) is None
    refused = delegate.refusal(background=False, background_allowed=True, parent_depth=2, max_depth=2)
    assert refused == "subagent depth 3 exceeds maxDepth 2"


def test_the_descriptor_event_is_one_shot_or_continuable() -> None:
    kind, data = delegate.descriptor_event(
        continuable=False, mode="fork", label="look", parent_session="p", call_id="c"
    )
    assert kind == "subagent/descriptor"
    assert data == {
        "mode": "one-shot",
        "provider": "fork",
        "label": "look",
        "delegation": {"parentSession": "p", "callId": "c"},
    }
    _, data = delegate.descriptor_event(
        continuable=True, mode="spawn", label="x", parent_session="p", call_id="c"
    )
    assert data["mode"] == "continuable"
