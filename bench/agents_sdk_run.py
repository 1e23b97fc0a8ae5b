"""Runs ``bench/agents_sdk_workflow.py``'s conversation on a Temporal server, to its answer.

Started by ``bench/temporal_bench.py`` with the Python of the Agents SDK venv, from the
repository root::

    .venv-agents-sdk/bin/python -m bench.agents_sdk_run ADDRESS BASE_URL CONVERSATION.json WORKFLOW_ID

A worker with ``OpenAIAgentsPlugin`` (its model activity uses the Agents SDK's Chat
Completions model on ``BASE_URL``, a dummy key, no retries of its own; tracing off) and the
``bench.bash`` activity runs the workflow ``WORKFLOW_ID`` on its own task queue; the answer
is printed. The caller reads the workflow's history itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import timedelta
from pathlib import Path

from agents import set_tracing_disabled
from agents.models.openai_provider import OpenAIProvider
from openai import AsyncOpenAI
from temporalio.client import Client
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.worker import Worker

from bench.agents_sdk_workflow import Conversation, ConversationWorkflow, ToolSpec, bash


def conversation_from(path: Path) -> Conversation:
    """The :class:`Conversation` a JSON file spells (``tools`` as ``{name, description, parameters}``)."""
    data = json.loads(path.read_text())
    tools = [ToolSpec(t["name"], t.get("description", ""), t.get("parameters", {})) for t in data["tools"]]
    return Conversation(data.get("instructions"), data["input"], tools, data["max_turns"])


def plugin(base_url: str) -> OpenAIAgentsPlugin:
    """The Agents SDK's Temporal plugin, its model the Chat Completions one on ``base_url``."""
    client = AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    provider = OpenAIProvider(openai_client=client, use_responses=False)
    params = ModelActivityParameters(start_to_close_timeout=timedelta(seconds=30))
    return OpenAIAgentsPlugin(model_params=params, model_provider=provider)


async def run(address: str, base_url: str, conversation: Conversation, workflow_id: str) -> str:
    """Runs the conversation as workflow ``workflow_id`` with a worker of its own; its answer."""
    set_tracing_disabled(True)
    client = await Client.connect(address, plugins=[plugin(base_url)])
    queue = f"{workflow_id}-queue"
    async with Worker(client, task_queue=queue, workflows=[ConversationWorkflow], activities=[bash]):
        return await client.execute_workflow(
            ConversationWorkflow.run, conversation, id=workflow_id, task_queue=queue
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("address")
    parser.add_argument("base_url")
    parser.add_argument("conversation", type=Path)
    parser.add_argument("workflow_id")
    args = parser.parse_args()
    conversation = conversation_from(args.conversation)
    print(asyncio.run(run(args.address, args.base_url, conversation, args.workflow_id)))


if __name__ == "__main__":
    main()
