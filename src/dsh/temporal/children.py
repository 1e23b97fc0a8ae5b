"""A delegation call (``subagent``, ``subagent_fork``) as a child workflow: the child stored,
then its answer settled — or, for a background child, its call answered at once.

``start_child`` logs the parent's ``tool/call``, stores the child session (the id derived
from the parent and the call, so a retry finds the same child; a fork child holds the
parent's completed turns, its cut persisted, as ``Agent.fork`` makes it) and logs the
delegated policies in it. A waited-for child's prompt is stored for its turn; the workflow
runs that turn as a child workflow ``dsh-session-<child>`` and ``finish_child`` settles the
parent's call with the child's last answer, or the error text of a turn that did not
complete — the rules of ``dsh.subagents.tools``. A background child is continuable as in
``dsh.subagents``: its descriptor is its first own event, its task its first ``next-turn``
inbox message, and the parent's call is answered ``started subagent <id>`` here; its turns
run in a workflow of its own, and :mod:`dsh.temporal.waking` sends its parent the
settlement notice. A call that cannot delegate (bad arguments, too deep) returns ``None``
and runs as an ordinary tool call, which answers it with the tool's own error.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from dsh.events.attachments import Attachment
from dsh.events.messages import Message, user_message
from dsh.events.vocabulary import TURN_START
from dsh.loop import Agent
from dsh.loop.delegation import log_delegated_policies
from dsh.session import final_assistant_text
from dsh.subagents import delegate, texts
from dsh.subagents.tools import SubagentTool, non_completion_text
from dsh.temporal.recipe import AgentRecipe
from dsh.temporal.refs import CallInput, ChildFinished, ChildStarted, Delegated
from dsh.tools import ToolOutput

CHILD_IDS: Final = uuid.UUID("6b1f3c2e-4d5a-4e8f-9a7b-0c1d2e3f4a5b")
"""The namespace of delegated children's ids: ``uuid5(CHILD_IDS, "<parent>/<call id>")``."""


def child_id(parent: str, call_id: str) -> str:
    """The child session id of ``parent``'s call ``call_id`` (the same on every retry)."""
    return str(uuid.uuid5(CHILD_IDS, f"{parent}/{call_id}"))


def delegates(recipe: AgentRecipe, tool_name: str) -> bool:
    """Whether ``tool_name`` is one of the recipe's delegation tools."""
    return isinstance(recipe.tools.get(tool_name), SubagentTool)


async def start_child(
    recipe: AgentRecipe, call: CallInput, context: list[Message] | None = None
) -> ChildStarted | None:
    """The child of a delegation call, stored and ready for its turn (see the module); what
    the call's hooks give the next step is added to ``context``."""
    async with recipe.agent(call.session_id) as parent:
        stepwise = parent.stepwise()
        block = stepwise.find_block(call.turn, call.step, call.from_seq, call.call_id)
        if block is None:
            return None
        name, arguments = str(block.get("name", "")), str(block.get("arguments", ""))
        prepared = recipe.tools.prepare(name, arguments)
        if isinstance(prepared, ToolOutput) or not isinstance(prepared.tool, SubagentTool):
            return None  # arguments the tool call itself refuses, or not a delegation tool
        tool, args = prepared.tool, prepared.args
        background = tool.in_background(args)
        refused = delegate.refusal(
            background=background,
            background_allowed=tool.background,
            parent_depth=parent.session.header.delegation_depth,
            max_depth=tool.max_depth,
        )
        if refused is not None:
            return None
        if (
            await stepwise.start_call(call.turn, call.step, call.from_seq, call.call_id, context=context)
            is None
        ):
            return None  # its result is logged: nothing left to do
        task = tool.task(args)
        delegated = Delegated(parent.id, call.call_id, task.description, tool.mode, background)
        sid = child_id(parent.id, call.call_id)
        if not await recipe.store.exists(sid):
            await _store_child(parent, tool, sid, delegated, task.prompt)
        if background:
            out = ToolOutput.text(texts.started(sid))
            await stepwise.settle_call(
                call.turn, call.step, call.from_seq, call.call_id, out, context=context
            )
            return ChildStarted(sid, await _turn_seq(recipe, sid), None, delegated)
        prompt_id = await recipe.store.put_attachment(Attachment("text/plain", task.prompt.encode("utf-8")))
        return ChildStarted(sid, await _turn_seq(recipe, sid), prompt_id, delegated)


async def _store_child(
    parent: Agent, tool: SubagentTool[Any], sid: str, delegated: Delegated, task: str
) -> None:
    """The child session as the in-process tool stores it: spawned or forked (the fork rule,
    its cut persisted), its policies logged; a background child's descriptor first and its
    task queued."""
    create = parent.fork if tool.mode == "fork" else parent.spawn
    child = await create(session_id=sid, call_id=delegated.call_id)
    await child.take_lease(wait=5.0)
    try:
        if delegated.continuable:
            child.append(
                *delegate.descriptor_event(
                    continuable=True,
                    mode=tool.mode,
                    label=delegated.label,
                    parent_session=parent.id,
                    call_id=delegated.call_id,
                )
            )
        log_delegated_policies(child, parent.config.sandbox)
        if delegated.continuable:
            child.deliver(user_message(task), "next-turn")
        await child.checkpoint()
    finally:
        await child.aclose()


async def _turn_seq(recipe: AgentRecipe, sid: str) -> int:
    """Where the child's first own turn starts: its logged ``turn/start`` after the cut (a
    retry), else its next seq."""
    loaded = await recipe.store.load(sid)
    own = loaded.own_events
    return next((e.seq for e in own if e.type == TURN_START), len(loaded.events))


async def finish_child(
    recipe: AgentRecipe, finished: ChildFinished, context: list[Message] | None = None
) -> bool:
    """Settle the parent's call with the child's answer (unless a result is logged); what its
    ``PostToolUse`` hooks give the next step is added to ``context``."""
    loaded = await recipe.store.load(finished.child_session)
    text = final_assistant_text(loaded.own_events)
    kind = finished.ending.kind
    out = (
        ToolOutput.text(text)
        if kind == "completed"
        else ToolOutput.error(non_completion_text(kind, text), None)
    )
    call = finished.call
    async with recipe.agent(call.session_id) as parent:
        await parent.stepwise().settle_call(
            call.turn, call.step, call.from_seq, call.call_id, out, context=context
        )
    return True
