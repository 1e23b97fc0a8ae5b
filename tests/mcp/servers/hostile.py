"""A hostile MCP stdio server for the tests: raw JSON-RPC (no SDK), one tool ``echo``.

``python hostile.py [--spew MB] [--spew-during MB] [--answer HOW]``:

- ``--spew MB``: MB megabytes of lines that are not JSON-RPC on stdout before it reads a byte;
- ``--spew-during MB``: as many more from a thread while it serves (junk between the answers);
- ``--answer HOW``: how it answers each ``tools/call`` — ``ok`` (``echo: TEXT``), ``broken``
  (a JSON text cut off in the middle), ``wrong-id`` (a well-formed answer whose id no request
  had), ``non-object`` (``"result": "echo: TEXT"``), ``log`` (a JSON log line without an id,
  then the right answer). The call's ``how`` argument, when given, overrides it for that call;
  ``later`` holds the call's right answer back until the next call has been answered.
  Each call's text is appended to ``$HOSTILE_CALLS`` when set (how a test knows it arrived).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

LOCK = threading.Lock()
OUT = sys.stdout.buffer
JUNK = b"this line is not JSON-RPC \x1b[31m" + b"x" * 980 + b"\n"  # about 1 KB, an escape in it


def write(data: bytes) -> None:
    with LOCK:
        OUT.write(data)
        OUT.flush()


def send(message: dict[str, Any]) -> None:
    write(json.dumps(message).encode() + b"\n")


def spew(megabytes: float) -> None:
    for _ in range(int(megabytes * 1024 * 1024) // len(JUNK)):
        try:
            write(JUNK)
        except (BrokenPipeError, ValueError):
            return


def answer(how: str, rid: int, text: str) -> None:
    ok = {"content": [{"type": "text", "text": f"echo: {text}"}], "isError": False}
    if how == "broken":
        write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": ok}).encode()[:40] + b"\n")
    elif how == "wrong-id":
        send({"jsonrpc": "2.0", "id": rid + 1000, "result": ok})
    elif how == "non-object":
        send({"jsonrpc": "2.0", "id": rid, "result": f"echo: {text}"})
    elif how == "log":
        send({"level": "info", "msg": "calling echo"})
        send({"jsonrpc": "2.0", "id": rid, "result": ok})
    else:
        send({"jsonrpc": "2.0", "id": rid, "result": ok})


TOOL = {
    "name": "echo",
    "description": "Echo a text.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}, "how": {"type": "string"}},
        "required": ["text"],
    },
}


def main(argv: list[str]) -> None:
    options = dict(zip(argv[::2], argv[1::2], strict=True))
    spew(float(options.get("--spew", 0)))
    during = float(options.get("--spew-during", 0))
    if during:
        threading.Thread(target=spew, args=(during,), daemon=True).start()
    default = options.get("--answer", "ok")
    held: list[tuple[int, str]] = []
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"}}})  # fmt: skip
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [TOOL]}})
        elif method == "tools/call":
            arguments = message["params"].get("arguments") or {}
            how, text = arguments.get("how", default), str(arguments.get("text", ""))
            if calls := os.environ.get("HOSTILE_CALLS"):
                with open(calls, "a", encoding="utf-8") as f:
                    f.write(text + "\n")
            if how == "later":
                held.append((rid, text))
                continue
            answer(how, rid, text)
            while held:
                answer("ok", *held.pop(0))
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "result": {}})


if __name__ == "__main__":
    main(sys.argv[1:])
