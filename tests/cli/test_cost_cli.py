"""Usage and cost per session tree (issue 43): a run with a spawn, a fork and a retried call,
against the local test server reporting usage and cache reads; every surface counts each
model call once, children included."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dsh.testing.server import OpenAICompatServer, RecordedRequest
from dsh.testing.wire import Response, WireToolCall, http_error, stream_reply, wire_usage
from tests.cli.test_run_cli import KEY, dsh

# (prompt, completion, cached) per call: distinct so a call counted twice shows
ROOT_SPAWNS = (1000, 10, 600)
SPAWN = (2000, 20, 0)
ROOT_ANSWERS = (3000, 30, 2500)
ROOT_FORKS = (4000, 40, 3000)
FORK = (5000, 50, 4000)
ROOT_LAST = (6000, 60, 5000)
UNKNOWN = "no-such-model-x1"
CALLS = (ROOT_SPAWNS, SPAWN, ROOT_ANSWERS, ROOT_FORKS, FORK, ROOT_LAST)
SECOND_RUN = (ROOT_FORKS, FORK, ROOT_LAST)


def _reply(call: tuple[int, int, int], **kw: Any) -> Response:
    return stream_reply(usage=wire_usage(call[0], call[1], cached=call[2]), **kw)


def _last_user(req: RecordedRequest) -> str:
    return "<tool>" if req.messages[-1].get("role") == "tool" else req.prompt


class Script:
    """Run 1 (``go``): the root spawns a child, then answers. Run 2 (``fork``, resumed): the
    root forks a child (which inherits turn 1, usage and all), its next call fails once (500),
    then it answers."""

    def __init__(self) -> None:
        self.failed = False

    def __call__(self, req: RecordedRequest) -> Response:
        last = _last_user(req)
        if "Say SPAWN" in last:
            return _reply(SPAWN, text="SPAWN_OK")
        if "Say FORK" in last:
            return _reply(FORK, text="FORK_OK")
        tools = [m for m in req.messages if m.get("role") == "tool"]
        if last == "<tool>" and len(tools) == 1:
            return _reply(ROOT_ANSWERS, text="ROOT_ANSWERED")
        if last == "<tool>":
            if not self.failed:
                self.failed = True
                return http_error(500, "overloaded once")
            return _reply(ROOT_LAST, text="ROOT_DONE")
        if "fork" in last:
            args = json.dumps({"description": "forked", "prompt": "Say FORK"})
            return _reply(ROOT_FORKS, tool_calls=[WireToolCall.split("call_fork", "subagent_fork", args, 2)])
        args = json.dumps({"description": "spawned", "prompt": "Say SPAWN"})
        return _reply(ROOT_SPAWNS, tool_calls=[WireToolCall.split("call_spawn", "subagent", args, 2)])


def _expected(calls: tuple[tuple[int, int, int], ...] = CALLS) -> dict[str, int]:
    return {
        "inputTokens": sum(p - c for p, _, c in calls),
        "outputTokens": sum(o for _, o, _ in calls),
        "cacheReadTokens": sum(c for _, _, c in calls),
        "cacheWriteTokens": 0,
        "reasoningTokens": 0,
    }


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    tmp = tmp_path_factory.mktemp("cost")
    with OpenAICompatServer(handler=Script()) as server:
        first = dsh(tmp, "run", "go", "--json", "--base-url", server.base_url, "--model", "deepseek-chat",
                    DSH_API_KEY=KEY)  # fmt: skip
        assert first.returncode == 0, first.stderr
        root = json.loads(first.stdout.splitlines()[-1])["sessionId"]
        out = dsh(tmp, "run", "fork", "--resume", root, "--json", "--base-url", server.base_url,
                  "--model", "deepseek-chat", DSH_API_KEY=KEY)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return tmp, out


def _root(ran: tuple[Path, Any]) -> str:
    return str(json.loads(ran[1].stdout.splitlines()[-1])["sessionId"])


def _priced(cost: dict[str, Any]) -> None:
    assert cost["unknown"] == [] and isinstance(cost["usd"], float) and cost["usd"] > 0


def test_the_run_json_result_carries_the_trees_tokens_and_cost_once(ran: tuple[Path, Any]) -> None:
    result = json.loads(ran[1].stdout.splitlines()[-1])
    assert result["type"] == "result"
    assert result["tokens"] == _expected(SECOND_RUN), "the run's calls: the root's and the fork's own"
    assert result["calls"] == 4, "three answers and the failed attempt before the retry"
    _priced(result["cost"])


def test_sessions_list_json_has_each_sessions_cost_and_the_trees(ran: tuple[Path, Any]) -> None:
    tmp = ran[0]
    out = dsh(tmp, "sessions", "list", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["id"]: r for r in json.loads(out.stdout)}
    assert len(rows) == 3
    root = rows[_root(ran)]
    assert root["tree"]["tokens"] == _expected() and root["tree"]["sessions"] == 3
    _priced(root["tree"]["cost"])
    own = sum(r["tokens"]["outputTokens"] for r in rows.values())
    assert own == _expected()["outputTokens"], (
        "each session's own calls only: the fork's inherited ones are not its"
    )
    table = dsh(tmp, "sessions", "list")
    assert "cost" in table.stdout.splitlines()[0] and "$" in table.stdout


def test_dsh_log_shows_usage_and_cost_for_the_tree(ran: tuple[Path, Any]) -> None:
    tmp, root = ran[0], _root(ran)
    text = dsh(tmp, "log", root)
    assert text.returncode == 0, text.stderr
    assert "tree: 3 sessions, 7 calls" in text.stdout
    assert "in 21,000 (cache read 15,100, write 0) · out 210" in text.stdout
    lines = [json.loads(line) for line in dsh(tmp, "log", root, "--json").stdout.splitlines()]
    spend = [line for line in lines if line.get("type") == "spend"]
    assert len(spend) == 1 and spend[0]["tokens"] == _expected()
    assert len(spend[0]["sessions"]) == 3
    _priced(spend[0]["cost"])
    root_spend = next(s for s in spend[0]["sessions"] if s["sessionId"] == root)
    assert [c["tokens"]["outputTokens"] for c in root_spend["perCall"]] == [10, 30, 40, 0, 60]
    assert root_spend["perCall"][3]["cost"]["usd"] == 0.0, "the failed attempt: no usage, nothing to price"
    assert [t["tokens"]["outputTokens"] for t in root_spend["perTurn"]] == [40, 100]


def test_dsh_diff_json_and_markdown_carry_tokens_and_cost(ran: tuple[Path, Any]) -> None:
    tmp, root = ran[0], _root(ran)
    out = dsh(tmp, "diff", root, root, "--json")
    assert out.returncode == 0, out.stderr
    spend = json.loads(out.stdout)["spend"]
    assert spend["a"]["tokens"] == _expected() == spend["b"]["tokens"]
    _priced(spend["a"]["cost"])
    md = dsh(tmp, "diff", root, root, "--markdown").stdout
    assert "| tokens in |" in md and "| cost |" in md


def test_an_unknown_model_is_priced_unknown_never_zero(tmp_path: Path) -> None:
    with OpenAICompatServer(handler=lambda r: stream_reply(text="hi", usage=wire_usage(50, 5))) as server:
        out = dsh(tmp_path, "run", "go", "--json", "--base-url", server.base_url, "--model", UNKNOWN,
                  DSH_API_KEY=KEY)  # fmt: skip
    assert out.returncode == 0, out.stderr
    cost = json.loads(out.stdout.splitlines()[-1])["cost"]
    assert cost["usd"] is None and cost["unknown"] and cost["unknown"][0].startswith(UNKNOWN)
    listed = dsh(tmp_path, "sessions", "list")
    assert "unknown" in listed.stdout and "$0.0000" not in listed.stdout


def test_a_price_override_file_prices_a_model_the_table_does_not_know(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": [{"model": UNKNOWN, "input": 1000000, "output": 0}]}))
    with OpenAICompatServer(handler=lambda r: stream_reply(text="hi", usage=wire_usage(3, 5))) as server:
        out = dsh(tmp_path, "run", "go", "--json", "--base-url", server.base_url, "--model", UNKNOWN,
                  DSH_API_KEY=KEY, DSH_PRICES=str(prices))  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1])["cost"] == {"usd": 3.0, "pricedUsd": 3.0, "unknown": []}
    prices.write_text("{not json")
    bad = dsh(tmp_path, "sessions", "list", DSH_PRICES=str(prices))
    assert bad.returncode != 0 and str(prices) in bad.stderr and "Traceback" not in bad.stderr


_PROBE = """import json, sys
from dsh.cli.app import app
try:
    app(["sessions", "list", "--json"], standalone_mode=False)
except SystemExit:
    pass
print(json.dumps("genai_prices" in sys.modules))
"""


def test_a_listing_keeps_each_sessions_cost_so_the_next_one_reads_no_price_table(tmp_path: Path) -> None:
    """The bundled price table costs 0.1–0.2 s to import: a listing keeps each session's cost
    with its digest (under the table's key), so the next listing prints it without the table;
    another override file is another table, and prices again."""
    import sys

    with OpenAICompatServer(handler=lambda _r: _reply(ROOT_ANSWERS, text="ok")) as server:
        ran = dsh(tmp_path, "run", "go", "--json", "--base-url", server.base_url, "--model", "deepseek-chat",
                  DSH_API_KEY=KEY)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    first = dsh(tmp_path, "sessions", "list", "--json")
    assert first.returncode == 0, first.stderr
    priced = json.loads(first.stdout)[0]["cost"]
    assert priced["usd"] is not None and priced["usd"] > 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_STORE"] = f"sqlite:{tmp_path / 's.db'}"
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=60
    )
    assert probe.returncode == 0, probe.stderr
    *listing, imported = probe.stdout.splitlines()
    assert json.loads("\n".join(listing))[0]["cost"] == priced
    assert json.loads(imported) is False, "the kept cost is read, the table never imported"
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": [{"model": "deepseek-chat", "input": 1000, "output": 1000}]}))
    again = dsh(tmp_path, "sessions", "list", "--json", DSH_PRICES=str(prices))
    assert json.loads(again.stdout)[0]["cost"]["usd"] > priced["usd"], "another table prices again"
