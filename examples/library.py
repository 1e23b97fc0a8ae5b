"""dsh as a library (docs/guide/library.md): a tool, streamed events, a fork, typed messages."""

import asyncio
import os

from dsh import Agent, OpenAICompatModel, TextDelta, ToolCallStarted, open_store, tool


@tool
def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city's name, e.g. Oslo.
    """
    return f"{city}: 3C"


async def main() -> None:
    url = os.environ.get("DSH_BASE_URL", "https://api.deepseek.com")
    model = OpenAICompatModel(base_url=url, api_key=os.environ["DSH_API_KEY"], model="deepseek-chat")
    async with (
        model,
        open_store("sqlite:sessions.db") as store,
        await Agent.create(store, model=model, tools=[get_weather], cwd=".") as agent,
    ):
        async for event in agent.stream("What is the weather in Oslo?"):  # typed events
            if isinstance(event, TextDelta):
                print(event.text, end="", flush=True)
            elif isinstance(event, ToolCallStarted):
                print(f"[{event.name} {event.arguments}]")
        print()
        child = await agent.fork()  # inherits the completed turn; its cut is stored with it
        print("fork:", (await child.run_turn("Repeat the temperature, nothing else.")).text)
        past = await store.load(agent.id)  # past.own_events; past.messages are typed
        for message in past.messages:
            calls = ", ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
            results = ", ".join(r.text for r in message.tool_results)
            print(f"{message.source:>5}: {message.text or calls or results}")


if __name__ == "__main__":
    asyncio.run(main())
