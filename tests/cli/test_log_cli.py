"""``dsh log inspect`` run as a subprocess: every upstream fixture, zstd, torn tail, human output, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import zstandard

from .conftest import Dsh, assert_user_error, raw_type_counts

FORK_CHILD = "subagent-fork-in-process/session.1.jsonl"
SPAWN_CHILD = "subagent-spawn-in-process/session.1.jsonl"
KEYS = {
    "path",
    "version",
    "header",
    "isSeeded",
    "inheritedEventCount",
    "eventCount",
    "types",
    "warnings",
    "importProblem",
}


def fixture_logs(upstream: Path) -> list[Path]:
    logs = sorted(upstream.glob("*/session*.jsonl"))
    assert len(logs) >= 10, logs
    return logs


def test_inspect_every_upstream_fixture(dsh_sqlite: Dsh, upstream: Path) -> None:
    logs = fixture_logs(upstream)
    result = dsh_sqlite("log", "inspect", *logs, "--json").ok()
    infos = [json.loads(line) for line in result.stdout.splitlines()]
    seen: dict[str, dict[str, Any]] = {}
    for path, info in zip(logs, infos, strict=True):
        assert set(info) == KEYS
        assert info["path"] == str(path)
        assert info["version"] == 0
        assert info["warnings"] == []
        assert info["importProblem"] is None
        header = info["header"]
        assert header["id"] and "createdAt" in header and "delegationDepth" in header
        assert header["isSeeded"] is info["isSeeded"]
        assert "seedLength" not in header and "version" not in header and "type" not in header
        raw = raw_type_counts(path)
        assert info["types"] == dict(raw), path
        assert list(info["types"]) == sorted(info["types"])
        assert info["eventCount"] == sum(raw.values())
        seen[f"{path.parent.name}/{path.name}"] = info

    fork = seen[FORK_CHILD]
    assert fork["isSeeded"] is True
    assert fork["inheritedEventCount"] == 42
    assert fork["header"] == {
        "id": "ada8966c-9fa3-441b-8721-37ff1e795e6a",
        "createdAt": 1783352137161,
        "cwd": "{{cwd}}",
        "parentSession": "96cf59c9-b347-48b9-b234-a5200913ad05",
        "isSeeded": True,
        "origin": "subagent",
        "delegationDepth": 1,
    }
    spawn = seen[SPAWN_CHILD]
    assert spawn["isSeeded"] is False
    assert spawn["inheritedEventCount"] == 0
    assert spawn["header"]["parentSession"] == "5138ed0d-e86e-4a7d-b75b-803307e92b17"
    for name, info in seen.items():
        if name != FORK_CHILD:
            assert info["isSeeded"] is False and info["inheritedEventCount"] == 0, name
    packed = seen["packed-chunks/session.jsonl"]
    assert packed["types"]["assistant/chunk"] > 100  # mostly packed rows, counted per chunk


def test_inspect_zstd_torn_tail_and_human_output(dsh_sqlite: Dsh, upstream: Path, tmp_path: Path) -> None:
    plain = upstream / FORK_CHILD
    packed = tmp_path / "child.jsonl.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    torn = tmp_path / "torn.jsonl"
    torn.write_text(
        '{"type":"session","version":2,"id":"t1","createdAt":1,"isSeeded":false,"delegationDepth":0}\n'
        '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n'
        '{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}\n'
        '{"type":"turn/sta'
    )
    as_json, human = dsh_sqlite.many(("log", "inspect", packed, torn, "--json"), ("log", "inspect", plain))

    info, torn_info = (json.loads(line) for line in as_json.ok().stdout.splitlines())
    assert info["path"] == str(packed)
    assert info["inheritedEventCount"] == 42 and info["isSeeded"] is True
    assert info["types"] == dict(raw_type_counts(plain))

    out = human.ok().stdout
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
    assert lines["session"] == ["ada8966c-9fa3-441b-8721-37ff1e795e6a"]
    assert lines["cut"][0] == "42"
    assert lines["seeded"] == ["yes"]
    assert lines["session/end-seed"] == ["1"]
    assert lines["assistant/chunk"] == [str(info["types"]["assistant/chunk"])]

    assert torn_info["version"] == 2 and torn_info["eventCount"] == 2
    assert len(torn_info["warnings"]) == 1 and "torn.jsonl" in torn_info["warnings"][0]
    assert as_json.stderr == f"dsh: warning: {torn_info['warnings'][0]}\n"


HEADER_V2 = '{"type":"session","version":2,"id":"s1","createdAt":1,"isSeeded":false,"delegationDepth":0}\n'


def test_inspect_errors_are_one_line(dsh_sqlite: Dsh, tmp_path: Path) -> None:
    cases = {
        "missing.jsonl": (None, "does not exist"),
        "corrupt.jsonl": (
            HEADER_V2 + "{not json\n" + '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n',
            "line 2",
        ),
        "future.jsonl": ('{"type":"session","version":99,"id":"f","createdAt":1}\n', "upgrade dsh"),
    }
    for name, (content, _) in cases.items():
        if content is not None:
            (tmp_path / name).write_text(content)
    results = dsh_sqlite.many(*[("log", "inspect", tmp_path / name) for name in cases])
    for (name, (_, expect)), result in zip(cases.items(), results, strict=True):
        assert_user_error(result, name, expect)
