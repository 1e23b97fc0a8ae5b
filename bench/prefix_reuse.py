"""What the cost and cache readers cost: prefix reuse and spend over a long session.

``.venv/bin/python bench/prefix_reuse.py [TURNS]`` (default 500). A scripted model (no
network) answers TURNS turns of a ~60-word prompt with a ~90-word answer through the real
loop into a memory store, usage reported on every call. Then, best of 5 rounds:

- ``tree_reuse``: every request rebuilt as wire bytes (tools, system, history) and compared
  with the one before it (``dsh log --cache``, the replay cache check, ``dsh diff``);
- ``tree_spend``: the timeline fold's per-session ledger (``dsh log``'s usage);
- ``price``: the ledger priced by the bundled ``genai-prices`` table (after a first lookup).

Printed as milliseconds per request. Not a test: nothing asserts a timing.
"""

from __future__ import annotations

import asyncio
import sys
import time

from dsh.loop import NO_DELAY, Agent, AgentConfig
from dsh.model.scripted import ScriptedModel, text_reply
from dsh.replay.reuse import tree_reuse
from dsh.session.prices import PriceTable
from dsh.session.spend import tree_spend
from dsh.store.memory import MemoryEventStore

PROMPT = "Please look at the following note and tell me what matters most. " * 6
ANSWER = "The most important part is the deadline; everything else can wait a little. " * 7


async def _session(turns: int) -> tuple[str, dict[str, object]]:
    store = MemoryEventStore()
    replies = [text_reply(ANSWER, usage={"inputTokens": 100, "outputTokens": 20}) for _ in range(turns)]
    model = ScriptedModel(replies, model="deepseek-chat")
    agent = await Agent.create(store, model=model, config=AgentConfig(model="deepseek-chat", retry=NO_DELAY))
    for _ in range(turns):
        await agent.run_turn(PROMPT)
    await agent.aclose()
    loaded = await store.load(agent.id)
    return agent.id, {agent.id: loaded}


def _best(rounds: int, work: object) -> float:
    assert callable(work)
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    root, sessions = asyncio.run(_session(turns))
    prices = PriceTable()
    spend = tree_spend(sessions, root)  # type: ignore[arg-type]
    prices.cost(spend.ledger)  # the table's first lookup (import and match) is not measured
    reuse = _best(5, lambda: tree_reuse(sessions, root))  # type: ignore[arg-type]
    spent = _best(5, lambda: tree_spend(sessions, root))  # type: ignore[arg-type]
    priced = _best(5, lambda: prices.cost(tree_spend(sessions, root).ledger))  # type: ignore[arg-type]
    requests = len(tree_reuse(sessions, root))  # type: ignore[arg-type]
    print(f"{turns} turns, {requests} requests")
    print(f"tree_reuse: {reuse * 1000:.1f} ms ({reuse * 1000 / requests:.3f} ms per request)")
    print(f"tree_spend: {spent * 1000:.1f} ms ({spent * 1000 / requests:.3f} ms per request)")
    print(f"spend + price: {priced * 1000:.1f} ms")


if __name__ == "__main__":
    main()
