"""``dsh acp`` without a key starts and asks for one (issue 35, item 14), over real stdio with
the SDK's client: ``initialize`` advertises env-var ``authMethods``, sessions and prompts
answer ACP's ``auth_required`` (-32000), the process stays up. With a key (here a local
server, which needs none) ``authMethods`` is ``[]`` as the original says, and a blank prompt
is an error result (item 12)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from acp.exceptions import RequestError
from acp.helpers import text_block
from acp.interfaces import Client
from acp.schema import EnvVarAuthMethod
from acp.stdio import spawn_agent_process

from dsh.testing.server import OpenAICompatServer
from dsh.testing.wire import stream_reply
from tests.acp.test_sdk_client import Recorder, initialize
from tests.acp.wire import SERVER, SHUTDOWN, server_args, server_env


@pytest.mark.parametrize("profile", ["full", "dsh-compat"])
async def test_without_a_key_the_server_starts_and_answers_auth_required(
    profile: str, tmp_path: Path
) -> None:
    store = tmp_path / "store" / "sessions.db"
    cwd = tmp_path / "work"
    cwd.mkdir()
    args = server_args(replay=None, store=f"sqlite:{store}", profile=profile)
    async with spawn_agent_process(
        cast(Client, Recorder()), *SERVER, *args, env=server_env(), transport_kwargs=SHUTDOWN
    ) as (
        conn,
        proc,
    ):
        init = await initialize(conn)
        methods = init.auth_methods or []
        assert methods and all(isinstance(m, EnvVarAuthMethod) and m.type == "env_var" for m in methods)
        named = {v.name for m in methods for v in cast(EnvVarAuthMethod, m).vars}
        assert {"DEEPSEEK_API_KEY", "DSH_API_KEY", "DSH_BASE_URL"} <= named

        with pytest.raises(RequestError) as refused:
            await conn.new_session(cwd=str(cwd), mcp_servers=[])
        assert refused.value.code == -32000
        assert "DEEPSEEK_API_KEY" in str(refused.value.data)
        with pytest.raises(RequestError) as prompt:
            await conn.prompt(session_id="anything", prompt=[text_block("hi")])
        assert prompt.value.code == -32000
        with pytest.raises(RequestError) as still:  # the environment is read again: still no key
            await conn.authenticate(method_id=methods[0].id)
        assert still.value.code == -32000
        with pytest.raises(RequestError) as unknown:
            await conn.authenticate(method_id="password")
        assert unknown.value.code == -32602
        assert proc.returncode is None, "the agent process must stay up for the editor"
    assert not store.exists(), "no session was created"


async def test_with_a_key_auth_methods_is_empty_and_a_blank_prompt_is_an_error(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    with OpenAICompatServer(handler=lambda r: stream_reply(text="PONG")) as server:
        env = {**server_env(), "DSH_BASE_URL": server.base_url}
        async with spawn_agent_process(
            cast(Client, Recorder()), *SERVER, *server_args(replay=None, store=f"sqlite:{tmp_path / 's.db'}"),
            env=env, transport_kwargs=SHUTDOWN,
        ) as (conn, _proc):  # fmt: skip
            init = await initialize(conn)
            assert init.auth_methods == []
            await conn.authenticate(method_id="deepseek-api-key")  # a no-op with a key
            session_id = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
            for blank in ("", "   \n\t"):
                with pytest.raises(RequestError) as refused:
                    await conn.prompt(session_id=session_id, prompt=[text_block(blank)])
                assert refused.value.code == -32602 and "empty" in str(refused.value)
            assert server.requests == []
            reply = await conn.prompt(session_id=session_id, prompt=[text_block("ping")])
            assert reply.stop_reason == "end_turn"
