"""Every hook event and outcome in a top-level session, with real shell and Python hook scripts."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
from pathlib import Path

import pytest

from dsh.events.chunks import Chunk
from dsh.model.scripted import Call, text_reply, tool_call_reply, tool_calls_reply
from dsh.store.sqlite import SqliteEventStore
from tests.hooks.conftest import command, hooked_agent, of_type, python_hook, result_text, types, write_hooks
from tests.invariants import check_log_invariants
from tests.patience import patience, until

BASH_TOUCH = {"command": "touch ran.txt && echo RAN", "description": "touch"}


def _bash_turn() -> list[list[Chunk]]:
    return [tool_call_reply("call_1", "bash", BASH_TOUCH), text_reply("done")]


# -- PreToolUse --------------------------------------------------------------------------


async def test_pretool_exit_2_denies_with_stderr_and_the_tool_does_not_run(tmp_path: Path) -> None:
    write_hooks(
        tmp_path,
        {"PreToolUse": [{"matcher": "bash", "hooks": [command("echo 'no bash here' >&2; exit 2")]}]},
    )
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    result = await agent.run_turn("go")
    assert result.ok and result.text == "done"
    assert not (tmp_path / "ran.txt").exists()
    events = agent.session.events
    call = next(i for i, e in enumerate(events) if e.type == "tool/call")
    assert [e.type for e in events[call : call + 4]] == [
        "tool/call",
        "hook/invoked",
        "hook/result",
        "tool/result",
    ]
    assert events[call + 1].data == {
        "turn": 1,
        "point": "PreToolUse",
        "dialect": "claude-code",
        "handlerId": "claude-code:PreToolUse:1",
        "matcher": "bash",
    }
    hook_result = dict(events[call + 2].data)
    assert isinstance(hook_result.pop("durationMs"), float)
    assert hook_result == {
        "turn": 1,
        "point": "PreToolUse",
        "handlerId": "claude-code:PreToolUse:1",
        "decision": "block",
        "exitCode": 2,
        "stderrSummary": "no bash here",
    }
    tool_result = events[call + 3]
    assert result_text(tool_result) == "Error: no bash here"
    assert tool_result.data["message"]["content"][0]["isError"] is True
    assert "error" not in tool_result.data
    check_log_invariants(events)


async def test_pretool_exit_2_without_stderr_uses_the_default_text(tmp_path: Path) -> None:
    write_hooks(tmp_path, {"PreToolUse": [{"hooks": [command("exit 2")]}]})
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    await agent.run_turn("go")
    (res,) = of_type(agent.session.events, "tool/result")
    assert result_text(res) == "Error: blocked by PreToolUse hook"
    (invoked,) = of_type(agent.session.events, "hook/invoked")
    assert "matcher" not in invoked.data


async def test_pretool_python_json_deny_overrides_top_level_decision(tmp_path: Path) -> None:
    hook = python_hook(
        tmp_path,
        "deny.py",
        "import json, sys\n"
        "event = json.load(sys.stdin)\n"
        "print(json.dumps({'decision': 'approve', 'hookSpecificOutput': {'hookEventName': 'PreToolUse',"
        " 'permissionDecision': 'deny', 'permissionDecisionReason': 'no ' + event['tool_name']}}))\n",
    )
    write_hooks(tmp_path, {"PreToolUse": [{"matcher": "bash|read", "hooks": [command(hook)]}]})
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    await agent.run_turn("go")
    (res,) = of_type(agent.session.events, "tool/result")
    assert result_text(res) == "Error: no bash"
    (hook_result,) = of_type(agent.session.events, "hook/result")
    assert hook_result.data["decision"] == "deny" and hook_result.data["exitCode"] == 0
    assert not (tmp_path / "ran.txt").exists()


async def test_pretool_output_for_another_event_counts_for_nothing(tmp_path: Path) -> None:
    out = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "deny"}}
    write_hooks(tmp_path, {"PreToolUse": [{"hooks": [command(f"echo '{json.dumps(out)}'")]}]})
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    await agent.run_turn("go")
    assert (tmp_path / "ran.txt").exists()
    (hook_result,) = of_type(agent.session.events, "hook/result")
    assert hook_result.data["decision"] == "pass"


async def test_pretool_allow_runs_the_tool_and_updated_input_is_ignored(tmp_path: Path) -> None:
    out = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {"command": "echo REWRITTEN", "description": "x"},
        }
    }
    write_hooks(
        tmp_path, {"PreToolUse": [{"matcher": "bash", "hooks": [command(f"echo '{json.dumps(out)}'")]}]}
    )
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    await agent.run_turn("go")
    (res,) = of_type(agent.session.events, "tool/result")
    assert result_text(res) == "RAN\n"
    (hook_result,) = of_type(agent.session.events, "hook/result")
    assert hook_result.data["decision"] == "allow"


async def test_pretool_ask_without_an_approval_channel_is_rejected(tmp_path: Path) -> None:
    out = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "ask",
            "permissionDecisionReason": "bash requires manual approval in this session",
        }
    }
    write_hooks(
        tmp_path, {"PreToolUse": [{"matcher": "bash", "hooks": [command(f"echo '{json.dumps(out)}'")]}]}
    )
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    await agent.run_turn("go")
    events = agent.session.events
    call = next(i for i, e in enumerate(events) if e.type == "tool/call")
    assert [e.type for e in events[call : call + 6]] == [
        "tool/call", "hook/invoked", "hook/result", "approval/asked", "approval/decided", "tool/result",
    ]  # fmt: skip
    asked, decided, res = events[call + 3], events[call + 4], events[call + 5]
    assert asked.data["toolName"] == "bash" and asked.data["callId"] == "call_1"
    assert asked.data["reason"] == "bash requires manual approval in this session"
    assert decided.data == {"id": asked.data["id"], "outcome": "rejected"}
    assert result_text(res) == 'Error: the user rejected tool "bash"'
    assert "error" not in res.data
    assert not (tmp_path / "ran.txt").exists()


async def test_codex_ignores_ask(tmp_path: Path) -> None:
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}
    write_hooks(
        tmp_path, {"PreToolUse": [{"hooks": [command(f"echo '{json.dumps(out)}'")]}]}, name="codex-hooks.json"
    )
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    await agent.run_turn("go")
    assert (tmp_path / "ran.txt").exists()
    assert of_type(agent.session.events, "approval/asked") == []


async def test_matchers_select_by_tool_name(tmp_path: Path) -> None:
    write_hooks(
        tmp_path,
        {
            "PreToolUse": [
                {"matcher": "read", "hooks": [command("exit 2")]},  # exact name: not bash
                {"matcher": "^ba", "hooks": [command("echo regex >&2; exit 2")]},  # unanchored regex
                {"matcher": "*", "hooks": [command("true")]},
            ]
        },
    )
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    await agent.run_turn("go")
    invoked = of_type(agent.session.events, "hook/invoked")
    assert [e.data.get("matcher") for e in invoked] == ["^ba", "*"]
    assert [e.data["handlerId"] for e in invoked] == ["claude-code:PreToolUse:1", "claude-code:PreToolUse:2"]
    (res,) = of_type(agent.session.events, "tool/result")
    assert result_text(res) == "Error: regex"


async def test_pretool_fires_before_argument_validation(tmp_path: Path) -> None:
    write_hooks(tmp_path, {e: [{"hooks": [command("true")]}] for e in ("PreToolUse", "PostToolUse")})
    scripts = [tool_call_reply("call_1", "bash", '{"description": "no command"}'), text_reply("done")]
    agent, _ = await hooked_agent(tmp_path, scripts)
    await agent.run_turn("go")
    points = [e.data["point"] for e in of_type(agent.session.events, "hook/invoked")]
    assert points == ["PreToolUse", "PostToolUse"]  # the arguments are checked when the tool runs
    (res,) = of_type(agent.session.events, "tool/result")
    assert result_text(res).startswith("Error: invalid arguments:")


async def test_unknown_tools_fire_no_hooks(tmp_path: Path) -> None:
    write_hooks(tmp_path, {"PreToolUse": [{"hooks": [command("exit 2")]}]})
    agent, _ = await hooked_agent(tmp_path, [tool_call_reply("c", "nope", {}), text_reply("done")])
    await agent.run_turn("go")
    assert of_type(agent.session.events, "hook/invoked") == []


# -- payloads and environment ---------------------------------------------------------------


DUMP = (
    "import json, os, sys\n"
    "raw = sys.stdin.buffer.read()\n"
    "env = {k: v for k, v in os.environ.items()\n"
    "       if k.startswith(('DSH_', 'CLAUDE_')) or k.endswith('_API_KEY')}\n"
    "with open('seen.jsonl', 'a') as f:\n"
    "    f.write(json.dumps({'raw': raw.decode(), 'cwd': os.getcwd(), 'env': env}) + '\\n')\n"
)


def _seen(cwd: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (cwd / "seen.jsonl").read_text().splitlines()]


async def test_claude_payloads_environment_and_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-secret")
    monkeypatch.setenv("DSH_STORE", "sqlite:/tmp/x.db")
    hook = python_hook(tmp_path, "dump.py", DUMP)
    write_hooks(
        tmp_path,
        {
            event: [{"hooks": [command(hook)]}]
            for event in ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
        },
    )
    args = {"command": "echo HI", "description": "hi"}
    agent, _ = await hooked_agent(tmp_path, [tool_call_reply("call_9", "bash", args), text_reply("done")])
    await agent.run_turn("say hi")
    seen = _seen(tmp_path)
    assert all(str(s["raw"]).endswith("\n") for s in seen)
    payloads = [json.loads(str(s["raw"])) for s in seen]
    base = {"session_id": agent.id, "transcript_path": "", "cwd": str(tmp_path)}
    assert payloads == [
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": "say hi"},
        {
            **base,
            "hook_event_name": "PreToolUse",
            "tool_name": "bash",
            "tool_input": args,
            "tool_use_id": "call_9",
        },
        {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "bash",
            "tool_input": args,
            "tool_use_id": "call_9",
            "tool_response": "HI\n",
        },
        {**base, "hook_event_name": "Stop", "stop_hook_active": False},
    ]
    assert list(json.loads(str(seen[0]["raw"]))) == [
        "session_id",
        "transcript_path",
        "cwd",
        "hook_event_name",
        "prompt",
    ]
    for s in seen:
        assert s["cwd"] == str(tmp_path)
        assert s["env"] == {"CLAUDE_PROJECT_DIR": str(tmp_path)}  # no provider key, no DSH_*


async def test_codex_payloads(tmp_path: Path) -> None:
    hook = python_hook(tmp_path, "dump.py", DUMP)
    write_hooks(
        tmp_path,
        {
            event: [{"hooks": [command(hook)]}]
            for event in ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
        },
        name="codex-hooks.json",
    )
    args = {"command": "echo HI", "description": "hi"}
    agent, _ = await hooked_agent(tmp_path, [tool_call_reply("call_9", "bash", args), text_reply("done")])
    await agent.run_turn("say hi")
    seen = _seen(tmp_path)
    assert not any(str(s["raw"]).endswith("\n") for s in seen)
    base = {
        "session_id": agent.id,
        "transcript_path": None,
        "cwd": str(tmp_path),
    }
    extra = {"model": "test-model", "permission_mode": "default", "turn_id": "1"}
    tool = {"tool_name": "bash", "tool_input": {"command": "echo HI"}, "tool_use_id": "call_9"}
    assert [json.loads(str(s["raw"])) for s in seen] == [
        {**base, "hook_event_name": "UserPromptSubmit", **extra, "prompt": "say hi"},
        {**base, "hook_event_name": "PreToolUse", **extra, **tool},
        {**base, "hook_event_name": "PostToolUse", **extra, **tool, "tool_response": "HI\n"},
        {
            **base,
            "hook_event_name": "Stop",
            **extra,
            "stop_hook_active": False,
            "last_assistant_message": None,
        },
    ]
    assert all(s["env"] == {} for s in seen)  # no CLAUDE_PROJECT_DIR for Codex hooks
    assert {e.data["dialect"] for e in of_type(agent.session.events, "hook/invoked")} == {"codex"}


# -- PostToolUse ------------------------------------------------------------------------------


async def test_posttool_context_is_the_next_steps_first_message(tmp_path: Path) -> None:
    out = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "Verified."}}
    write_hooks(
        tmp_path, {"PostToolUse": [{"matcher": "bash", "hooks": [command(f"echo '{json.dumps(out)}'")]}]}
    )
    agent, model = await hooked_agent(tmp_path, _bash_turn())
    await agent.run_turn("go")
    assert (tmp_path / "ran.txt").exists()
    assert types(agent)[types(agent).index("tool/call") :] == [
        "tool/call", "hook/invoked", "hook/result", "tool/result", "step/end",
        "step/start", "user/message", "assistant/message", "step/end", "turn/end",
    ]  # fmt: skip
    (res,) = of_type(agent.session.events, "tool/result")
    assert result_text(res) == "RAN\n" and res.data["message"]["content"][0]["isError"] is False
    context = (
        agent.session.events[types(agent).index("step/start", types(agent).index("tool/result"))].seq + 1
    )
    message = agent.session.events[context].data
    assert message["content"] == [{"type": "text", "text": "Verified."}]
    assert message["source"] == {"kind": "plugin", "plugin": "hooks-claude-code"}
    assert list(message) == ["content", "source", "role", "id"]
    assert model.requests[1].messages[-1]["content"] == message["content"]


async def test_posttool_block_replaces_the_result_and_keeps_its_context(tmp_path: Path) -> None:
    hook = python_hook(
        tmp_path,
        "block.py",
        "import json, sys\n"
        "event = json.load(sys.stdin)\n"
        "reason = 'output withheld: ' + event['tool_response'].strip()\n"
        "context = {'hookEventName': 'PostToolUse', 'additionalContext': 'see the audit log'}\n"
        "print(json.dumps({'decision': 'block', 'reason': reason, 'hookSpecificOutput': context}))\n",
    )
    write_hooks(tmp_path, {"PostToolUse": [{"hooks": [command(hook)]}]})
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    await agent.run_turn("go")
    assert (tmp_path / "ran.txt").exists()  # the tool did run
    (res,) = of_type(agent.session.events, "tool/result")
    assert res.data["message"]["content"][0]["content"] == [{"type": "text", "text": "output withheld: RAN"}]
    assert res.data["message"]["content"][0]["isError"] is True and "error" not in res.data
    injected = [
        e for e in of_type(agent.session.events, "user/message") if e.data["source"]["kind"] == "plugin"
    ]
    assert [e.data["content"][0]["text"] for e in injected] == ["see the audit log"]


async def test_posttool_exit_2_blocks_with_the_default_text(tmp_path: Path) -> None:
    write_hooks(tmp_path, {"PostToolUse": [{"hooks": [command("exit 2")]}]})
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    await agent.run_turn("go")
    (res,) = of_type(agent.session.events, "tool/result")
    assert result_text(res) == "blocked by PostToolUse hook"


async def test_contexts_of_parallel_calls_come_in_model_order(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    hook = python_hook(
        tmp_path,
        "ctx.py",
        "import json, sys, time\n"
        "event = json.load(sys.stdin)\n"
        "path = event['tool_input']['file_path']\n"
        "time.sleep(0.3 if path == 'a.txt' else 0)\n"
        "out = {'hookEventName': 'PostToolUse', 'additionalContext': path}\n"
        "print(json.dumps({'hookSpecificOutput': out}))\n",
    )
    write_hooks(tmp_path, {"PostToolUse": [{"hooks": [command(hook)]}]})
    calls = [Call("c1", "read", {"file_path": "a.txt"}), Call("c2", "read", {"file_path": "hooks.json"})]
    agent, _ = await hooked_agent(tmp_path, [tool_calls_reply(calls), text_reply("done")])
    await agent.run_turn("go")
    injected = [
        e for e in of_type(agent.session.events, "user/message") if e.data["source"]["kind"] == "plugin"
    ]
    assert [[b["text"] for b in e.data["content"]] for e in injected] == [["a.txt"], ["hooks.json"]]


# -- UserPromptSubmit ---------------------------------------------------------------------------


async def test_prompt_block_ends_the_turn_blocked_without_a_step(tmp_path: Path) -> None:
    write_hooks(
        tmp_path,
        {
            "UserPromptSubmit": [
                {"matcher": "[", "hooks": [command("echo 'blocked by policy hook' >&2; exit 2")]}
            ]
        },
    )
    agent, model = await hooked_agent(tmp_path, [])
    result = await agent.run_turn("Delete everything in the repo.")
    assert result.reason == {"kind": "blocked"} and result.ok and result.text == ""
    assert types(agent) == ["turn/start", "hook/invoked", "hook/result", "turn/end"]
    assert agent.session.events[-1].data == {"turn": 1, "reason": {"kind": "blocked"}}
    assert model.calls == 0
    assert agent.session.events[1].data.get("matcher") == "["


async def test_prompt_context_follows_the_prompt_in_the_first_step(tmp_path: Path) -> None:
    out = {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "Today is Friday."}
    }
    write_hooks(tmp_path, {"UserPromptSubmit": [{"hooks": [command(f"echo '{json.dumps(out)}'")]}]})
    agent, model = await hooked_agent(tmp_path, [text_reply("ok")])
    await agent.run_turn("what day is it?")
    assert types(agent)[:7] == [
        "turn/start", "hook/invoked", "hook/result", "step/start", "user/message", "user/message",
        "request/header",
    ]  # fmt: skip
    prompt, context = agent.session.events[4].data, agent.session.events[5].data
    assert prompt["source"] == {"kind": "user"}
    assert context["content"] == [{"type": "text", "text": "Today is Friday."}]
    assert context["source"] == {"kind": "plugin", "plugin": "hooks-claude-code"}
    assert [m["content"][0]["text"] for m in model.requests[0].messages] == [
        "what day is it?",
        "Today is Friday.",
    ]


async def test_codex_plain_stdout_is_prompt_context(tmp_path: Path) -> None:
    write_hooks(
        tmp_path,
        {"UserPromptSubmit": [{"hooks": [command("echo 'plain context'")]}]},
        name="codex-hooks.json",
    )
    agent, _ = await hooked_agent(tmp_path, [text_reply("ok")])
    await agent.run_turn("hi")
    context = agent.session.events[5].data
    assert context["content"] == [{"type": "text", "text": "plain context"}]
    assert context["source"] == {"kind": "plugin", "plugin": "hooks-codex"}


async def test_claude_plain_stdout_is_not_context(tmp_path: Path) -> None:
    write_hooks(tmp_path, {"UserPromptSubmit": [{"hooks": [command("echo 'plain context'")]}]})
    agent, _ = await hooked_agent(tmp_path, [text_reply("ok")])
    await agent.run_turn("hi")
    assert len(of_type(agent.session.events, "user/message")) == 1


# -- Stop -------------------------------------------------------------------------------------


async def test_stop_block_continues_the_turn_with_the_reason(tmp_path: Path) -> None:
    write_hooks(
        tmp_path,
        {
            "Stop": [
                {
                    "matcher": "[",
                    "hooks": [
                        command(
                            "if [ -f .stop_fired ]; then exit 0; else touch .stop_fired;"
                            " echo 'Also say SECOND.' >&2; exit 2; fi"
                        )
                    ],
                }
            ]
        },
    )
    agent, model = await hooked_agent(tmp_path, [text_reply("FIRST"), text_reply("SECOND")])
    result = await agent.run_turn("Say FIRST.")
    assert result.ok and result.text == "SECOND" and result.reason == {"kind": "completed"}
    assert types(agent)[4:] == [
        "assistant/message", "step/end", "hook/invoked", "hook/result",
        "step/start", "user/message", "assistant/message", "step/end", "hook/invoked", "hook/result",
        "turn/end",
    ]  # fmt: skip
    steer = agent.session.events[9].data
    assert steer["content"] == [{"type": "text", "text": "Also say SECOND."}]
    assert steer["source"] == {"kind": "plugin", "plugin": "hooks-claude-code"}
    results = of_type(agent.session.events, "hook/result")
    assert [(r.data["handlerId"], r.data["decision"]) for r in results] == [
        ("claude-code:Stop:1", "block"),
        ("claude-code:Stop:2", "pass"),
    ]
    assert model.requests[1].messages[-1]["content"] == steer["content"]
    check_log_invariants(agent.session.events)


async def test_stop_block_without_a_reason_says_continue(tmp_path: Path) -> None:
    write_hooks(tmp_path, {"Stop": [{"hooks": [command("[ -f .once ] && exit 0; touch .once; exit 2")]}]})
    agent, _ = await hooked_agent(tmp_path, [text_reply("one"), text_reply("two")])
    await agent.run_turn("go")
    steer = of_type(agent.session.events, "user/message")[1]
    assert steer.data["content"] == [{"type": "text", "text": "continue: blocked by Stop hook"}]


async def test_stop_continue_false_is_only_logged(tmp_path: Path) -> None:
    write_hooks(tmp_path, {"Stop": [{"hooks": [command('echo \'{"continue": false, "stopReason": "x"}\'')]}]})
    agent, _ = await hooked_agent(tmp_path, [text_reply("one")])
    result = await agent.run_turn("go")
    assert result.text == "one"
    (hook_result,) = of_type(agent.session.events, "hook/result")
    assert hook_result.data["decision"] == "stop"


async def test_a_stop_hook_that_always_blocks_is_bounded_by_max_steps(tmp_path: Path) -> None:
    write_hooks(tmp_path, {"Stop": [{"hooks": [command("exit 2")]}]})
    agent, _ = await hooked_agent(tmp_path, lambda req, i: text_reply(f"n{i}"))
    agent.config = dataclasses.replace(agent.config, max_steps=3)
    result = await agent.run_turn("go")
    assert result.reason["kind"] == "error" and result.reason["failure"]["code"] == "MAX_STEPS"


# -- failing hooks fail open --------------------------------------------------------------------


async def test_a_hook_sleeping_past_its_timeout_is_killed_and_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hook = command("sleep 600 & echo $! > child.pid; sleep 600; exit 2", timeout=1)
    write_hooks(tmp_path, {"PreToolUse": [{"hooks": [hook]}]})
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    with caplog.at_level(logging.WARNING, logger="dsh.hooks"):
        async with asyncio.timeout(patience(60)):  # ended by the 1 s timeout, not the 600 s sleeps
            result = await agent.run_turn("go")
    assert result.ok and (tmp_path / "ran.txt").exists()  # failed open: the tool ran
    (hook_result,) = of_type(agent.session.events, "hook/result")
    assert hook_result.data["decision"] == "pass" and hook_result.data["timedOut"] is True
    assert "exitCode" not in hook_result.data
    assert hook_result.data["durationMs"] >= 1000
    child = int((tmp_path / "child.pid").read_text())
    await until(lambda: _gone(child), "the hook's child is gone")
    assert "timeout" in caplog.text and "claude-code:PreToolUse:1" in caplog.text


async def test_a_hook_printing_invalid_json_fails_open_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_hooks(tmp_path, {"PreToolUse": [{"hooks": [command('echo \'{"decision": "block",\'')]}]})
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    with caplog.at_level(logging.WARNING, logger="dsh.hooks"):
        await agent.run_turn("go")
    assert (tmp_path / "ran.txt").exists()
    (hook_result,) = of_type(agent.session.events, "hook/result")
    assert hook_result.data["decision"] == "pass" and hook_result.data["exitCode"] == 0
    assert hook_result.data["stdoutSummary"] == '{"decision": "block",'
    assert "not valid JSON" in caplog.text


async def test_other_exit_codes_fail_open_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_hooks(tmp_path, {"PreToolUse": [{"hooks": [command("echo broken >&2; exit 1")]}]})
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    with caplog.at_level(logging.WARNING, logger="dsh.hooks"):
        await agent.run_turn("go")
    assert (tmp_path / "ran.txt").exists()
    (hook_result,) = of_type(agent.session.events, "hook/result")
    assert hook_result.data["decision"] == "pass" and hook_result.data["exitCode"] == 1
    assert hook_result.data["stderrSummary"] == "broken"
    assert "exited with 1" in caplog.text


async def test_long_streams_are_summarized(tmp_path: Path) -> None:
    write_hooks(tmp_path, {"Stop": [{"hooks": [command("printf 'x%.0s' $(seq 700) >&2")]}]})
    agent, _ = await hooked_agent(tmp_path, [text_reply("one")])
    await agent.run_turn("go")
    (hook_result,) = of_type(agent.session.events, "hook/result")
    assert hook_result.data["stderrSummary"] == "x" * 500 + "…"


def _gone(pid: int) -> bool:
    """Whether ``pid`` no longer exists (killed and reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_cancelling_the_turn_kills_a_running_hook(tmp_path: Path) -> None:
    write_hooks(tmp_path, {"PreToolUse": [{"hooks": [command("echo $$ > hook.pid; sleep 600")]}]})
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    task = asyncio.ensure_future(agent.run_turn("go"))
    pidfile = tmp_path / "hook.pid"
    await until(lambda: pidfile.exists() and pidfile.read_text().strip() != "", "the hook started")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pid = int((tmp_path / "hook.pid").read_text())
    await until(lambda: _gone(pid), "the hook is gone")
    assert agent.session.events[-1].data["reason"]["kind"] == "aborted"
    check_log_invariants(agent.session.events)


# -- configuration and logging ------------------------------------------------------------------


async def test_an_invalid_matcher_drops_the_whole_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_hooks(
        tmp_path,
        {
            "UserPromptSubmit": [{"hooks": [command("echo 'must not run' >&2; exit 2")]}],
            "PreToolUse": [{"matcher": "[", "hooks": [command("exit 2")]}],
        },
    )
    agent, _ = await hooked_agent(tmp_path, [text_reply("PONG")])
    with caplog.at_level(logging.WARNING, logger="dsh.hooks"):
        result = await agent.run_turn("ping")
    assert result.text == "PONG"
    assert of_type(agent.session.events, "hook/invoked", "hook/result") == []
    assert "hooks.json" in caplog.text and "'['" in caplog.text


async def test_handler_ids_count_per_dialect_across_points(tmp_path: Path) -> None:
    write_hooks(tmp_path, {e: [{"hooks": [command("true")]}] for e in ("PreToolUse", "PostToolUse", "Stop")})
    write_hooks(tmp_path, {"Stop": [{"hooks": [command("true")]}]}, name="codex-hooks.json")
    agent, _ = await hooked_agent(tmp_path, _bash_turn())
    await agent.run_turn("go")
    ids = [e.data["handlerId"] for e in of_type(agent.session.events, "hook/invoked")]
    assert ids == [
        "claude-code:PreToolUse:1",
        "claude-code:PostToolUse:2",
        "claude-code:Stop:3",
        "codex:Stop:1",
    ]


async def test_user_level_hooks_run_before_the_workspace_ones(tmp_path: Path) -> None:
    from dsh.hooks import HookSet

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    write_hooks(home, {"Stop": [{"matcher": "user", "hooks": [command("true")]}]})
    write_hooks(work, {"Stop": [{"matcher": "workspace", "hooks": [command("true")]}]})
    hooks = HookSet.from_environment({"DSH_HOME": str(home)})
    agent, _ = await hooked_agent(work, [text_reply("one")], hooks=hooks)
    await agent.run_turn("go")
    assert [e.data["matcher"] for e in of_type(agent.session.events, "hook/invoked")] == ["user", "workspace"]


async def test_hook_events_are_stored_and_reload(tmp_path: Path) -> None:
    write_hooks(tmp_path, {"PreToolUse": [{"hooks": [command("exit 2")]}]})
    store = SqliteEventStore(tmp_path / "s.db")
    agent, _ = await hooked_agent(tmp_path, _bash_turn(), store=store)
    await agent.run_turn("go")
    loaded = await store.load(agent.id)
    assert [e.to_wire() for e in loaded.events] == [e.to_wire() for e in agent.session.events]
    await agent.aclose()
    await store.close()


async def test_no_hooks_without_a_hook_set(tmp_path: Path) -> None:
    from dsh.loop import NO_DELAY, Agent, AgentConfig
    from dsh.model.scripted import ScriptedModel
    from dsh.store.memory import MemoryEventStore
    from dsh.tools.registry import builtin_registry

    write_hooks(tmp_path, {"PreToolUse": [{"hooks": [command("exit 2")]}]})
    agent = await Agent.create(
        MemoryEventStore(),
        model=ScriptedModel(_bash_turn()),
        tools=builtin_registry(),
        config=AgentConfig(model="m", retry=NO_DELAY),
        cwd=tmp_path,
    )
    await agent.run_turn("go")
    assert (tmp_path / "ran.txt").exists()
