"""``dsh export otel``: OTLP/JSON files and OTLP/HTTP to a local receiver, by running the CLI."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

from dsh.testing.server import OpenAICompatServer
from tests.cli.conftest import Dsh, assert_user_error
from tests.cli.test_run_cli import KEY, _two_step, dsh
from tests.trace.receiver import otlp_receiver

SCENARIO = Path(__file__).resolve().parents[2] / "src" / "dsh" / "snapshot" / "scenarios" / "subagent-mixed"


def _spans(document: dict[str, object]) -> list[dict[str, object]]:
    return [s for rs in document["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]  # type: ignore[attr-defined]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_stored_session_to_an_otlp_json_file(dsh_sqlite: Dsh, tmp_path: Path, upstream: Path) -> None:
    rec = upstream / "subagent-fork-in-process"
    dsh_sqlite("sessions", "import", rec / "session.jsonl", rec / "session.1.jsonl").ok()
    out = tmp_path / "trace.json"
    result = dsh_sqlite("export", "otel", "96cf", "-o", out).ok()
    assert "wrote 8 spans of 2 session(s)" in result.stderr
    spans = _spans(json.loads(out.read_text()))
    assert {s["traceId"] for s in spans} == {"96cf59c9b34748b9b234a5200913ad05"}
    assert all(len(str(s["spanId"])) == 16 for s in spans)  # hex, the OTLP/JSON mapping (not base64)
    names = [s["name"] for s in spans]
    assert names.count("chat deepseek-v4-flash") == 4 and "execute_tool subagent_fork" in names


def test_a_scenario_directory_to_stdout(dsh_sqlite: Dsh) -> None:
    spans = _spans(dsh_sqlite("export", "otel", SCENARIO).json())
    conversations = {
        a["value"]["stringValue"]
        for s in spans
        for a in s["attributes"]  # type: ignore[attr-defined]
        if a["key"] == "gen_ai.conversation.id"
    }
    assert len(conversations) == 3


def test_otlp_http_to_a_local_receiver_with_headers(dsh_sqlite: Dsh) -> None:
    with otlp_receiver() as got:
        result = dsh_sqlite(
            "export", "otel", SCENARIO, "--endpoint", got.url, "--header", "x-team=agents"
        ).ok()
    assert got.paths == ["/v1/traces"]
    assert got.headers[0]["x-team"] == "agents"
    assert got.span_names().count("invoke_agent dsh") == 2
    assert "sent 12 spans of 3 session(s)" in result.stderr


def test_the_standard_otlp_variables_name_the_endpoint(dsh_sqlite: Dsh) -> None:
    with otlp_receiver() as got:
        dsh_sqlite.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = got.url
        dsh_sqlite.env["OTEL_EXPORTER_OTLP_HEADERS"] = "authorization=Bearer%20abc"
        dsh_sqlite("export", "otel", SCENARIO).ok()
    assert got.paths == ["/v1/traces"] and len(got.span_names()) == 12
    assert got.headers[0]["authorization"] == "Bearer abc"


def test_an_unreachable_endpoint_is_one_line_and_the_file_is_still_written(
    dsh_sqlite: Dsh, tmp_path: Path
) -> None:
    out = tmp_path / "trace.json"
    url = f"http://127.0.0.1:{_closed_port()}"
    result = dsh_sqlite("export", "otel", SCENARIO, "-o", out, "--endpoint", url, "--timeout", "1")
    lines = [line for line in result.stderr.splitlines() if not line.startswith("wrote ")]
    assert result.code == 1 and len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith("dsh: error: the OTLP endpoint") and f"{url}/v1/traces" in lines[0]
    assert len(_spans(json.loads(out.read_text()))) == 12


def test_a_refusing_endpoint_is_an_error(dsh_sqlite: Dsh) -> None:
    with otlp_receiver(status=400) as got:
        result = dsh_sqlite("export", "otel", SCENARIO, "--endpoint", got.url, "--timeout", "2")
    assert_user_error(result, "did not accept")


def test_bad_arguments(dsh_sqlite: Dsh) -> None:
    assert_user_error(dsh_sqlite("export", "otel", SCENARIO, "--header", "novalue"), "--header", "NAME=VALUE")
    assert_user_error(dsh_sqlite("export", "otel", SCENARIO, "--endpoint", "ftp://x"), "--endpoint")
    assert_user_error(dsh_sqlite("export", "otel", "nosuchid"), "nosuchid")


def _run_live(tmp_path: Path, otel: str) -> subprocess.CompletedProcess[str]:
    with OpenAICompatServer(handler=_two_step) as server:
        return dsh(
            tmp_path, "run", "echo something", "--base-url", server.base_url, "--api-key", KEY, "--otel", otel
        )


def test_run_sends_its_spans_as_the_turn_ends(tmp_path: Path) -> None:
    with otlp_receiver() as got:
        out = _run_live(tmp_path, got.url)
    assert out.returncode == 0, out.stderr
    assert got.paths and set(got.paths) == {"/v1/traces"}
    names = got.span_names()
    assert sorted(names) == sorted(
        ["invoke_agent dsh", "chat deepseek-chat", "chat deepseek-chat", "execute_tool bash"]
    )
    ids = [
        s.span_id for r in got.requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans
    ]
    assert len(ids) == len(set(ids)), "no span is sent twice"
    assert KEY not in str(got.requests)


def test_run_goes_on_when_the_collector_is_down(tmp_path: Path) -> None:
    out = _run_live(tmp_path, f"http://127.0.0.1:{_closed_port()}")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "All done.\n"
    warnings = [line for line in out.stderr.splitlines() if line.startswith("dsh: warning:")]
    assert len(warnings) == 1 and "did not accept" in warnings[0] and "Traceback" not in out.stderr
