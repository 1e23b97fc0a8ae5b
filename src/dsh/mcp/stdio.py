"""A stdio server as the SDK's two streams, read by dsh's own reader of the server's stdout.

It replaces the SDK's ``stdio_client`` (same start and stop: its environment defaults, a new
session, stdin closed then 2 s then SIGTERM/SIGKILL of the process group) for what that
reader does with a hostile server: the SDK logs a traceback for every line that is not a
message and lets a malformed answer wait out the call's timeout. Here each line is judged
(:mod:`dsh.mcp.stdout`), bad ones are counted in a few notice lines
(:mod:`dsh.mcp.complaints`), a bad answer fails its waiting request at once
(:mod:`dsh.mcp.answers`), and a line is at most 64 MiB (memory stays bounded).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import PROCESS_TERMINATION_TIMEOUT, get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from dsh.mcp.answers import Answers
from dsh.mcp.complaints import Complaints
from dsh.mcp.stdout import Lines

ReadStream = MemoryObjectReceiveStream[SessionMessage | Exception]
ReadSink = MemoryObjectSendStream[SessionMessage | Exception]
WriteStream = MemoryObjectSendStream[SessionMessage]
WriteSource = MemoryObjectReceiveStream[SessionMessage]
_GONE = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)


async def _read(process: Process, sink: ReadSink, answers: Answers) -> None:
    assert process.stdout is not None
    lines = Lines()
    async with sink:
        with contextlib.suppress(*_GONE):
            while True:
                for line in lines.feed(await process.stdout.receive()):
                    for message in answers.received(line):
                        await sink.send(message)


async def _write(process: Process, source: WriteSource, answers: Answers) -> None:
    assert process.stdin is not None
    async with source:
        with contextlib.suppress(*_GONE):
            async for message in source:
                answers.sent(message.message)
                text = message.message.model_dump_json(by_alias=True, exclude_none=True)
                await process.stdin.send(text.encode("utf-8") + b"\n")


async def _stop(process: Process) -> None:
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    try:
        with anyio.fail_after(PROCESS_TERMINATION_TIMEOUT):
            await process.wait()
    except TimeoutError:
        await terminate_posix_process_tree(process)
    except ProcessLookupError:
        pass


@asynccontextmanager
async def stdio_streams(
    argv: list[str], env: dict[str, str], cwd: Path, errlog: IO[str], complaints: Complaints
) -> AsyncIterator[tuple[ReadStream, WriteStream]]:
    """Start ``argv`` (its stderr to ``errlog``) and yield the streams a ``ClientSession`` takes."""
    read_sink, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_source = anyio.create_memory_object_stream[SessionMessage](0)
    streams = (read_sink, read_stream, write_stream, write_source)
    try:
        process = await anyio.open_process(
            argv, env={**get_default_environment(), **env}, stderr=errlog, cwd=cwd, start_new_session=True
        )
    except OSError:
        for stream in streams:
            await stream.aclose()
        raise
    answers = Answers(complaints)
    try:
        async with anyio.create_task_group() as group, process:
            group.start_soon(_read, process, read_sink, answers)
            group.start_soon(_write, process, write_source, answers)
            try:
                yield read_stream, write_stream
            finally:
                await _stop(process)
                for stream in streams:
                    await stream.aclose()
    finally:
        complaints.flush()
