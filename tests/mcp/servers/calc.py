"""A FastMCP stdio (or Streamable HTTP) server for the tests: add, fail, crash, hang, huge, image, structured.

Each call of ``add`` appends a line to ``$CALC_CALLS`` when set (how tests count calls); each
start of the server appends its pid to ``$CALC_STARTS`` when set (how tests see it was not started).
``python calc.py`` serves stdio; ``python calc.py http|sse PORT`` Streamable HTTP or SSE on 127.0.0.1.
"""

from __future__ import annotations

import base64
import os
import sys
import time

from mcp.server.fastmcp import FastMCP, Image

server = FastMCP("calc", host="127.0.0.1", port=int(sys.argv[2]) if len(sys.argv) > 2 else 8000)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    calls = os.environ.get("CALC_CALLS")
    if calls:
        with open(calls, "a", encoding="utf-8") as f:
            f.write(f"{a}+{b}\n")
    return a + b


@server.tool()
def secret(name: str) -> str:
    """The value of an environment variable of the server (empty when unset)."""
    return os.environ.get(name, "")


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def touch(path: str) -> str:
    """Write a file (how the sandbox tests see where the server may write)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("x")
    return "written"


@server.tool()
def fail(why: str) -> str:
    """Raise an error (an isError result)."""
    raise ValueError(why)


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    print("calc: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never answer (well, not for a minute)."""
    time.sleep(60)
    return "late"


@server.tool()
def huge(n: int) -> str:
    """A long text of n lines."""
    return "\n".join(f"line {i} of a huge result" for i in range(n))


@server.tool()
def picture() -> Image:
    """A 1x1 PNG."""
    return Image(data=PNG, format="png")


@server.tool(structured_output=True)
def stats(values: list[float]) -> dict[str, float]:
    """Count and sum of values (structured content)."""
    return {"count": float(len(values)), "sum": float(sum(values))}


if __name__ == "__main__":
    starts = os.environ.get("CALC_STARTS")
    if starts:
        with open(starts, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    server.run({"http": "streamable-http", "sse": "sse"}.get(transport, "stdio"))  # type: ignore[arg-type]
