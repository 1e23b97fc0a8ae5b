"""OpenTelemetry GenAI spans planned from logs, through the SDK's in-memory exporter."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from dsh.cli.runs import scenario_tree
from dsh.events.vocabulary import ASSISTANT_MESSAGE, TOOL_CALL, TOOL_RESULT, TURN_END, TURN_START
from dsh.store import LoadedSession
from dsh.trace import PlanOptions, emit, plan_spans
from dsh.trace.plan import plan_of

SCENARIOS = Path(__file__).resolve().parents[2] / "src" / "dsh" / "snapshot" / "scenarios"
GOLDEN = Path(__file__).parent / "golden"


def exported(sessions: dict[str, LoadedSession], root: str, *, content: bool = False) -> list[ReadableSpan]:
    sink = InMemorySpanExporter()
    assert emit(plan_spans(sessions, root, PlanOptions(content=content)), sink)
    return list(sink.get_finished_spans())


def by_op(spans: list[ReadableSpan], op: str) -> list[ReadableSpan]:
    return [s for s in spans if (s.attributes or {}).get("gen_ai.operation.name") == op]


def own(sessions: dict[str, LoadedSession], etype: str) -> int:
    return sum(1 for s in sessions.values() for e in s.own_events if e.type == etype)


@pytest.mark.parametrize("name", ["subagent-mixed", "subagent-fork", "subagent-spawn"])
def test_one_span_per_turn_model_call_and_tool_call(name: str) -> None:
    root, sessions = scenario_tree(SCENARIOS / name)
    spans = exported(sessions, root)
    assert len(by_op(spans, "invoke_agent")) == own(sessions, TURN_START) == own(sessions, TURN_END)
    assert len(by_op(spans, "chat")) == own(sessions, ASSISTANT_MESSAGE)
    assert len(by_op(spans, "execute_tool")) == own(sessions, TOOL_CALL)
    assert {s.context.trace_id for s in spans} == {int(root.replace("-", ""), 16)}
    for span in by_op(spans, "chat"):
        attrs = span.attributes or {}
        assert span.kind is SpanKind.CLIENT and span.name == f"chat {attrs['gen_ai.request.model']!s}"
        assert isinstance(attrs["gen_ai.usage.input_tokens"], int)
        assert isinstance(attrs["gen_ai.usage.output_tokens"], int)
        assert attrs["gen_ai.response.finish_reasons"] in (("stop",), ("tool_calls",))


def test_children_hang_under_the_subagent_call_that_started_them() -> None:
    root, sessions = scenario_tree(SCENARIOS / "subagent-mixed")
    spans = exported(sessions, root)
    ids = {s.context.span_id: s for s in spans}
    children = [sid for sid in sessions if sid != root]
    assert len(children) == 2
    kinds = set()
    for child in children:
        turns = [
            s for s in by_op(spans, "invoke_agent") if (s.attributes or {})["gen_ai.conversation.id"] == child
        ]
        assert turns
        for turn in turns:
            assert turn.parent is not None
            tool = ids[turn.parent.span_id]
            assert (tool.attributes or {})["gen_ai.operation.name"] == "execute_tool"
            assert (tool.attributes or {})["gen_ai.tool.name"] in ("subagent", "subagent_fork")
            assert (tool.attributes or {})["gen_ai.conversation.id"] == root
            attrs = turn.attributes or {}
            kinds.add(attrs["dsh.child.kind"])
            if attrs["dsh.child.kind"] == "fork":
                assert attrs["dsh.fork.cut"] == sessions[child].inherited_event_count > 0
    assert kinds == {"spawn", "fork"}
    assert {(s.attributes or {})["gen_ai.conversation.id"] for s in spans} == set(sessions)


def test_span_times_are_the_logged_times() -> None:
    root, sessions = scenario_tree(SCENARIOS / "subagent-spawn")
    spans = exported(sessions, root)
    events = sessions[root].own_events
    start = next(e for e in events if e.type == TURN_START)
    end = next(e for e in events if e.type == TURN_END)
    turn = next(
        s for s in by_op(spans, "invoke_agent") if (s.attributes or {})["gen_ai.conversation.id"] == root
    )
    assert (turn.start_time, turn.end_time) == (start.time * 1_000_000, end.time * 1_000_000)


def test_golden_span_tree_of_a_spawn_and_fork_run() -> None:
    root, sessions = scenario_tree(SCENARIOS / "subagent-mixed")
    tree = "".join(f"{'  ' * depth}{name}\n" for depth, name in plan_of(plan_spans(sessions, root)))
    assert tree == (GOLDEN / "subagent-mixed.spans.txt").read_text(encoding="utf-8")


def test_ids_are_stable_across_exports() -> None:
    root, sessions = scenario_tree(SCENARIOS / "subagent-mixed")
    first = [(s.context.span_id, s.parent.span_id if s.parent else None) for s in exported(sessions, root)]
    again = [(s.context.span_id, s.parent.span_id if s.parent else None) for s in exported(sessions, root)]
    assert first == again and len(set(first)) == len(first)


def test_content_only_when_asked() -> None:
    root, sessions = scenario_tree(SCENARIOS / "tool-call-turn")
    plain = exported(sessions, root)
    assert not any(
        k.startswith(("gen_ai.output", "gen_ai.tool.call.arg", "gen_ai.tool.call.res"))
        for s in plain
        for k in (s.attributes or {})
    )
    rich = exported(sessions, root, content=True)
    keys = Counter(k for s in rich for k in (s.attributes or {}))
    assert keys["gen_ai.output.messages"] == len(by_op(rich, "chat"))
    assert (
        keys["gen_ai.tool.call.arguments"]
        == keys["gen_ai.tool.call.result"]
        == len(by_op(rich, "execute_tool"))
    )


def _cut_after(loaded: LoadedSession, etype: str, nth: int = 1) -> LoadedSession:
    seen = 0
    for i, event in enumerate(loaded.events):
        seen += event.type == etype
        if seen == nth:
            events = list(loaded.events[: i + 1])
            return LoadedSession(loaded.header, loaded.inherited_event_count, events)
    raise AssertionError(f"no {etype}")


def test_an_open_turn_is_exported_up_to_its_last_event_and_marked_open() -> None:
    root, sessions = scenario_tree(SCENARIOS / "tool-call-turn")
    sessions[root] = _cut_after(sessions[root], TOOL_CALL)  # the log ends before the result
    spans = exported(sessions, root)
    assert [s.name.split()[0] for s in spans] == ["invoke_agent", "chat", "execute_tool"]
    turn, chat, tool = spans
    assert (turn.attributes or {}).get("dsh.span.open") is True
    assert (tool.attributes or {}).get("dsh.span.open") is True
    assert (chat.attributes or {}).get("dsh.span.open") is None  # the model call settled
    assert turn.end_time == sessions[root].events[-1].time * 1_000_000


def test_upstream_fork_recording(upstream: Path) -> None:
    root, sessions = scenario_tree(upstream / "subagent-fork-in-process")
    spans = exported(sessions, root)
    assert len(by_op(spans, "chat")) == own(sessions, ASSISTANT_MESSAGE)
    child = next(s for s in sessions if s != root)
    fork_turns = [
        s for s in by_op(spans, "invoke_agent") if (s.attributes or {})["gen_ai.conversation.id"] == child
    ]
    assert fork_turns and all((s.attributes or {})["dsh.fork.cut"] == 42 for s in fork_turns)
    assert {(s.attributes or {})["gen_ai.provider.name"] for s in spans} == {"deepseek"}


def test_a_failed_tool_result_is_an_error_span() -> None:
    root, sessions = scenario_tree(SCENARIOS / "tool-call-turn")
    assert all(
        s.status.status_code is StatusCode.UNSET for s in by_op(exported(sessions, root), "execute_tool")
    )
    loaded = sessions[root]
    failed = []
    for event in loaded.events:
        if event.type == TOOL_RESULT:
            message = dict(event.data["message"])
            message["content"] = [{**message["content"][0], "isError": True}]
            event = dataclasses.replace(event, data={**event.data, "message": message}, data_json=None)
        failed.append(event)
    sessions[root] = LoadedSession(loaded.header, loaded.inherited_event_count, failed)
    tools = by_op(exported(sessions, root), "execute_tool")
    assert tools and all(s.status.status_code is StatusCode.ERROR for s in tools)
    assert all((s.attributes or {})["error.type"] == "tool_error" for s in tools)


def test_chat_spans_carry_the_calls_cost_and_none_for_an_unknown_model() -> None:
    from decimal import Decimal

    from dsh.session.prices import Override, PriceTable
    from dsh.session.usage import Tokens

    root, sessions = scenario_tree(SCENARIOS / "subagent-spawn")
    chats = by_op(exported(sessions, root), "chat")
    model = str((chats[0].attributes or {})["gen_ai.request.model"])
    one = Decimal(1_000_000)
    table = PriceTable((Override(model, None, one, one, one, one),))
    sink = InMemorySpanExporter()
    assert emit(plan_spans(sessions, root, PlanOptions(prices=table)), sink)
    for span in by_op(list(sink.get_finished_spans()), "chat"):
        attrs = span.attributes or {}
        tokens = int(attrs["gen_ai.usage.input_tokens"]) + int(attrs["gen_ai.usage.output_tokens"])  # type: ignore[arg-type]
        assert attrs["dsh.cost.usd"] == str(table.price((model, None), Tokens(tokens)).usd) == f"{tokens}"
    renamed = {
        sid: dataclasses.replace(
            loaded,
            events=[
                dataclasses.replace(
                    e, data={**e.data, "header": {**e.data["header"], "config": {"model": "nope-x1"}}}
                )
                if e.type == "request/header"
                else e
                for e in loaded.events
            ],
        )
        for sid, loaded in sessions.items()
    }
    sink = InMemorySpanExporter()
    assert emit(plan_spans(renamed, root, PlanOptions(prices=PriceTable())), sink)
    unpriced = by_op(list(sink.get_finished_spans()), "chat")
    assert unpriced and all("dsh.cost.usd" not in (s.attributes or {}) for s in unpriced), "unknown: no 0"
