"""Run the viewer: bind uvicorn to a local address, print the URL, optionally open a browser."""

from __future__ import annotations

import asyncio
import socket
import webbrowser
from collections.abc import Callable, Sequence

import uvicorn

from dsh.hosts import HostPolicy
from dsh.store.url import open_store
from dsh.ui.app import create_app
from dsh.ui.protocol import head_timeout_protocol, quiet_loop_errors

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (port 0 picks a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def serve(
    store_url: str | None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    open_browser: bool = False,
    label: str = "",
    report_html: str | None = None,
    echo: Callable[[str], None] = print,
    allow_hosts: Sequence[str] = (),
    header_timeout: float = 30.0,
) -> None:
    """Serve the viewer over ``store_url`` until interrupted (Ctrl-C).

    Only requests whose ``Host`` names a loopback address, the bound ``host`` or one of
    ``allow_hosts`` (and that carry no foreign ``Origin``) are answered (:mod:`dsh.hosts`); a
    request head must arrive within ``header_timeout`` seconds (:mod:`dsh.ui.protocol`).
    A store that does not exist is refused here, before listening (``StoreNotFoundError``).
    """
    hosts = HostPolicy(allow_hosts, bound=host)
    opened = open_store(store_url, create=False)
    sock = bind(host, port)
    url = url_of(sock)
    app = create_app(lambda: opened, label=label, report_html=report_html, hosts=hosts)
    config = uvicorn.Config(
        app,
        http=head_timeout_protocol(header_timeout),
        log_level="warning",
        timeout_graceful_shutdown=1,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    echo(f"dsh ui: serving {label} at {url} (read-only; Ctrl-C stops)")
    if open_browser:
        webbrowser.open(url)

    async def main() -> None:
        quiet_loop_errors(asyncio.get_running_loop())
        await server.serve(sockets=[sock])

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
