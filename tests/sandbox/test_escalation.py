"""Per-call escalation (``sandbox_permissions`` + ``justification``) and the approvals that answer it.

Each escalation runs in a real agent (ScriptedModel, real tools, bubblewrap): the log must
hold ``approval/asked`` / ``approval/decided`` between the call and its result, the model
must see the original's texts, and only an ``allowed-once`` answer may touch the file
outside the workspace.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from dsh.events import Event
from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply, tool_call_reply
from dsh.store.memory import MemoryEventStore
from dsh.subagents import standard_tools
from dsh.tools import ToolContext, builtin_registry
from dsh.tools.approval import ApprovalOutcome, ApprovalRequest, FixedApprover
from dsh.tools.sandbox import SandboxPolicy

from .conftest import requires_bwrap, text_of

WHY = "the user asked to write outside the workspace"


class Recording:
    """An approver that answers ``outcome`` and keeps every request it saw."""

    def __init__(self, outcome: ApprovalOutcome = "allowed-once") -> None:
        self.outcome: ApprovalOutcome = outcome
        self.seen: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        self.seen.append(request)
        return self.outcome


class Broken:
    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        raise ConnectionError("the client went away")


async def _turn(
    ws: Path,
    name: str,
    args: dict[str, Any],
    *,
    approver: Any = None,
    policy: SandboxPolicy | None = None,
    approval_policy: Any = None,
) -> tuple[str, list[Event]]:
    model = ScriptedModel([tool_call_reply("call_1", name, args), text_reply("done")])
    config = AgentConfig(
        model="m",
        retry=NO_DELAY,
        sandbox=policy if policy is not None else SandboxPolicy(temp_roots=()),
        approver=approver,
        approval_policy=approval_policy,
    )
    agent = await Agent.create(
        MemoryEventStore(), model=model, tools=builtin_registry(max_inline_bytes=None), config=config, cwd=ws
    )
    assert (await agent.run_turn("go")).ok
    result = next(e for e in agent.session.events if e.type == "tool/result")
    [block] = result.data["message"]["content"]
    return "".join(b["text"] for b in block["content"]), list(agent.session.events)


def _bash(out: Path, **extra: Any) -> dict[str, Any]:
    return {
        "command": f"echo hi > {out}/escalated && cat {out}/escalated",
        "description": "write out",
        **extra,
    }


def _approval_rows(events: Sequence[Event]) -> list[tuple[str, dict[str, Any]]]:
    call = next(i for i, e in enumerate(events) if e.type == "tool/call")
    rows = []
    for event in events[call + 1 :]:
        if event.type == "tool/result":
            break
        data = dict(event.data)
        data.pop("id", None)
        rows.append((event.type, data))
    return rows


@requires_bwrap
async def test_an_approved_bash_escalation_runs_once_outside_the_workspace(base: Path) -> None:
    ws, out = base / "ws", base / "outside"
    approver = Recording()
    text, events = await _turn(
        ws, "bash", _bash(out, sandbox_permissions="danger-full-access", justification=WHY), approver=approver
    )
    assert text == "hi\n" and (out / "escalated").read_text() == "hi\n"
    reason = f"escalate sandbox to danger-full-access: {WHY}"
    assert _approval_rows(events) == [
        ("approval/asked", {"toolName": "bash", "callId": "call_1", "reason": reason}),
        ("approval/decided", {"outcome": "allowed-once"}),
    ]
    asked, decided = (e for e in events if e.type.startswith("approval/"))
    assert asked.data["id"] == decided.data["id"]
    [request] = approver.seen
    assert (request.tool_name, request.call_id, request.reason, request.scope) == (
        "bash",
        "call_1",
        reason,
        "sandbox:danger-full-access",
    )


@requires_bwrap
async def test_the_same_command_without_escalation_is_denied_by_the_kernel(base: Path) -> None:
    ws, out = base / "ws", base / "outside"
    text, events = await _turn(ws, "bash", _bash(out), approver=Recording())
    assert "Read-only file system" in text and not (out / "escalated").exists()
    assert _approval_rows(events) == []


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        ("rejected", 'Error: the user rejected escalating this command to "danger-full-access"'),
        ("cancelled", 'Error: approval for escalating to "danger-full-access" was cancelled'),
        (
            "unavailable",
            'Error: sandbox escalation to "danger-full-access" requires approval, but no approval channel '
            "is available",
        ),
    ],
)
async def test_an_escalation_not_allowed_does_not_run(
    base: Path, outcome: ApprovalOutcome, expected: str
) -> None:
    ws, out = base / "ws", base / "outside"
    args = _bash(out, sandbox_permissions="danger-full-access", justification=WHY)
    text, events = await _turn(ws, "bash", args, approver=FixedApprover(outcome))
    assert text == expected and not (out / "escalated").exists()
    assert [t for t, _ in _approval_rows(events)] == ["approval/asked", "approval/decided"]
    assert _approval_rows(events)[1][1] == {"outcome": outcome}
    result = next(e for e in events if e.type == "tool/result")
    assert "error" not in result.data  # a plain error, as in the original


async def test_no_approver_fails_closed_and_a_failing_one_is_unavailable(base: Path) -> None:
    ws, out = base / "ws", base / "outside"
    args = _bash(out, sandbox_permissions="danger-full-access", justification=WHY)
    for approver in (None, Broken()):
        text, events = await _turn(ws, "bash", args, approver=approver)
        assert "requires approval, but no approval channel is available" in text
        assert _approval_rows(events)[1][1] == {"outcome": "unavailable"}
    assert not (out / "escalated").exists()


async def test_policy_never_rejects_without_asking_the_approver(base: Path) -> None:
    ws, out = base / "ws", base / "outside"
    approver = Recording()
    args = _bash(out, sandbox_permissions="danger-full-access", justification=WHY)
    text, events = await _turn(ws, "bash", args, approver=approver, approval_policy="never")
    assert text == 'Error: the user rejected escalating this command to "danger-full-access"'
    assert approver.seen == [] and _approval_rows(events)[1][1] == {"outcome": "rejected"}


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            {"sandbox_permissions": "danger-full-access"},
            "Error: invalid escalation: sandbox_permissions requires a justification",
        ),
        (
            {"justification": WHY},
            "Error: invalid escalation: justification is only valid together with sandbox_permissions",
        ),
        (
            {"sandbox_permissions": "danger-full-access", "justification": "  "},
            "Error: invalid justification: expected a non-empty sentence",
        ),
        (
            {"sandbox_permissions": "workspace-write", "justification": WHY},
            'Error: sandbox escalation to "workspace-write" is not strictly wider than this call\'s current '
            '"workspace-write" mode',
        ),
        ({"sandbox_permissions": "read-only", "justification": WHY}, "Error: invalid arguments: "),
    ],
)
async def test_malformed_escalations_are_refused_before_asking(
    base: Path, extra: dict[str, Any], expected: str
) -> None:
    ws, out = base / "ws", base / "outside"
    approver = Recording()
    text, events = await _turn(ws, "bash", _bash(out, **extra), approver=approver)
    assert text.startswith(expected) and approver.seen == [] and _approval_rows(events) == []
    assert not (out / "escalated").exists()


async def test_read_only_may_escalate_to_workspace_write_but_full_access_cannot_escalate(
    tmp_path: Path,
) -> None:
    args = {"file_path": "new.txt", "content": "x\n"}
    escalated = {**args, "sandbox_permissions": "workspace-write", "justification": WHY}
    text, _ = await _turn(
        tmp_path, "write", escalated, approver=Recording(), policy=SandboxPolicy(mode="read-only")
    )
    assert "Created file" in text and (tmp_path / "new.txt").exists()
    full = SandboxPolicy(mode="danger-full-access")
    text, _ = await _turn(
        tmp_path, "write", {**escalated, "file_path": "b.txt"}, approver=Recording(), policy=full
    )
    assert text == (
        'Error: sandbox escalation to "workspace-write" is not strictly wider than this call\'s current '
        '"danger-full-access" mode'
    )


async def test_a_write_outside_the_workspace_is_denied_then_escalated(base: Path) -> None:
    ws, out = base / "ws", base / "outside"
    target = str(out / "note.md")
    text, _ = await _turn(ws, "write", {"file_path": target, "content": "x\n"}, approver=Recording())
    assert text.startswith(
        "Error: [sandbox: file access denied under workspace-write mode]\n[sandbox: escalation"
    )
    assert not (out / "note.md").exists()
    args = {
        "file_path": target,
        "content": "x\n",
        "sandbox_permissions": "danger-full-access",
        "justification": WHY,
    }
    cases: tuple[tuple[ApprovalOutcome, bool], ...] = (("rejected", False), ("allowed-once", True))
    for outcome, written in cases:
        text, events = await _turn(ws, "write", args, approver=FixedApprover(outcome))
        assert (out / "note.md").exists() is written, text
        assert _approval_rows(events)[0][1]["toolName"] == "write"
    assert text == f"<path>{target}</path>\n<type>file</type>\n<content>\nCreated file\n</content>"


async def test_an_edit_escalation_rejected_says_operation(base: Path) -> None:
    ws, out = base / "ws", base / "outside"
    args = {
        "file_path": str(out / "target.txt"),
        "old_string": "original",
        "new_string": "changed",
        "sandbox_permissions": "danger-full-access",
        "justification": WHY,
    }
    text, _ = await _turn(ws, "edit", args, approver=FixedApprover("rejected"))
    assert text == 'Error: the user rejected escalating this operation to "danger-full-access"'
    assert (out / "target.txt").read_text() == "original\n"


async def test_without_an_approval_service_the_tool_says_so(tmp_path: Path) -> None:
    registry = builtin_registry(max_inline_bytes=None)
    ctx = ToolContext(session_id="s", call_id="c", cwd=tmp_path, sandbox=SandboxPolicy())
    args = {"file_path": "a.txt", "content": "x"}
    args |= {"sandbox_permissions": "danger-full-access", "justification": "j"}
    output = await registry.call("write", json.dumps(args), ctx)
    assert text_of(output) == (
        'Error: sandbox escalation to "danger-full-access" requires approval, '
        "but no approval service is composed"
    )


async def test_a_subagent_cannot_widen_its_parents_policy(base: Path) -> None:
    """The child shares the parent's policy; its approvals are ``never`` (it is delegated),
    so its escalation is rejected without asking, even with an approver that allows all."""
    ws, out = base / "ws", base / "outside"
    approver = Recording()
    child_call = _bash(out, sandbox_permissions="danger-full-access", justification=WHY)
    model = ScriptedModel(
        [
            tool_call_reply("p1", "subagent", {"description": "escalate", "prompt": "write outside"}),
            tool_call_reply("c1", "bash", child_call),
            text_reply("child done"),
            text_reply("parent done"),
        ]
    )
    config = AgentConfig(model="m", retry=NO_DELAY, sandbox=SandboxPolicy(temp_roots=()), approver=approver)
    store = MemoryEventStore()
    agent = await Agent.create(store, model=model, tools=standard_tools(), config=config, cwd=ws)
    assert (await agent.run_turn("go")).ok
    [child] = await store.children(agent.id)
    events = (await store.load(child.header.id)).events
    result = next(e for e in events if e.type == "tool/result")
    assert "the user rejected escalating this command" in str(result.data)
    assert _approval_rows(events)[1][1] == {"outcome": "rejected"}
    assert approver.seen == [] and not (out / "escalated").exists()
