"""A child's kind: the default (``spawn``) applied in one place, for every reader."""

from dsh.events.descriptor import SubagentDescriptor, kind_or_default


def test_a_child_kind_defaults_to_spawn_once() -> None:
    assert kind_or_default(None) == kind_or_default("") == "spawn"
    assert kind_or_default("fork") == "fork"
    assert SubagentDescriptor("one-shot", None, None, None, None).provider_kind == "spawn"
    assert SubagentDescriptor("one-shot", "fork", None, None, None).provider_kind == "fork"
