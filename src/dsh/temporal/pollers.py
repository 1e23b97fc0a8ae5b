"""Who polls a task queue: the identities Temporal lists for its workflow and activity pollers.

The server lists a poller from its last poll until a few minutes after it stopped polling,
so an empty list means that no worker has polled the queue lately (a fresh queue, or one
whose workers are long gone); a worker that died just now is still listed.
"""

from __future__ import annotations

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

KINDS = (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)


async def queue_pollers(client: Client, task_queue: str) -> list[str]:
    """The identities of ``task_queue``'s current pollers (workflow pollers first)."""
    found: list[str] = []
    for kind in KINDS:
        request = DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=task_queue), task_queue_type=kind
        )
        described = await client.workflow_service.describe_task_queue(request)
        found += [poller.identity for poller in described.pollers]
    return found


async def nobody_polls(client: Client, task_queue: str) -> bool:
    """Whether no worker polls ``task_queue`` (a server that does not answer: ``False``,
    nothing is known)."""
    try:
        return not await queue_pollers(client, task_queue)
    except RPCError:
        return False
