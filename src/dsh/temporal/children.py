"""A foreground ``subagent`` (spawn) call as a child workflow: the child stored, then its answer settled.

``start_child`` logs the parent's ``tool/call``, stores the child session (the id derived
from the parent and the call, so a retry finds the same child), logs the delegated
policies in it and stores its prompt; the workflow then runs the child's turn as a child
workflow ``dsh-session-<child>``; ``finish_child`` settles the parent's call with the
child's last answer, or the error text of a child turn that did not complete — the
rules of ``dsh.subagents.tools``. A background or fork call returns ``None`` and runs as
an ordinary tool call inside its activity.
"""

from __future__ import annotations

import uuid
from typing import Final

from dsh.events.attachments import Attachment
from dsh.events.vocabulary import TURN_START
from dsh.jsonx import JSONDecodeError, loads
from dsh.loop.delegation import log_delegated_policies
from dsh.session import final_assistant_text
from dsh.subagents.tools import SubagentTool, non_completion_text
from dsh.temporal.recipe import AgentRecipe
from dsh.temporal.refs import CallInput, ChildFinished, ChildStarted, Delegated
from dsh.tools import ToolOutput

CHILD_IDS: Final = uuid.UUID("6b1f3c2e-4d5a-4e8f-9a7b-0c1d2e3f4a5b")
"""The namespace of spawned children's ids: ``uuid5(CHILD_IDS, "<parent>/<call id>")``."""


def child_id(parent: str, call_id: str) -> str:
    """The child session id of ``parent``'s call ``call_id`` (the same on every retry)."""
    return str(uuid.uuid5(CHILD_IDS, f"{parent}/{call_id}"))


def _arguments(raw: str) -> dict[str, object]:
    try:
        value = loads(raw) if raw.strip() else {}
    except JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


async def start_child(recipe: AgentRecipe, call: CallInput) -> ChildStarted | None:
    """The child of a foreground spawn call, stored and ready for its turn (see the module)."""
    tool = recipe.tools.get("subagent")
    if not isinstance(tool, SubagentTool) or tool.mode != "spawn":
        return None
    async with recipe.agent(call.session_id) as parent:
        stepwise = parent.stepwise()
        block = stepwise.find_block(call.turn, call.step, call.from_seq, call.call_id)
        args = _arguments(str(block.get("arguments", ""))) if block is not None else {}
        prompt, label = args.get("prompt"), args.get("description")
        depth = parent.session.header.delegation_depth + 1
        if not isinstance(prompt, str) or not prompt.strip() or args.get("run_in_background") is True:
            return None
        if (
            depth > tool.max_depth
            or await stepwise.start_call(call.turn, call.step, call.from_seq, call.call_id) is None
        ):
            return None
        sid = child_id(parent.id, call.call_id)
        if not await recipe.store.exists(sid):
            child = await parent.spawn(session_id=sid, call_id=call.call_id)
            await child.take_lease(wait=5.0)
            try:
                log_delegated_policies(child, parent.config.sandbox)
                await child.checkpoint()
            finally:
                await child.aclose()
        events = (await recipe.store.load(sid)).events
        from_seq = next((e.seq for e in events if e.type == TURN_START), len(events))
        prompt_id = await recipe.store.put_attachment(Attachment("text/plain", prompt.encode("utf-8")))
        delegated = Delegated(parent.id, call.call_id, label if isinstance(label, str) else "", "spawn")
        return ChildStarted(sid, from_seq, prompt_id, delegated)


async def finish_child(recipe: AgentRecipe, finished: ChildFinished) -> bool:
    """Settle the parent's call with the child's answer (unless a result is logged)."""
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
        await parent.stepwise().settle_call(call.turn, call.step, call.from_seq, call.call_id, out)
    return True
