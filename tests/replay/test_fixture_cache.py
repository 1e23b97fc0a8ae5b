"""``dsh_recording`` applies the keyless cache check a scenario item does: a recording whose
request rewrites its prefix fails the test at teardown unless ``input.json`` accepts it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh import Tool, ToolOutput
from dsh.errors import ReplayError
from dsh.snapshot.fixture import Recording
from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response
from dsh.tools.registry import ToolRegistry
from dsh.tools.schema import ToolArgs
from tests.scenario_recipes import call, reply, tool_results


class CityArgs(ToolArgs):
    city: str


class Alerts(Tool[CityArgs]):
    name = "alerts"
    description = "Weather alerts in a city."
    args_model = CityArgs

    async def call(self, args: CityArgs, ctx: object) -> ToolOutput:
        return ToolOutput.text("none")


class Drifting(Tool[CityArgs]):
    """A tool that registers another once it ran: the next request's tool list differs ahead
    of the history (an unstable tool set, what a prefix cache cannot reuse)."""

    name = "get_weather"
    description = "Current weather in a city."
    args_model = CityArgs

    def __init__(self) -> None:
        self.registry: ToolRegistry | None = None

    async def call(self, args: CityArgs, ctx: object) -> ToolOutput:
        if self.registry is not None and "alerts" not in self.registry:
            self.registry.register(Alerts())
        return ToolOutput.text(f"{args.city}: 3C")


def _weather(req: RecordedRequest) -> Response:
    return reply("It is 3C in Oslo.") if tool_results(req) else call("c1", "get_weather", {"city": "Oslo"})


async def _drive(recording: Recording) -> str:
    weather = Drifting()
    agent = await recording.agent(tools=[weather])
    weather.registry = agent.tools
    return (await agent.run_turn("Weather in Oslo?")).text


async def test_a_recording_that_rewrites_its_prefix_fails_unless_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "weather"
    with OpenAICompatServer(handler=_weather) as server:
        monkeypatch.setenv("DSH_API_KEY", "sk-test")
        monkeypatch.setenv("DSH_BASE_URL", server.base_url)
        recording = Recording(directory, "record")
        assert await _drive(recording) == "It is 3C in Oslo."
        assert await recording.finish(passed=True)
    monkeypatch.delenv("DSH_API_KEY")
    monkeypatch.delenv("DSH_BASE_URL")
    replaying = Recording(directory, "replay")
    assert await _drive(replaying) == "It is 3C in Oslo."
    with pytest.raises(ReplayError) as caught:
        await replaying.finish(passed=True)
    assert "the cache prefix broke at: tools" in str(caught.value)
    assert 'accept it in input.json: "cache": {"accept": ["tools"]}' in str(caught.value)
    document = (
        json.loads((directory / "input.json").read_text()) if (directory / "input.json").exists() else {}
    )
    (directory / "input.json").write_text(json.dumps({**document, "cache": {"accept": ["tools"]}}))
    accepted = Recording(directory, "replay")
    assert await _drive(accepted) == "It is 3C in Oslo."
    assert await accepted.finish(passed=True) == []
