"""``run_scenario``'s public signature stays as it was when it was split into phases (new
parameters only keyword-only with a default)."""

from __future__ import annotations

import inspect

from dsh.snapshot import run_scenario


def test_run_scenario_signature_is_unchanged() -> None:
    shown = [
        (p.name, p.kind.name, "" if p.default is inspect.Parameter.empty else repr(p.default))
        for p in inspect.signature(run_scenario).parameters.values()
    ]
    assert shown == [
        ("directory", "POSITIONAL_OR_KEYWORD", ""),
        ("mode", "POSITIONAL_OR_KEYWORD", "'replay'"),
        ("factory", "KEYWORD_ONLY", shown[2][2]),
        ("store", "KEYWORD_ONLY", "None"),
        ("feed", "KEYWORD_ONLY", "None"),
        ("record_model", "KEYWORD_ONLY", "None"),
        ("model_name", "KEYWORD_ONLY", "None"),
        ("sliced", "KEYWORD_ONLY", "True"),
        ("drift", "KEYWORD_ONLY", "'strict'"),
        ("step_timeout", "KEYWORD_ONLY", "10.0"),
        ("keep_failed", "KEYWORD_ONLY", "False"),
        ("sandbox", "KEYWORD_ONLY", "'recorded'"),
        ("redact", "KEYWORD_ONLY", "RedactOptions(custom=(), enabled=True, provider_key=None)"),
        ("live_mcp", "KEYWORD_ONLY", "False"),  # added (issue 30), keyword-only with a default
        ("cache", "KEYWORD_ONLY", "'fail'"),  # added (issue 43), keyword-only with a default
        ("recorded", "KEYWORD_ONLY", "None"),  # added (issue 40), keyword-only with a default
    ]
    assert "default_agent_factory" in shown[2][2]
    assert inspect.signature(run_scenario).return_annotation == "ScenarioResult"
