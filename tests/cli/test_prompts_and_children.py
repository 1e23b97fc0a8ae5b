"""Empty prompts are refused before anything is created (issue 35, item 12) and a subagent's
session is never resumed as a top-level one (item 13) — through the CLI and the library."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.errors import EmptyPromptError, UsageError
from dsh.events import SessionHeader
from dsh.ids import now_ms
from dsh.loop import Agent, AgentConfig
from dsh.model.scripted import ScriptedModel
from dsh.store.sqlite import SqliteEventStore
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, stream_reply

KEY = "sk-prompt-test-0123456789"
STRIPPED = ("DEEPSEEK_API_KEY", "DSH_API_KEY", "DSH_BASE_URL", "DEEPSEEK_BASE_URL", "DSH_MODEL", "DSH_STORE")


def dsh(cwd: Path, store: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in STRIPPED}
    env.update({"DSH_STORE": f"sqlite:{store}", "DSH_API_KEY": KEY, "NO_COLOR": "1", "PYTHONUTF8": "1"})
    env["XDG_DATA_HOME"] = str(cwd / "data")
    return subprocess.run(
        [sys.executable, "-m", "dsh.cli", *args],
        env=env,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )


def _reply(req: RecordedRequest) -> Response:
    return stream_reply(text="ok")


def _user_texts(req: RecordedRequest) -> list[str]:
    out = []
    for m in req.messages:
        if m.get("role") == "user":
            content = m.get("content")
            parts = content if isinstance(content, list) else []
            out.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in parts))
    return out


# -- item 12: empty prompts ---------------------------------------------------------------------


@pytest.mark.parametrize("prompt", ["", "   ", "\n\t \n"])
def test_dsh_run_refuses_a_blank_prompt_before_creating_anything(prompt: str, tmp_path: Path) -> None:
    store = tmp_path / "store" / "s.db"
    with OpenAICompatServer(handler=_reply) as server:
        done = dsh(tmp_path, store, "run", prompt, "--base-url", server.base_url)
        assert server.requests == []
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("dsh: error: PROMPT is empty"), done.stderr
    assert not store.parent.exists(), "a refused prompt created the store"


def test_a_blank_stdin_prompt_is_refused_and_one_trailing_newline_is_stripped(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with OpenAICompatServer(handler=_reply) as server:
        blank = dsh(tmp_path, store, "run", "-", "--base-url", server.base_url, stdin=" \n\n")
        assert blank.returncode == 2 and blank.stderr.startswith(
            "dsh: error: the prompt read from stdin is empty"
        )
        assert not store.exists() and server.requests == []
        sent = dsh(tmp_path, store, "run", "-", "--base-url", server.base_url, stdin="say hi\n\n")
        assert sent.returncode == 0, sent.stderr
        assert sent.stdout == "ok\n"
        assert _user_texts(server.requests[0])[0] == "say hi\n"  # one newline of the two stripped


def test_dsh_chat_ignores_blank_lines(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with OpenAICompatServer(handler=_reply) as server:
        done = dsh(tmp_path, store, "chat", "--base-url", server.base_url, stdin="   \n\n\t\nhello\n")
        assert done.returncode == 0, done.stderr
        assert len(server.requests) == 1 and _user_texts(server.requests[0])[0] == "hello"


def test_the_library_refuses_a_blank_prompt_with_a_dsh_value_error(tmp_path: Path) -> None:
    async def go() -> None:
        store = SqliteEventStore(tmp_path / "s.db")
        model = ScriptedModel([[]], model="m")
        agent = await Agent.create(store, model=model, cwd=tmp_path, config=AgentConfig(model="m"))
        try:
            for blank in ("", "  \n"):
                with pytest.raises(EmptyPromptError, match="the prompt is empty") as caught:
                    await agent.run_turn(blank)
                assert isinstance(caught.value, ValueError) and isinstance(caught.value, UsageError)
                with pytest.raises(EmptyPromptError):
                    agent.stream(blank)
            assert (await store.load(agent.id)).events == [], "nothing was logged"
            assert model.requests == []
        finally:
            await agent.aclose()
            await store.close()

    asyncio.run(go())


# -- item 13: children are not resumed as top-level sessions ------------------------------------


def _family(store_path: Path, workspace: Path) -> tuple[str, str]:
    """A top-level session and its child in ``workspace``, the child with the latest activity."""

    async def go() -> tuple[str, str]:
        store = SqliteEventStore(store_path)
        try:
            t = now_ms()
            parent = SessionHeader(id="parent-0001", created_at=t - 10_000, cwd=str(workspace))
            child = SessionHeader(
                id="child-0001",
                created_at=t,
                cwd=str(workspace),
                parent_session=parent.id,
                origin="subagent",
                delegation_depth=1,
            )
            await store.create(parent)
            await store.create(child)
            return parent.id, child.id
        finally:
            await store.close()

    return asyncio.run(go())


def test_resuming_a_child_is_refused_with_one_line_naming_its_parent(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    parent, child = _family(store, tmp_path)
    with OpenAICompatServer(handler=_reply) as server:
        for command in ("run", "chat"):
            argv = [command, "go on"] if command == "run" else [command]
            for typed in (child, child[:7]):
                done = dsh(tmp_path, store, *argv, "--resume", typed, "--base-url", server.base_url)
                assert done.returncode == 2, done.stderr
                assert done.stderr.count("\n") == 1, done.stderr
                assert f"session {child} is a subagent of session {parent}" in done.stderr
                assert "send_message" in done.stderr
        assert server.requests == []


def test_continue_never_picks_a_child(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    parent, _child = _family(store, tmp_path)
    with OpenAICompatServer(handler=_reply) as server:
        done = dsh(tmp_path, store, "run", "again", "-c", "--json", "--base-url", server.base_url)
    assert done.returncode == 0, done.stderr
    assert f'"sessionId":"{parent}"' in done.stdout.splitlines()[-1].replace(" ", "")
