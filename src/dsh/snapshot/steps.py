"""Scenario steps: validating ``input.json`` ops and playing them against live agents.

The ops are the original harness's (its ``input.json`` files run unchanged):

| op | meaning |
|---|---|
| ``initialize`` | accepted, nothing to do |
| ``newSession`` | a new top-level agent; later prompts go to it |
| ``resumeSession`` | (dsh's) the top-level agent's process ends and a new one resumes the session |
| ``newSessionExpectError {additionalDirectories}`` | must be refused: dsh has no extra roots |
| ``prompt {text, child?}`` / ``promptContent {content}`` | one turn, awaited (content: ACP blocks) |
| ``spawnChild {parent?}`` / ``forkChild {parent?}`` | (dsh's) ``Agent.spawn()`` / ``.fork()`` |

dsh's own ops are what ``dsh scenario save`` writes for a session resumed by a second process
and for children started from code: those are numbered 1.. as started, ``prompt {child: N}``
prompts child N, ``parent: N`` starts a child of child N (default: of the top-level session).
| ``promptExpectError {text}`` | the turn must end ``error`` |
| ``promptAndCancel {text, waitForFile?}`` | start; wait for the file (else an open turn); cancel |
| ``cancel {waitForFile?}`` | cancel the running turn |
| ``promptAndWaitForAgentMessage {text, waitForText}`` | start; go on once the agent says exactly that |
| ``waitForFile {path}`` | a cwd-relative file exists |
| ``waitForTurnStart {minimumTurn?}`` | the session started a turn ≥ minimum |
| ``waitForTurnEnd`` | no turn of the session is running |
| ``waitForSubagentTurnEnd {child?, minimumTurn?}`` | child N (creation order) closed turn ≥ minimum |
| ``waitForTitleAfterTurnEnd`` | a ``session/title`` after the last ``turn/end`` |

Waits poll every 10 ms and give up after ``timeout`` seconds (default 10) with a problem
naming the step.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from dsh.errors import ScenarioError, UsageError
from dsh.events.messages import Block, Message
from dsh.hooks import reset_handler_ids
from dsh.ids import new_message_id
from dsh.loop import Agent, Feed, TurnResult
from dsh.loop.prompts import PromptPart, resource_link_text
from dsh.snapshot.progress import Progress
from dsh.store import EventStore
from dsh.tools.images import Image

_TEXT_OPS = frozenset({"prompt", "promptExpectError", "promptAndCancel", "promptAndWaitForAgentMessage"})
_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # op: (required fields, optional fields)
    "initialize": (frozenset(), frozenset({"clientCapabilities", "protocolVersion"})),
    "newSession": (frozenset(), frozenset({"cwd", "mcpServers"})),
    "newSessionExpectError": (frozenset(), frozenset({"additionalDirectories", "cwd"})),
    "resumeSession": (frozenset(), frozenset()),
    "prompt": (frozenset({"text"}), frozenset({"child"})),
    "spawnChild": (frozenset(), frozenset({"parent"})),
    "forkChild": (frozenset(), frozenset({"parent"})),
    "promptContent": (frozenset({"content"}), frozenset()),
    "promptExpectError": (frozenset({"text"}), frozenset()),
    "promptAndCancel": (frozenset({"text"}), frozenset({"waitForFile"})),
    "cancel": (frozenset(), frozenset({"waitForFile"})),
    "promptAndWaitForAgentMessage": (frozenset({"text", "waitForText"}), frozenset()),
    "waitForFile": (frozenset({"path"}), frozenset()),
    "waitForTurnStart": (frozenset(), frozenset({"minimumTurn"})),
    "waitForTurnEnd": (frozenset(), frozenset()),
    "waitForSubagentTurnEnd": (frozenset(), frozenset({"child", "minimumTurn"})),
    "waitForTitleAfterTurnEnd": (frozenset(), frozenset()),
}
OPS = frozenset(_FIELDS)
POLL = 0.01


def validate_steps(steps: object, name: str) -> list[dict[str, Any]]:
    """The steps of ``input.json``, each op known and its fields well-typed."""
    if not isinstance(steps, list):
        raise ScenarioError(f"scenario {name}: input.json needs a 'steps' list")
    for i, step in enumerate(steps):
        op = step.get("op") if isinstance(step, dict) else None
        if op not in _FIELDS:
            known = ", ".join(sorted(_FIELDS))
            raise ScenarioError(f"scenario {name}: steps[{i}] has unknown op {op!r} (known: {known})")
        assert isinstance(step, dict)
        required, optional = _FIELDS[op]
        missing = sorted(required - set(step))
        if missing:
            raise ScenarioError(f"scenario {name}: steps[{i}] {op} needs {', '.join(missing)}")
        if op in _TEXT_OPS and not isinstance(step["text"], str):
            raise ScenarioError(f"scenario {name}: steps[{i}] {op} 'text' must be a string")
        if op == "promptContent" and not isinstance(step["content"], list):
            raise ScenarioError(f"scenario {name}: steps[{i}] promptContent 'content' must be a list")
        if not isinstance(step.get("waitForText", ""), str) or not isinstance(step.get("path", ""), str):
            raise ScenarioError(f"scenario {name}: steps[{i}] {op} has a non-string field")
        for key in ("minimumTurn", "child", "parent"):
            if key in step and (type(step[key]) is not int or step[key] < 1):
                raise ScenarioError(f"scenario {name}: steps[{i}] {op} '{key}' must be a positive integer")
        extra = sorted(set(step) - required - optional - {"op"})
        if extra:
            raise ScenarioError(f"scenario {name}: steps[{i}] {op} has unknown field(s) {', '.join(extra)}")
    return steps


def content_message(blocks: list[Any]) -> Message | list[PromptPart]:
    """What a ``promptContent`` step prompts with: ACP content blocks read as the ACP server
    reads them (``dsh.acp.prompt`` rules: with images, text and image parts whose images the
    agent stores; else one user message). A block that is not a valid image is refused
    (``ScenarioError``)."""
    if not any(isinstance(b, dict) and b.get("type") == "image" for b in blocks):
        content: list[Block] = []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                content.append({"type": "text", "text": str(block.get("text", ""))})
            elif kind == "resource" and isinstance(block.get("resource"), dict):
                content.append({"type": "text", "text": str(block["resource"].get("text", ""))})
            elif kind == "resource_link":
                content.append({"type": "text", "text": str(block.get("uri", ""))})
        return {"content": content, "source": {"kind": "user"}, "role": "user", "id": new_message_id()}
    parts: list[PromptPart] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "resource_link":
            parts.append(resource_link_text(block.get("name"), block.get("uri")))
        elif block.get("type") == "image":
            try:
                data = base64.b64decode(str(block.get("data", "")), validate=True)
                parts.append(Image.from_bytes(data, str(block.get("mimeType", ""))))
            except (ValueError, UsageError) as exc:
                raise ScenarioError(f"promptContent image: {exc}") from exc
    return parts


def _wait_path(step: dict[str, Any], key: str) -> str | None:
    value = step.get(key)
    if isinstance(value, dict):
        value = value.get("path")
    return value if isinstance(value, str) else None


class StepPlayer:
    """Plays a scenario's steps; turns that must not fail and failed waits become problems."""

    def __init__(
        self,
        name: str,
        make_agent: Callable[[], Awaitable[Agent]],
        *,
        store: EventStore,
        feed: Feed,
        cwd: Path,
        timeout: float = 10.0,
    ) -> None:
        self.name = name
        self._make_agent = make_agent
        self._store = store
        self._cwd = cwd
        self._timeout = timeout
        self.agents: list[Agent] = []
        self.children: list[Agent] = []
        """Children the steps started from code (``spawnChild`` / ``forkChild``), in order."""
        self.problems: list[str] = []
        self._tasks: list[tuple[int, asyncio.Task[TurnResult], str]] = []
        self._progress = Progress()
        feed.on_event(self._progress.event)

    async def play(self, steps: list[dict[str, Any]]) -> None:
        try:
            for i, step in enumerate(steps):
                await self._step(i, step)
        finally:
            await self._settle()

    async def _agent(self) -> Agent:
        if not self.agents:
            self.agents.append(await self._make_agent())
        return self.agents[-1]

    async def _step(self, i: int, step: dict[str, Any]) -> None:
        op = step["op"]
        if op == "initialize":
            return
        if op == "newSession":
            self.agents.append(await self._make_agent())
        elif op == "resumeSession":
            await self._resume(i)
        elif op == "newSessionExpectError":
            if not step.get("additionalDirectories"):
                self._problem(i, "newSessionExpectError: dsh accepts this session, the recording refused it")
        elif op in ("spawnChild", "forkChild"):
            parent = await self._child_or_agent(i, step.get("parent"))
            if parent is not None:
                self.children.append(await (parent.fork() if op == "forkChild" else parent.spawn()))
        elif op in ("prompt", "promptContent", "promptExpectError"):
            prompt = content_message(step["content"]) if op == "promptContent" else step["text"]
            target = await self._child_or_agent(i, step.get("child"))
            if target is not None:
                self._judge(i, op, await target.run_turn(prompt))
        elif op in ("promptAndCancel", "promptAndWaitForAgentMessage"):
            agent = await self._agent()
            task = asyncio.create_task(agent.run_turn(step["text"]))
            self._tasks.append((i, task, op))
            if op == "promptAndWaitForAgentMessage":
                want = step["waitForText"]
                said = lambda: self._said(agent.id, want)  # noqa: E731
                await self._until(i, f"an assistant message {want!r}", said, task)
            else:
                await self._until_ready(i, step, agent, task)
                task.cancel()
                await self._reap(i, task, op)
        elif op == "cancel":
            running = [(j, t, o) for j, t, o in self._tasks if not t.done()]
            if running:
                await self._until_ready(i, step, self.agents[-1], running[-1][1])
                running[-1][1].cancel()
        else:
            await self._wait(i, op, step)

    async def _child_or_agent(self, i: int, child: int | None) -> Agent | None:
        """Child ``child`` started by the steps, or (``None``) the top-level session."""
        if child is None:
            return await self._agent()
        if child > len(self.children):
            self._problem(i, f"child {child} was not started (started: {len(self.children)})")
            return None
        return self.children[child - 1]

    async def _resume(self, i: int) -> None:
        """What ``dsh run --resume`` in a second process does: the first process's agent
        ends (its lease released, its jobs stopped), and a new agent with the same tools,
        model and configuration resumes the stored session — logging what a fresh process
        logs at its first call (a ``resume`` request header; hook ids counted from 1)."""
        if not self.agents:
            self._problem(i, "resumeSession: no session to resume")
            return
        old = self.agents[-1]
        await self._settle()
        await old.aclose()
        reset_handler_ids()
        self.agents[-1] = await type(old).resume(
            self._store, old.id, model=old.model, tools=old.tools, config=old.config, feed=old.feed,
            extras=old.extras,
        )  # fmt: skip

    async def _wait(self, i: int, op: str, step: dict[str, Any]) -> None:
        agent = await self._agent()
        if op == "waitForFile":
            path = self._cwd / step["path"]
            await self._until(i, f"file {step['path']}", path.exists)
        elif op == "waitForTurnStart":
            least = step.get("minimumTurn", 1)
            await self._until(i, f"turn {least} to start", lambda: self._started(agent.id) >= least)
        elif op == "waitForTurnEnd":
            for j, task, kind in list(self._tasks):
                if task.get_name() != "reaped":
                    await self._reap(j, task, kind)
            await self._until(i, "the turn to end", lambda: not self._open(agent.id))
        elif op == "waitForSubagentTurnEnd":
            n, least = step.get("child", 1), step.get("minimumTurn", 1)
            done = lambda: self._child_done(agent, n, least)  # noqa: E731
            await self._until_async(i, f"child {n} to end turn {least}", done)
        elif op == "waitForTitleAfterTurnEnd":
            await self._until(i, "a session/title after the last turn/end", lambda: self._titled(agent.id))

    # -- conditions ---------------------------------------------------------------------

    def _said(self, sid: str, text: str) -> bool:
        return self._progress.said(sid, text)

    def _started(self, sid: str) -> int:
        return self._progress.started(sid)

    def _titled(self, sid: str) -> bool:
        """The original's condition: the last ``session/title`` comes after the last ``turn/end``."""
        return self._progress.titled(sid)

    def _open(self, sid: str) -> bool:
        return self._progress.open(sid)

    async def _child_done(self, agent: Agent, n: int, least: int) -> bool:
        children = await self._store.children(agent.id)
        children = sorted(children, key=lambda s: (s.header.created_at, s.header.id))
        if len(children) < n:
            return False
        sid = children[n - 1].header.id
        return not self._open(sid) and any(t >= least for t in self._progress.ended(sid))

    async def _until_ready(
        self, i: int, step: dict[str, Any], agent: Agent, task: asyncio.Task[TurnResult]
    ) -> None:
        path = _wait_path(step, "waitForFile")
        if path is not None:
            await self._until(i, f"file {path}", (self._cwd / path).exists, task)
        else:
            await self._until(i, "an open turn", lambda: self._open(agent.id), task)

    async def _until(
        self, i: int, what: str, ready: Callable[[], bool], task: asyncio.Task[TurnResult] | None = None
    ) -> None:
        async def probe() -> bool:
            return ready()

        await self._until_async(i, what, probe, task)

    async def _until_async(
        self,
        i: int,
        what: str,
        ready: Callable[[], Awaitable[bool]],
        task: asyncio.Task[TurnResult] | None = None,
    ) -> None:
        deadline = time.monotonic() + self._timeout
        while not await ready():
            if task is not None and task.done():
                self._problem(i, f"the turn ended before {what}")
                return
            if time.monotonic() > deadline:
                self._problem(i, f"timed out after {self._timeout:g} s waiting for {what}")
                return
            await asyncio.sleep(POLL)

    # -- turns --------------------------------------------------------------------------

    def _judge(self, i: int, op: str, result: TurnResult) -> None:
        kind = result.reason.get("kind")
        if op == "promptExpectError":
            if kind != "error":
                self._problem(i, f"promptExpectError: the turn ended {kind}, the recording failed")
        elif op == "promptAndCancel":
            if kind != "aborted":
                self._problem(i, f"promptAndCancel: the turn ended {kind} before it was cancelled")
        elif not result.ok:
            failure = result.failure
            if failure and failure["code"] == "REPLAY_DIVERGED":
                return  # the runner reports the divergence itself, with its diff
            detail = f": {failure['code']}: {failure['message']}" if failure else ""
            self.problems.append(f"scenario {self.name}: turn {result.turn} ended {kind}{detail}")

    async def _reap(self, i: int, task: asyncio.Task[TurnResult], op: str) -> None:
        task.set_name("reaped")
        try:
            result = await asyncio.wait_for(asyncio.shield(task), self._timeout)
        except asyncio.CancelledError:
            if not task.cancelled():
                raise  # this runner itself is being cancelled
            return
        except TimeoutError:
            self._problem(i, f"{op}: the turn did not end within {self._timeout:g} s")
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return
        self._judge(i, op, result)

    async def _settle(self) -> None:
        for i, task, op in self._tasks:
            if task.get_name() != "reaped":
                await self._reap(i, task, op)

    def _problem(self, i: int, text: str) -> None:
        self.problems.append(f"scenario {self.name}: steps[{i}] {text}")
