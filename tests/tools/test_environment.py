"""tool_environment: the one rule for what a tool's child process inherits."""

from __future__ import annotations

from dsh.tools.environment import secret_names, tool_environment

PARENT = {
    "PATH": "/usr/bin",
    "HOME": "/home/u",
    "DEEPSEEK_API_KEY": "k1",
    "DSH_API_KEY": "k2",
    "OPENAI_API_KEY": "k3",
    "ANTHROPIC_API_KEY": "k4",
    "github_api_key": "k5",
    "GITHUB_TOKEN": "t1",
    "AWS_SECRET_ACCESS_KEY": "s1",
    "DSH_SECRET_ENV": "AWS_SECRET_ACCESS_KEY, NOT_SET",
    "DSH_STORE": "postgresql://dsh:hunter2@db/dsh",
    "DATABASE_URL": "postgresql://db/dsh",
    "TERM": "xterm-256color",
}


def test_secrets_are_removed_and_the_tool_variables_added() -> None:
    env = tool_environment("sid-1", PARENT)
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "GITHUB_TOKEN": "t1",
        "DSH_SECRET_ENV": "AWS_SECRET_ACCESS_KEY, NOT_SET",
        "DATABASE_URL": "postgresql://db/dsh",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "DSH_SHELL": "1",
        "DSH_SESSION_ID": "sid-1",
    }
    assert PARENT["DEEPSEEK_API_KEY"] == "k1", "the parent mapping is not changed"


def test_secret_names_without_a_setting() -> None:
    assert secret_names({"OPENAI_API_KEY": "x", "GITHUB_TOKEN": "y", "URL": "https://u:p@h/"}) == {
        "OPENAI_API_KEY",
        "URL",
    }
